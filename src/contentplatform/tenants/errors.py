"""What the tenants domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Forbidden


class TenantSuspended(Forbidden):
    """The organization's tenant is suspended: nobody may act in it."""


class NotAMember(Forbidden):
    """The caller's token does not vouch for the organization and no stored membership does."""
