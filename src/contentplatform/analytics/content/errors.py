"""What content analytics refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound, ServiceUnavailable


class SourceNotFound(RecordNotFound):
    """There is no such analytics source in this organization."""

    record = "analytics source"


class SourceExists(Conflict):
    """The provider's property is already connected in this organization (disconnect it
    first)."""


class SyncRunning(Conflict):
    """A sync of this source is already running: wait for it to end."""


class SourceNotConnected(Conflict):
    """The source is disconnected, or still waiting for its OAuth consent (pending_auth)."""


class SourceRefused(BadRequest):
    """The credentials or the property are missing, do not fit the provider, or the provider
    refused them when checked (the detail has its words); or the OAuth state or code is
    refused."""


class ProviderNotConfigured(BadRequest):
    """GA4 cannot be connected on this deployment (no Google OAuth client, or the redirect URI
    is not one of SEO_OAUTH_REDIRECT_URIS); or the webhook source, which has no contract."""


class ProviderUnavailable(ServiceUnavailable):
    """The provider could not be reached while checking the source: nothing was saved; try
    again later (`retryable`)."""
