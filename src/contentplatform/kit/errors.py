"""One error base class; one renderer to application/problem+json (RFC 9457).

Services raise these; handlers never build error responses themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")
PROBLEM_JSON = "application/problem+json"


@dataclass
class FieldError:
    path: str
    message: str


class PlatformError(Exception):
    """The base of every error: a subclass's docstring says when it happens (the OpenAPI
    document lists the named ones under their status)."""

    code: ClassVar[str] = "INTERNAL_SERVER_ERROR"
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal server error"

    def __init_subclass__(
        cls, *, code: str = "", status: int = 0, title: str = "", **kwargs: Any
    ) -> None:
        """A problem code of its own: `class NotFound(PlatformError, code=..., status=...)`."""
        super().__init_subclass__(**kwargs)
        cls.code = code or cls.code
        cls.status = status or cls.status
        cls.title = title or cls.title

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
            "request_id": request_id,
            **self.extensions,
        }
        if self.errors is not None:
            body["errors"] = [{"path": e.path, "message": e.message} for e in self.errors]
        return body


class BadRequest(PlatformError, code="BAD_REQUEST", status=400, title="Bad request"):
    """The input is invalid: the fields that fail are listed in `errors`."""


class Unauthorized(PlatformError, code="UNAUTHORIZED", status=401, title="Unauthorized"):
    """No token, or one that is not valid."""

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="contentplatform"'})


class PaymentRequired(PlatformError, code="PAYMENT_REQUIRED", status=402, title="Payment required"):
    """Not enough credits."""


class Forbidden(PlatformError, code="FORBIDDEN", status=403, title="Forbidden"):
    """The caller's role or membership does not allow it."""


class MethodNotAllowed(PlatformError, code="BAD_REQUEST", status=405, title="Method not allowed"):
    """405: the reference has no code of its own for it; the client sent a bad request."""

    def __init__(self, detail: str | None = None, *, allow: list[str]) -> None:
        super().__init__(detail, headers={"Allow": ", ".join(allow)})


class PayloadTooLarge(PlatformError, code="BAD_REQUEST", status=413, title="Payload too large"):
    """413: the body is larger than the limit the detail names (the reference has no code of
    its own for it; the client sent a bad request)."""


class NotFound(PlatformError, code="NOT_FOUND", status=404, title="Not found"):
    """Absent, or another organization's."""


class RecordNotFound(NotFound):
    """A record of one kind by its key: absent, deleted, or another organization's."""

    record: ClassVar[str] = "record"

    def __init__(self, key: object) -> None:
        super().__init__(f"There is no {self.record} {key}.")


class Gone(PlatformError, code="NOT_FOUND", status=410, title="Gone"):
    """410: the record is there but what was asked of it was removed for good (by retention);
    the code stays NOT_FOUND (the reference has none of its own)."""


def require(found: T | None, missing: type[RecordNotFound], key: object) -> T:
    """`found`, or `missing(key)` raised when there is nothing."""
    if found is None:
        raise missing(key)
    return found


class Conflict(PlatformError, code="CONFLICT", status=409, title="Conflict"):
    """The state of what it acts on forbids it."""


class TooManyRequests(
    PlatformError, code="TOO_MANY_REQUESTS", status=429, title="Too many requests"
):
    """Rate limited; Retry-After says when to try again."""

    def __init__(self, detail: str | None = None, *, retry_after: int) -> None:
        super().__init__(detail, headers={"Retry-After": str(max(retry_after, 1))})


class InternalError(PlatformError):
    """Our fault: logged with the request id; the body never carries a trace or SQL."""


class ServiceUnavailable(PlatformError, status=503, title="Service unavailable"):
    """A service the operation depends on (the identity provider) cannot be reached, failed or
    is not configured; nothing was changed. `retryable` says whether trying again may help.
    The code stays INTERNAL_SERVER_ERROR: the reference has none of its own for it."""


class Busy(ServiceUnavailable):
    """Every database connection of this process stayed in use for longer than a request waits
    for one (DATABASE_POOL_TIMEOUT_SECONDS), or it serves as many event streams as it may
    (MAX_OPEN_STREAMS): nothing was changed; try again after Retry-After."""

    def __init__(
        self,
        retry_after: int = 2,
        detail: str = "The service is busy: no database connection came free in time. Nothing "
        "was changed; try again shortly.",
    ) -> None:
        super().__init__(
            detail,
            headers={"Retry-After": str(retry_after)},
            extensions={"retryable": True},
        )


class Problem(BaseModel):
    """An error, as application/problem+json (RFC 9457)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "/problems/bad-request",
                    "title": "Bad request",
                    "status": 400,
                    "detail": "The input is invalid (title: Field required).",
                    "code": "BAD_REQUEST",
                    "request_id": "0f6c2b9e4d1a4c8b9e2f7a3d5c1b8e60",
                    "errors": [{"path": "title", "message": "Field required"}],
                }
            ]
        }
    )

    type: str
    title: str
    status: int
    detail: str
    code: str
    request_id: str | None
    errors: list[dict[str, str]] | None = None


def validation_failed(errors: Sequence[Any]) -> BadRequest:
    """Pydantic/FastAPI errors as a 400 listing each failing field by its wire name."""
    fields = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        if location and location[0] in {"body", "query", "path", "header"}:
            location = location[1:] or location[:1]
        message = str(error.get("msg", "is invalid"))
        if error.get("type") == "json_invalid":
            location, message = ["body"], "The request body is not valid JSON."
        fields.append(FieldError(path=".".join(location) or "body", message=message))
    summary = "; ".join(f"{f.path}: {f.message}" for f in fields[:3])
    return BadRequest(f"The input is invalid ({summary}).", errors=fields)


# The documented error responses of an operation, for OpenAPI.
ALL_ERRORS: tuple[type[PlatformError], ...] = (
    BadRequest,
    Unauthorized,
    PaymentRequired,
    Forbidden,
    NotFound,
    Conflict,
    Gone,
    TooManyRequests,
    InternalError,
    ServiceUnavailable,
)
