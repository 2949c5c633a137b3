"""Which tracing an app gets: none without OTEL_EXPORTER_OTLP_ENDPOINT, else OpenTelemetry's (the ``otel`` extra).

Without the endpoint OpenTelemetry is never imported (start-up cost; the packages are optional). With it and
without the packages, start-up fails with a SettingsError that names the extra.
"""

from __future__ import annotations

from service.config.errors import SettingsError
from service.config.settings import Settings
from service.observability.tracing import Tracing

__all__ = ["OTEL_EXTRA_HELP", "make_tracing"]

OTEL_EXTRA_HELP = (
    "OTEL_EXPORTER_OTLP_ENDPOINT is set, so the service exports traces, but the OpenTelemetry packages are not "
    "installed: install the service with its otel extra (pip install 'conformal-judge[otel]'), or unset "
    "OTEL_EXPORTER_OTLP_ENDPOINT"
)


def make_tracing(settings: Settings) -> Tracing:
    """No-op tracing without OTEL_EXPORTER_OTLP_ENDPOINT; else OpenTelemetry's (SettingsError without the extra)."""
    endpoint = settings.otel_exporter_otlp_endpoint
    if endpoint is None:
        return Tracing()
    try:
        # Imported here, not at the top: without the endpoint the service never loads OpenTelemetry (start-up cost,
        # and the packages are an optional extra).
        from service.observability import otel
    except ImportError as error:
        raise SettingsError(f"{OTEL_EXTRA_HELP} ({error})") from error
    return otel.OtelTracing(endpoint=endpoint, service_name=settings.otel_service_name)
