"""Named groups of configured judges, read once at start-up: panels (PANELS_FILE) and cascades (CASCADES_FILE).

Both files are a JSON list of ``{"name": ..., "judges": [...]}`` objects. A panel's members are judged together and
their verdicts combined (``service.scoring.panels``); a cascade's judges are stages called in order until one can
accept (``service.scoring.cascades``). Every name in either file must be a judge of JUDGES_FILE (checked when the
judge pool starts), so a misconfigured deployment fails at start-up, not on the first request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from calibration.input_kinds.mean_panel import panel_name

__all__ = [
    "CascadeConfigError",
    "PanelConfigError",
    "check_cascade_stages",
    "check_panel_members",
    "load_cascades",
    "load_panels",
]


class PanelConfigError(ValueError):
    """PANELS_FILE cannot be used; the message names the file and the problem."""


class CascadeConfigError(ValueError):
    """CASCADES_FILE cannot be used; the message names the file and the problem."""


def _read_groups(path: Path, variable: str, kind: str, error: type[ValueError]) -> list[tuple[str, list[str], str]]:
    """The file's entries as (name, judges, where) after the checks both files share; ``error`` on any problem."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as reason:
        raise error(f"{variable} {path}: cannot read a JSON list ({reason})") from None
    if not isinstance(raw, list):
        raise error(f"{variable} {path}: expected a JSON list of {{name, judges}} objects")
    entries: list[tuple[str, list[str], str]] = []
    seen: set[str] = set()
    for position, item in enumerate(raw):
        where = f"{variable} {path}, entry {position}"
        if not isinstance(item, dict) or set(item) != {"name", "judges"}:
            raise error(f"{where}: expected exactly the keys name and judges")
        name, judges = item["name"], item["judges"]
        if (
            not isinstance(name, str)
            or not name
            or not isinstance(judges, list)
            or not all(isinstance(j, str) and j for j in judges)
        ):
            raise error(f"{where}: name must be a non-empty string and judges a list of judge names")
        if name in seen:
            raise error(f"{where}: {kind} {name!r} is defined twice")
        seen.add(name)
        entries.append((name, judges, where))
    return entries


def load_panels(path: Path | None) -> dict[str, tuple[str, ...]]:
    """Named panels of PANELS_FILE: name -> members in file order; {} when unset; PanelConfigError otherwise."""
    if path is None:
        return {}
    panels: dict[str, tuple[str, ...]] = {}
    for name, judges, where in _read_groups(path, "PANELS_FILE", "panel", PanelConfigError):
        if len(set(judges)) != len(judges):
            raise PanelConfigError(f"{where}: panel {name!r} lists a judge twice")
        try:
            panel_name(judges)
        except ValueError as error:
            raise PanelConfigError(f"{where}: {error}") from None
        panels[name] = tuple(judges)
    return panels


def load_cascades(path: Path | None) -> dict[str, tuple[str, ...]]:
    """Named cascades of CASCADES_FILE: name -> judge stages in order; {} when unset; CascadeConfigError otherwise."""
    if path is None:
        return {}
    cascades: dict[str, tuple[str, ...]] = {}
    for name, judges, where in _read_groups(path, "CASCADES_FILE", "cascade", CascadeConfigError):
        if len(judges) < 2 or len(set(judges)) != len(judges):
            raise CascadeConfigError(f"{where}: cascade {name!r} needs at least two distinct judges, in order")
        cascades[name] = tuple(judges)
    return cascades


def _check_members(
    groups: Mapping[str, Sequence[str]], configured: Sequence[str], variable: str, kind: str, error: type[ValueError]
) -> None:
    for name, members in groups.items():
        missing = [m for m in members if m not in configured]
        if missing:
            raise error(
                f"{variable}: {kind} {name!r} names judges not in JUDGES_FILE: "
                f"{', '.join(missing)} (configured: {', '.join(configured) or 'none'})"
            )


def check_panel_members(panels: Mapping[str, Sequence[str]], configured: Sequence[str]) -> None:
    """Every panel member must be a configured judge (start-up check); PanelConfigError names the missing."""
    _check_members(panels, configured, "PANELS_FILE", "panel", PanelConfigError)


def check_cascade_stages(cascades: Mapping[str, Sequence[str]], configured: Sequence[str]) -> None:
    """Every stage must be a configured judge (start-up check); CascadeConfigError names the missing."""
    _check_members(cascades, configured, "CASCADES_FILE", "cascade", CascadeConfigError)
