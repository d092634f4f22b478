"""What the publishers domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound, ServiceUnavailable


class ConnectionNotFound(RecordNotFound):
    """There is no such publisher connection in this organization."""

    record = "publisher connection"


class PublisherDisabled(Conflict):
    """The publisher connection is disabled: it publishes nothing until enabled."""


class AttemptUnderWay(Conflict):
    """An attempt to publish this draft to that connection is still under way."""


class PublishedAsDraft(Conflict):
    """A published draft cannot be sent to a target as an unpublished draft."""


class NoConnectionChosen(BadRequest):
    """No connection was named, the draft's job has none and the organization has no default."""


class BadScheduledAt(BadRequest):
    """scheduledAt is missing or not a future instant with a time zone (mode schedule), or given
    with another mode."""


class ConnectionConfigRefused(BadRequest):
    """The config or credentials do not fit the connection's type, or a URL in it is not a
    public https address."""


class NothingToUnpublish(Conflict):
    """The draft is neither live nor scheduled on that connection (or, with none named, on any
    connection): there is nothing to take down."""


class NotAWebhook(BadRequest):
    """Only webhook connections have a signing secret to rotate."""


class TargetRefused(Conflict):
    """The target refused the read: it refused the stored credentials (the connection is then
    marked `error`), or has not got what the config names, or its address is no longer
    allowed; the detail has the target's words."""


class TargetUnavailable(ServiceUnavailable):
    """The target could not be reached, failed or asked us to slow down: nothing was read; try
    again later (`retryable`)."""
