from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: Literal["ok"]


class ServiceVersion(BaseModel):
    """The build and API version of the service (its own name: drafts have versions too)."""

    version: str
    api_version: str
    commit: str
    build_time: str | None
    environment: str


class WhoAmIUser(BaseModel):
    id: uuid.UUID
    idp_user_id: str
    email: str | None
    name: str | None = Field(examples=["Ada Lovelace"])


class WhoAmIOrganization(BaseModel):
    idp_org_id: str
    name: str = Field(examples=["Acme Gardens"])


class WhoAmI(BaseModel):
    user: WhoAmIUser
    organization: WhoAmIOrganization
    tenant_id: uuid.UUID
    role: Literal["member", "editor", "admin"]
    superadmin: bool
    auth: Literal["jwt", "api_key", "impersonation"]
    impersonated_by: str | None


ComponentName = Literal[
    "api",
    "database",
    "workers",
    "search",
    "storage",
    "llm",
    "identity_provider",
    "payments",
    "mail",
]
Level = Literal["operational", "degraded", "outage"]


class ComponentStatus(BaseModel):
    name: ComponentName
    status: Level
    # When the signal behind `status` was seen (a real call's outcome, the queue's age, this
    # answer's own database read); null when the component has not been used yet.
    checked_at: datetime | None


class SystemStatus(BaseModel):
    """The service's health as a status page shows it: no host, version or error text."""

    status: Level = Field(examples=["operational"])
    components: list[ComponentStatus]
    updated_at: datetime
