"""Inputs and answers of the impersonation operations: inputs camelCase on the wire, answers
snake_case."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import Input
from contentplatform.kit.text import PlainMultiLine

Mode = Literal["read_only", "read_write"]
REASON_MIN, REASON_MAX = 20, 500
DURATION_MIN, DURATION_MAX, DURATION_DEFAULT = 5, 60, 30


class StartImpersonationInput(Input):
    tenant_id: uuid.UUID = Field(description="The tenant to act in (admin.listTenants).")
    user_id: uuid.UUID | None = Field(
        None,
        description="The member to act as (our user id, as team.listMembers names members). "
        "Left out: a synthetic member made for the session, read-only.",
    )
    reason: PlainMultiLine = Field(
        min_length=REASON_MIN,
        max_length=REASON_MAX,
        description="Why, for the tenant's admins and the activity trail: at least 20 "
        "characters of text (markup is removed first).",
        examples=["Customer reports drafts missing after the import of 3 May (ticket #42)."],
    )
    ticket_id: uuid.UUID | None = Field(
        None,
        description="The tenant's support ticket the session answers; required for `read_write`.",
    )
    mode: Mode = Field(
        "read_only",
        description="`read_only` (default): only operations declared GET. `read_write`: as "
        "the member, bound to a ticket of the tenant.",
    )
    duration_minutes: int = Field(
        DURATION_DEFAULT,
        ge=DURATION_MIN,
        le=DURATION_MAX,
        description="How long the session lasts, 5 to 60 minutes; there is no refresh.",
    )


class ImpersonationIdInput(Input):
    id: uuid.UUID = Field(description="The session's id (admin.startImpersonation's `id`).")


class StartedImpersonation(BaseModel):
    id: uuid.UUID = Field(description="The session's id: end it with admin.endImpersonation.")
    token: str = Field(
        description="The bearer token of the session, shown this once: send it with the "
        "tenant's organization in x-idp-org-id, as the member would."
    )
    mode: Mode
    expires_at: datetime = Field(description="When the session and its token stop working.")


class EndedImpersonation(BaseModel):
    id: uuid.UUID
    ended_at: datetime = Field(
        description="When the session ended (by this call, an earlier one, or its expiry)."
    )
