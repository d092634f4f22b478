"""What impersonation refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, FieldError, Forbidden, RecordNotFound


class ImpersonationNotFound(RecordNotFound):
    """There is no impersonation session of that id."""

    record = "impersonation session"


class ImpersonationTenantNotFound(RecordNotFound):
    """There is no tenant of that id."""

    record = "tenant"


class ImpersonationTargetNotFound(RecordNotFound):
    """The user to act as is no active member of the tenant."""

    record = "member of this tenant"


class ImpersonationTicketNotFound(RecordNotFound):
    """The support ticket a read-write session must be bound to is not one of this tenant's."""

    record = "support ticket of this tenant"


class ImpersonationAlreadyOpen(Conflict):
    """The superadmin has an open impersonation session already: one at a time (end it with
    admin.endImpersonation)."""


class ImpersonationTenantSuspended(Conflict):
    """The tenant is suspended: nobody, an impersonation session included, acts in it."""


class CannotImpersonateSuperadmin(Forbidden):
    """The user to act as is a platform superadmin (or the caller): never impersonated."""


class ImpersonationInputInvalid(BadRequest):
    """The input breaks a guardrail a field alone cannot say (the `errors` name the fields): a
    read-write session needs `ticketId` and `userId`; the reason needs 20 characters of text."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message, errors=[FieldError(path=path, message=message)])
