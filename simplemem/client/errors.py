"""What the client raises: the service's own reason (its ``detail``), the status and, for a refusal
to retry later, when. A caller catches :class:`ServiceError` or the one case it handles."""

from __future__ import annotations


class ServiceError(Exception):
    """The service refused or failed a request (``status`` None: it was not reached)."""

    def __init__(
        self, status: int | None, reason: str, *, method: str, path: str, retry_after: float | None = None
    ) -> None:
        where = f"{method} {path}"
        super().__init__(f"{where}: {status} {reason}" if status else f"{where}: {reason}")
        self.status = status
        self.reason = reason
        self.method = method
        self.path = path
        self.retry_after = retry_after


class Unauthorized(ServiceError):
    """401: no key, or an unknown or revoked one."""


class Forbidden(ServiceError):
    """403: the key may not do this (another tenant's data, an admin route)."""


class NotFound(ServiceError):
    """404: no such memory, key or route."""


class Conflict(ServiceError):
    """409: the memory cannot be changed now (a message not decided yet)."""


class InvalidRequest(ServiceError):
    """413 or 422: a field is invalid or over a limit; ``reason`` names it."""


class RateLimited(ServiceError):
    """429: the tenant's quota is used up; ``retry_after`` says for how many seconds."""


class Unavailable(ServiceError):
    """503 or another 5xx, or the service could not be reached (``status`` None)."""


BY_STATUS: dict[int, type[ServiceError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
}


def error_for(
    status: int, reason: str, *, method: str, path: str, retry_after: float | None = None
) -> ServiceError:
    """The exception for an answer's status (5xx: :class:`Unavailable`)."""
    kind = BY_STATUS.get(status, Unavailable if status >= 500 else ServiceError)
    return kind(status, reason, method=method, path=path, retry_after=retry_after)
