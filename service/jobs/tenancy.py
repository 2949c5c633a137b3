"""Who owns a job: the tenant of a request is a one-way digest of its API key, stored with the jobs it creates.

======================== ======================================================================================
caller                   scope
======================== ======================================================================================
API_KEYS unset           everyone is one tenant (``""``): every caller sees every job, as before keys existed
a key of API_KEYS        its own jobs only (``sha256`` of a fixed label and the key); others' jobs are 404
ADMIN_API_KEY            every job (``scope`` None); the jobs it creates are the admin's tenant
======================== ======================================================================================

The key itself is never stored: the digest of a high-entropy key cannot be turned back into it, and it is
the same in every API process, so tenancy holds across processes and restarts.
"""

from __future__ import annotations

import hashlib
import hmac

import msgspec

from service.errors import UnauthorizedError

__all__ = ["JobCaller", "admin_tenant", "job_caller", "tenant_digest"]

_LABEL = b"conformal-judge/jobs-tenant\x00"  # keeps the digest from matching a plain sha256 of the key elsewhere


class JobCaller(msgspec.Struct, frozen=True, kw_only=True):
    """The tenant a request acts as and whether it may see every tenant's jobs."""

    tenant: str
    sees_all: bool = False

    @property
    def scope(self) -> str | None:
        """The tenant whose jobs this caller may read (None: all)."""
        return None if self.sees_all else self.tenant


def tenant_digest(key: str) -> str:
    """The tenant id of an API key: hex SHA-256 of a fixed label and the key (one-way)."""
    return hashlib.sha256(_LABEL + key.encode()).hexdigest()


def job_caller(api_keys: tuple[str, ...], admin_api_key: str | None, token: str | None) -> JobCaller:
    """The caller of a jobs request with bearer ``token`` (see the module table); 401 without a token when
    API_KEYS is set (the edge refuses such requests first; this keeps a job from landing in a shared tenant)."""
    if not api_keys:
        return JobCaller(tenant="")
    if token is None:
        raise UnauthorizedError("this service requires an API key: send 'Authorization: Bearer <key>'")
    is_admin = admin_api_key is not None and hmac.compare_digest(token.encode(), admin_api_key.encode())
    return JobCaller(tenant=tenant_digest(token), sees_all=is_admin)


def admin_tenant(api_keys: tuple[str, ...], admin_api_key: str | None) -> str | None:
    """The admin key's tenant when keys are on (its feedback and monitor alarms apply to every tenant), else None."""
    if not api_keys or not admin_api_key:
        return None
    return tenant_digest(admin_api_key)
