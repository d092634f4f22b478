"""What SEO connections refuse."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, NotFound, ServiceUnavailable


class ProviderNotConfigured(BadRequest):
    """The provider cannot be connected on this deployment: Search Console's OAuth client is not
    configured, `offline` was asked for outside the local environment, or the provider's
    verification is not available yet."""


class RedirectUriRefused(BadRequest):
    """The redirectUri is missing or not one of the deployment's allowed redirect URIs."""


class CredentialsRefused(BadRequest):
    """The credentials are missing, do not fit the provider, or the provider refused them when
    checked (the detail has the provider's words)."""


class StateRefused(BadRequest):
    """The OAuth state is unknown, expired (10 minutes), already used, was issued to another
    admin, or Google refused the code or its PKCE verifier (the detail says which)."""


class StateOfAnotherTenant(NotFound):
    """The OAuth state was issued to another organization."""


class NotConnected(Conflict):
    """The provider is not connected (or needs to be authorized again) in this organization."""


class PropertyRefused(BadRequest):
    """The property is not among the connection's available properties, or its permission is
    siteUnverifiedUser."""


class SearchConsoleNotConnected(Conflict):
    """Search Console is not connected, needs to be authorized again (needs_reauth), or no
    property is selected: connect it (seo.connect) or choose a property
    (seo.updateConnection)."""


class ProviderUnavailable(ServiceUnavailable):
    """The provider could not be reached or failed while checking the connection: nothing was
    changed; try again later (`retryable`)."""
