"""What the settings domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    RecordNotFound,
    Unauthorized,
)


class RuleNotFound(RecordNotFound):
    """There is no such content rule in this organization."""

    record = "content rule"


class TooManyRules(Forbidden):
    """The organization has as many content rules as it may (the detail names the limit)."""


class StaleVersion(Conflict):
    """`expectedVersion` is not the current version: someone changed it meanwhile; read it
    again and reapply the change."""


class UnknownReference(BadRequest):
    """An id the settings name is not one of this organization's (a document, a publisher
    connection, a member); `errors` names each field."""


class InvalidRuleConfig(BadRequest):
    """The rule's config does not fit its type (a regex that does not compile, a missing or
    unknown field); `errors` names each field."""


class ApiKeyNotFound(RecordNotFound):
    """There is no such API key in this organization."""

    record = "API key"


class ApiKeysDisabled(Forbidden):
    """The organization turned API keys off (`security.apiKeysEnabled`): none is made, and
    none is accepted, until an admin turns them on again."""


class InvalidApiKey(Unauthorized):
    """The API key is unknown, revoked or expired (the detail says which)."""


class TooManyApiKeys(Forbidden):
    """The organization has as many live API keys as it may (the detail names the limit)."""
