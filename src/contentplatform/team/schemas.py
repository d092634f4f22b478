"""Inputs and records of team.* and the identity-event receiver."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier
from contentplatform.tenants.schemas import TeamMember

RoleName = Literal["member", "editor", "admin"]
InvitationStatus = Literal["pending", "accepted", "revoked", "expired"]
# An address as the provider takes it: something@somewhere.tld, no spaces (the provider checks
# deliverability; this keeps obvious typos from a round trip).
EMAIL = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"

Member = TeamMember


class MemberPage(Page[Member]):
    pass


class ListMembersInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(50, ge=1, le=100)
    search: str | None = Field(None, max_length=255, description="In names and emails.")
    role: RoleName | None = None


class MemberIdInput(Input):
    user_id: uuid.UUID = Field(description="The member's user id (`user_id`).")


class UpdateRoleInput(Input):
    user_id: uuid.UUID = Field(description="The member's user id (`user_id`).")
    role: RoleName


class Invitation(Record):
    id: uuid.UUID
    idp_invitation_id: str
    email: str
    role: str
    status: InvitationStatus
    invited_by: uuid.UUID | None
    created_at: datetime
    expires_at: datetime | None


class InvitationPage(Page[Invitation]):
    pass


class ListInvitationsInput(Input):
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: InvitationStatus | None = None


class InviteInput(Input):
    email_address: Identifier = Field(max_length=320, pattern=EMAIL, examples=["grace@example.com"])
    role: RoleName = "member"
    redirect_url: Identifier | None = Field(
        None,
        max_length=2048,
        description="Where the invitation's link lands after sign-up: an https URL on an "
        "allowed origin (CONTENTPLATFORM_TEAM_REDIRECT_ORIGINS).",
    )


class InvitationIdInput(Input):
    id: uuid.UUID


class SyncResult(BaseModel):
    members_added: int
    members_updated: int
    members_removed: int
    invitations_updated: int
    synced_at: datetime


# --- identity events ----------------------------------------------------------------------------


def _signature_header(name: str, description: str) -> Any:
    return Field(None, alias=name, description=description, json_schema_extra={"in": "header"})


class IdentityEventInput(Input):
    """The signature headers; the body is read raw (verified before it is parsed)."""

    svix_id: Identifier | None = _signature_header("svix-id", "The event's id.")
    svix_timestamp: Identifier | None = _signature_header(
        "svix-timestamp", "When it was sent (unix seconds)."
    )
    svix_signature: Identifier | None = _signature_header(
        "svix-signature", "Space-separated `v1,<base64>` signatures."
    )
    webhook_id: Identifier | None = _signature_header("webhook-id", "As svix-id.")
    webhook_timestamp: Identifier | None = _signature_header(
        "webhook-timestamp", "As svix-timestamp."
    )
    webhook_signature: Identifier | None = _signature_header(
        "webhook-signature", "As svix-signature."
    )


class EventReceipt(BaseModel):
    received: bool
    duplicate: bool
