from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from contentplatform.drafts.schemas import Draft
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import JsonObject, MultiLine, Name

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


class ListTargetsInput(Input):
    id: uuid.UUID
    refresh: bool = Field(
        False, description="Read the target now, not the answer kept for up to 5 minutes."
    )


# A week: long enough for any receiver to deploy its new secret.
MAX_SECRET_OVERLAP = 604_800


class RotateConnectionSecretInput(Input):
    id: uuid.UUID
    expire_current_in_seconds: int = Field(
        86_400,
        ge=0,
        le=MAX_SECRET_OVERLAP,
        description="How long deliveries are still signed with the current secret too (two `v1,` "
        "signatures in `webhook-signature`); 0 retires it at once.",
    )


class UnpublishDraftInput(Input):
    id: uuid.UUID
    publisher_connection_id: uuid.UUID | None = Field(
        None,
        description="Default: every connection the draft is live or scheduled on.",
    )


MAX_ARCHIVE_REASON = 500


class ArchiveDraftInput(Input):
    id: uuid.UUID
    reason: MultiLine | None = Field(None, max_length=MAX_ARCHIVE_REASON)
    unpublish_remote: bool = Field(
        False,
        description="Also take it down from every connection it is live on (as drafts.unpublish "
        "does, after the archive commits). Without it the copies on the targets stay.",
    )

    @field_validator("reason")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return value.strip()


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
    account_label: str | None
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


class Unpublished(BaseModel):
    draft: Draft
    attempts: list[Attempt] = Field(
        description="Per connection: the unpublish attempt started (pending), and any scheduled "
        "publish it cancelled."
    )


class RotatedConnectionSecret(BaseModel):
    signing_secret: str = Field(description="The new `whsec_` signing secret, shown this once.")
    previous_secret_expires_at: datetime = Field(
        description="Until then deliveries are signed with the previous secret too."
    )


# --- what a connection can publish into (publishers.listTargets) -------------------------------


class TermOption(BaseModel):
    """A WordPress category, tag or author (user): the ids the config's `categories`, `tags`
    and `authorId` take."""

    id: int
    name: str


class GhostOption(BaseModel):
    """A Ghost tag or staff user."""

    id: str
    name: str


class ShopifyBlog(BaseModel):
    """A blog of the shop: its id is what `blogId` takes."""

    id: str
    handle: str
    title: str


class CollectionField(BaseModel):
    """A field of a Webflow collection: its slug is what `fieldMapping` names."""

    slug: str
    type: str
    required: bool


class WebflowCollection(BaseModel):
    id: str
    name: str
    fields: list[CollectionField]


class WordPressTargets(BaseModel):
    type: Literal["wordpress"]
    categories: list[TermOption] = Field(examples=[[{"id": 4, "name": "Gardening"}]])
    tags: list[TermOption] = Field(examples=[[{"id": 9, "name": "Roses"}]])
    authors: list[TermOption] = Field(examples=[[{"id": 1, "name": "Ada Editor"}]])
    fetched_at: datetime


class GhostTargets(BaseModel):
    type: Literal["ghost"]
    tags: list[GhostOption] = Field(
        examples=[[{"id": "6650a1b2c3d4e5f6a7b8c9d1", "name": "Gardening"}]]
    )
    authors: list[GhostOption] = Field(
        examples=[[{"id": "6650a1b2c3d4e5f6a7b8c9d2", "name": "Ada Editor"}]]
    )
    fetched_at: datetime


class ShopifyTargets(BaseModel):
    type: Literal["shopify"]
    blogs: list[ShopifyBlog]
    fetched_at: datetime


class WebflowTargets(BaseModel):
    type: Literal["webflow"]
    collections: list[WebflowCollection]
    fetched_at: datetime


class WebhookTargets(BaseModel):
    """A webhook has nothing to choose from on its side."""

    type: Literal["webhook"]
    fetched_at: datetime


Targets = Annotated[
    WordPressTargets | GhostTargets | ShopifyTargets | WebflowTargets | WebhookTargets,
    Field(discriminator="type"),
]
