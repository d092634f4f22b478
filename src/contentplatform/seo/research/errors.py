"""What keyword research refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, ServiceUnavailable


class ResearchKeyUsed(Conflict):
    """The idempotencyKey was already spent on a research whose answer is no longer kept (or
    on another request): send a new key to research again."""


class KeywordProviderFailed(ServiceUnavailable):
    """Every request to the keyword provider (DataForSEO Labs) failed: nothing was charged;
    the detail carries the provider's words. Try again later."""
