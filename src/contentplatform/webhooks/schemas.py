"""Inputs and answers of the webhooks operations: inputs camelCase on the wire, endpoints and
deliveries as the catalog names their fields (snake_case, as every record)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator

from contentplatform.events import catalog
from contentplatform.kit.schemas import MAX_PAGE, Input, Listing, Page, Record
from contentplatform.kit.text import Identifier, PlainText
from contentplatform.webhooks.models import WebhookDelivery

if TYPE_CHECKING:
    EventTypeName = str
else:
    # The subscribable types of the event catalog, listed in the document (an enum).
    EventTypeName = Literal[catalog.SUBSCRIBABLE]

DisabledReason = Literal["manual", "failing", "gone"]
DeliveryStatus = Literal["pending", "succeeded", "failed", "exhausted", "cancelled"]

MAX_EVENTS = 50
MAX_ROTATION_OVERLAP = 7 * 24 * 3600
URL_DESCRIPTION = (
    "Where deliveries are POSTed: an https URL (at most 2048 characters, no credentials in it) "
    "whose host resolves to public addresses only; checked when it is stored and at each "
    "attempt. Redirects are not followed."
)
EVENTS_DESCRIPTION = (
    "The event types to deliver (1-50, each once), from the subscribable types of the event "
    "catalog; each is described under Webhooks in this document."
)


def _each_once(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


# --- inputs -----------------------------------------------------------------------------------


class CreateEndpointInput(Input):
    url: Identifier = Field(min_length=1, max_length=2048, description=URL_DESCRIPTION)
    events: list[EventTypeName] = Field(
        min_length=1, max_length=MAX_EVENTS, description=EVENTS_DESCRIPTION
    )
    description: PlainText | None = Field(None, max_length=200)
    enabled: bool = True

    _once = field_validator("events")(_each_once)


class EndpointIdInput(Input):
    id: uuid.UUID


class UpdateEndpointInput(Input):
    id: uuid.UUID
    url: Identifier | None = Field(
        None, min_length=1, max_length=2048, description="A new URL is checked again."
    )
    events: list[EventTypeName] | None = Field(
        None, min_length=1, max_length=MAX_EVENTS, description=EVENTS_DESCRIPTION
    )
    description: PlainText | None = Field(None, max_length=200, description="null clears it.")
    enabled: bool | None = Field(
        None,
        description="false disables it (`disabled_reason` manual); true enables it again, "
        "clearing `disabled_reason` and the failure streak (`failing_since`).",
    )

    _once = field_validator("events")(_each_once)


class RotateSecretInput(Input):
    id: uuid.UUID
    expire_current_in_seconds: int = Field(
        86_400,
        ge=0,
        le=MAX_ROTATION_OVERLAP,
        description="How long the current secret keeps signing beside the new one (0: it "
        "stops at once).",
    )


class TestEndpointInput(Input):
    id: uuid.UUID
    event_type: EventTypeName = Field(
        "webhook.test",
        description="The type of the sample event; any but `webhook.test` carries sample data "
        "(`{message, sample: true}`), not a real resource.",
    )


class ListDeliveriesInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)
    status: DeliveryStatus | None = None
    event_type: Identifier | None = Field(None, max_length=60, examples=["draft.created"])
    start_date: datetime | None = Field(None, description="Created at or after.")
    end_date: datetime | None = Field(None, description="Created before.")


class DeliveryIdInput(Input):
    id: uuid.UUID


# --- outputs ----------------------------------------------------------------------------------


class LastDelivery(BaseModel):
    status: Literal["succeeded", "failed"] = Field(description="Of its last attempt.")
    at: datetime


class WebhookEndpoint(Record):
    id: uuid.UUID
    url: str
    description: str | None
    events: list[str]
    enabled: bool
    disabled_reason: DisabledReason | None = Field(
        description="manual (an admin), failing (failing for a whole retry window), gone (it "
        "answered 410); null while enabled."
    )
    secret_hint: str = Field(description="The signing secret's last 4 characters.")
    previous_secret_expires_at: datetime | None = Field(
        validation_alias=AliasChoices("previous_secret_until", "previous_secret_expires_at"),
        description="Until when the secret replaced by the last rotation still signs beside "
        "the current one (null: no overlap now).",
    )
    last_delivery: LastDelivery | None = Field(description="Its last delivery attempt.")
    failing_since: datetime | None = Field(
        description="Its first failed attempt since its last success (null while it works)."
    )
    created_at: datetime
    updated_at: datetime


class CreatedEndpoint(WebhookEndpoint):
    secret: str = Field(
        description="The `whsec_...` signing secret, shown this once (verify deliveries with "
        "it: see Webhooks).",
        examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    )


class EndpointStats(BaseModel):
    succeeded: int = Field(description="Attempts answered 2xx in the last 24 hours.")
    failed: int = Field(description="Attempts that failed in the last 24 hours.")
    p50_latency_ms: int | None = Field(description="Their median latency (null: none).")


class EndpointWithStats(WebhookEndpoint):
    stats_24h: EndpointStats


class EndpointList(Listing[WebhookEndpoint]):
    pass


class RotatedSecret(BaseModel):
    secret: str = Field(
        description="The new `whsec_...` signing secret, shown this once.",
        examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    )
    previous_secret_expires_at: datetime | None = Field(
        description="Until when the replaced secret signs too (null: it stopped at once)."
    )


class DeliveryAttempt(Record):
    n: int = Field(description="1 for the first attempt, counting redeliveries' too.")
    at: datetime
    response_status: int | None = Field(description="null: no answer (timeout, refused).")
    latency_ms: int
    error: str | None = Field(description="Why it failed (null when it succeeded).")
    response_excerpt: str | None = Field(description="The answer's first 2 KB.")


class Delivery(BaseModel):
    id: uuid.UUID
    event_id: uuid.UUID
    event_type: str
    endpoint_id: uuid.UUID
    webhook_id: str = Field(
        description="The `webhook-id` header: the same on every attempt and redelivery."
    )
    test: bool = Field(description="Sent by webhooks.testEndpoint.")
    status: DeliveryStatus = Field(
        description="pending (an attempt is due or under way), succeeded, failed (ended "
        "without retrying), exhausted (every attempt failed), cancelled (its endpoint was "
        "disabled first)."
    )
    error: str | None = Field(description="Why it ended, when no attempt says it.")
    attempts: list[DeliveryAttempt]
    next_attempt_at: datetime | None
    request_body: str = Field(description="The JSON body as sent (its first 64 KB).")
    response_excerpt: str | None = Field(description="The last answer's first 2 KB.")
    created_at: datetime


class DeliveryPage(Page[Delivery]):
    pass


def delivery_of(row: WebhookDelivery, attempts: Sequence[object]) -> Delivery:
    """A stored delivery and its attempts, as the API shows them."""
    return Delivery(
        id=row.id,
        event_id=row.event_id,
        event_type=row.event_type,
        endpoint_id=row.endpoint_id,
        webhook_id=row.message_id,
        test=row.test,
        status=row.status,
        error=row.error,
        attempts=[DeliveryAttempt.model_validate(attempt) for attempt in attempts],
        next_attempt_at=row.next_attempt_at,
        request_body=row.request_body[:MAX_SHOWN_BODY],
        response_excerpt=row.response_excerpt,
        created_at=row.created_at,
    )


# How much of a request body a delivery shows.
MAX_SHOWN_BODY = 64 * 1024
