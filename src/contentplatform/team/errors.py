"""What the team domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound, ServiceUnavailable


class MemberNotFound(RecordNotFound):
    """There is no such member of this organization."""

    record = "member"


class InvitationNotFound(RecordNotFound):
    """There is no such invitation of this organization."""

    record = "invitation"


class LastAdmin(Conflict):
    """The change would leave the organization without an active admin."""


class AlreadyMember(Conflict):
    """Someone with that email address is a member of the organization already."""


class AlreadyInvited(Conflict):
    """A pending invitation for that email address exists already."""


class NotPending(Conflict):
    """The invitation is no longer pending (accepted, revoked or expired)."""


class RedirectNotAllowed(BadRequest):
    """The redirect URL is not an https URL on an allowed origin."""


class ProviderUnavailable(ServiceUnavailable):
    """The identity provider could not be reached, failed, or is not configured (503;
    `retryable` says whether trying again may help); nothing was changed."""


class ProviderRefused(BadRequest):
    """The identity provider refused the request as invalid; nothing was changed."""


class EventRefused(BadRequest):
    """An identity event whose signature, timestamp or body does not hold; nothing was stored."""


class WebhookNotConfigured(ServiceUnavailable):
    """No identity-event signing secret is configured (503: the provider retries later)."""
