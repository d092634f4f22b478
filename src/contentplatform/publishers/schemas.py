from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import JsonObject, Name

ConnectionType = Literal["wordpress", "ghost", "shopify", "webflow", "webhook"]
ConnectionStatus = Literal["active", "error", "disabled"]
AttemptMode = Literal["publish", "draft", "schedule", "unpublish"]
AttemptStatus = Literal["scheduled", "pending", "running", "succeeded", "failed", "cancelled"]
TriggeredBy = Literal["user", "auto_publish", "schedule"]

MAX_CONFIG_BYTES = 20_000


# --- inputs -----------------------------------------------------------------------------------


def _bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value)) > MAX_CONFIG_BYTES:
        raise ValueError(f"must be at most {MAX_CONFIG_BYTES} bytes of JSON")
    return value


class ListConnectionsInput(Input):
    type: ConnectionType | None = None
    status: ConnectionStatus | None = None


class ConnectionIdInput(Input):
    id: uuid.UUID


class CreateConnectionInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    type: ConnectionType
    config: JsonObject = Field(
        description="Per type: wordpress {siteUrl, categories?, authorId?}; ghost {adminUrl}; "
        "shopify {storeUrl, blogId, author?}; webflow {collectionId, fieldMapping, siteId?, "
        "apiBaseUrl?}; webhook {url}. Every URL passes the outbound guard before it is stored."
    )
    credentials: JsonObject | None = Field(
        None,
        description="Per type: wordpress {username, applicationPassword}; ghost {adminApiKey "
        "(id:secret)}; shopify {accessToken}; webflow {apiToken}; none for webhook. Stored "
        "encrypted, never returned.",
    )
    is_default: bool = False

    _size = field_validator("config", "credentials")(_bounded)


class UpdateConnectionInput(Input):
    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)
    config: JsonObject | None = Field(None, description="Replaces the config.")
    credentials: JsonObject | None = Field(None, description="Replaces the credentials.")
    is_default: bool | None = None
    status: Literal["active", "disabled"] | None = None

    _size = field_validator("config", "credentials")(_bounded)


class ListAttemptsInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: AttemptStatus | None = None


class PublishDraftInput(Input):
    id: uuid.UUID
    publisher_connection_id: uuid.UUID | None = Field(
        None,
        description="Default: the draft's job's connection, else the tenant's default connection.",
    )
    mode: Literal["publish", "draft", "schedule"] = Field(
        "publish",
        description="publish: live now; draft: onto the target as an unpublished draft; "
        "schedule: published at `scheduledAt`.",
    )
    scheduled_at: datetime | None = Field(
        None, description="Required for schedule: a future instant with a time zone."
    )
    force: bool = Field(
        False,
        description="Send the draft even when the target already has this version (e.g. its "
        "copy was deleted or changed there). Without it, such a request sends nothing and "
        "answers with the attempt that put this version there (or is putting it there now).",
    )


class DraftAttemptsInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


# --- outputs ----------------------------------------------------------------------------------


class Connection(Record):
    id: uuid.UUID
    name: str
    type: ConnectionType
    config: dict[str, Any]
    credentials_hint: str | None
    status: ConnectionStatus
    is_default: bool
    capabilities: list[str]
    last_tested_at: datetime | None
    last_test_ok: bool | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime


class CreatedConnection(Connection):
    signing_secret: str | None = Field(
        None, description="Webhook connections only: the whsec_ signing secret, shown this once."
    )


class ConnectionPage(Listing[Connection]):
    pass


class TestOutcome(BaseModel):
    ok: bool
    accountLabel: str | None
    capabilities: list[str]
    warnings: list[str]


class AttemptError(BaseModel):
    code: str
    message: str
    retryable: bool


class Attempt(Record):
    id: uuid.UUID
    draft_id: uuid.UUID
    publisher_connection_id: uuid.UUID = Field(validation_alias="connection_id")
    mode: AttemptMode
    status: AttemptStatus
    tries: int
    draft_version: int
    external_id: str | None
    external_url: str | None
    error: AttemptError | None
    triggered_by: TriggeredBy
    triggered_by_id: str | None
    scheduled_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime


class AttemptPage(Page[Attempt]):
    pass


class DraftAttemptPage(Listing[Attempt]):
    pass


class Published(BaseModel):
    draft: Draft
    attempt: Attempt
