"""One error base class; one renderer to application/problem+json (RFC 9457).

Services raise these; handlers never build error responses themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

PROBLEM_JSON = "application/problem+json"


@dataclass
class FieldError:
    path: str
    message: str


class PlatformError(Exception):
    code: ClassVar[str] = "INTERNAL_SERVER_ERROR"
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal server error"

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
        status: int | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        self.detail = detail or self.title
        self.extensions = extensions or {}
        self.errors = errors
        self.headers = headers or {}
        self.status_override = status
        super().__init__(self.detail)

    @property
    def http_status(self) -> int:
        return self.status_override or self.status

    def problem(self, request_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": f"/problems/{self.code.lower().replace('_', '-')}",
            "title": self.title,
            "status": self.http_status,
            "detail": self.detail,
            "code": self.code,
            "requestId": request_id,
            **self.extensions,
        }
        if self.errors is not None:
            body["errors"] = [{"path": e.path, "message": e.message} for e in self.errors]
        return body


class BadRequest(PlatformError):
    code = "BAD_REQUEST"
    status = 400
    title = "Bad request"


class Unauthorized(PlatformError):
    code = "UNAUTHORIZED"
    status = 401
    title = "Unauthorized"

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="contentplatform"'})


class PaymentRequired(PlatformError):
    code = "PAYMENT_REQUIRED"
    status = 402
    title = "Payment required"


class Forbidden(PlatformError):
    code = "FORBIDDEN"
    status = 403
    title = "Forbidden"


class MethodNotAllowed(PlatformError):
    """405: the reference has no code of its own for it; the client sent a bad request."""

    code = "BAD_REQUEST"
    status = 405
    title = "Method not allowed"

    def __init__(self, detail: str | None = None, *, allow: list[str]) -> None:
        super().__init__(detail, headers={"Allow": ", ".join(allow)})


class NotFound(PlatformError):
    code = "NOT_FOUND"
    status = 404
    title = "Not found"


class Conflict(PlatformError):
    code = "CONFLICT"
    status = 409
    title = "Conflict"


class TooManyRequests(PlatformError):
    code = "TOO_MANY_REQUESTS"
    status = 429
    title = "Too many requests"

    def __init__(self, detail: str | None = None, *, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(retry_after, 1))})


class InternalError(PlatformError):
    pass


# The documented error responses of an operation, for OpenAPI.
ALL_ERRORS: tuple[type[PlatformError], ...] = (
    BadRequest,
    Unauthorized,
    PaymentRequired,
    Forbidden,
    NotFound,
    Conflict,
    TooManyRequests,
    InternalError,
)
