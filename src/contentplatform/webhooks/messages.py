"""What a delivery sends: an event as `{type, timestamp, data}`, signed per the Standard Webhooks
specification, and how the API document describes each subscribable type under `webhooks`
(`SENT_REQUESTS`).

The body is made once, when the event is fanned out to the endpoint, and stored with the
delivery: every attempt and redelivery sends the same bytes under the same `webhook-id`
(`msg_` and the event's id, so a receiver drops a duplicate, whichever endpoint of its own it
came through). Each attempt signs them afresh (`webhook-timestamp` is the attempt's), with
every secret that signs at the time: the endpoint's, and during a rotation's overlap the
replaced one's too, space-separated in `webhook-signature` (any one matching is enough).
"""

from __future__ import annotations

import base64
import json
import math
import secrets
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, create_model
from standardwebhooks.webhooks import Webhook as StandardWebhook

from contentplatform.core.sent_requests import SentRequest
from contentplatform.events import catalog
from contentplatform.kit.db import utc_text

SECRET_PREFIX = "whsec_"
# The spec's largest body a receiver must accept; an event's data is far smaller (ids, titles).
MAX_BODY_BYTES = 256 * 1024
TEST_TYPE = "webhook.test"
TEST_MESSAGE = "A test event from the Content Platform: you may ignore it."


def new_secret() -> str:
    """A fresh `whsec_` secret: 24 random bytes in base64, as Standard Webhooks libraries
    expect (the spec asks for 24 to 64)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def hint(secret: str) -> str:
    return secret[-4:]


def message_id(event_id: uuid.UUID) -> str:
    """The `webhook-id` of every delivery of an event."""
    return f"msg_{event_id.hex}"


def body(event_type: str, timestamp: datetime, data: dict[str, Any]) -> str:
    """The JSON body (ASCII, compact): what is signed and sent, byte for byte."""
    envelope = {"type": event_type, "timestamp": utc_text(timestamp), "data": data}
    return json.dumps(envelope, separators=(",", ":"))


def sample_data(event_type: str) -> dict[str, Any]:
    """What a test of `event_type` carries: no real resource. `webhook.test`'s is the same as a
    webhook publisher connection's test."""
    if event_type == TEST_TYPE:
        return {"message": TEST_MESSAGE}
    return {"message": TEST_MESSAGE, "sample": True}


def signed_headers(
    message_id: str, body: str, secrets: Sequence[str], now: datetime
) -> dict[str, str]:
    """The headers of one attempt: its id, its time in whole seconds, a signature per secret."""
    moment = datetime.fromtimestamp(math.floor(now.timestamp()), UTC)
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(math.floor(moment.timestamp())),
        "webhook-signature": " ".join(
            StandardWebhook(secret).sign(message_id, moment, body) for secret in secrets
        ),
    }


# --- the events in the API document ------------------------------------------------------------


class EventMessage(BaseModel):
    type: str = Field(description="The event type.")
    timestamp: datetime = Field(description="When the event happened (UTC).")
    data: dict[str, Any] = Field(
        description="What the event is about: ids, titles and statuses (never content or "
        "secrets), e.g. a draft's `draft_id`, `title`, `status`, `job_id`, and `from`/`to` "
        "for a move."
    )


HEADERS = {
    "webhook-id": (
        "The delivery's id (`msg_` and the event's id): the same on every attempt and "
        "redelivery of the event. Keep the ids you have taken and drop a repeat."
    ),
    "webhook-timestamp": (
        "When the attempt was signed, in whole seconds since 1970-01-01 UTC. Refuse one far "
        "from your clock (Standard Webhooks libraries allow 5 minutes): a replay."
    ),
    "webhook-signature": (
        "`v1,<signature>`: the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` "
        "(the raw body as sent), keyed with the endpoint's signing secret (the `whsec_...` "
        "value webhooks.createEndpoint and webhooks.rotateEndpointSecret answer once; the key "
        "is the base64 after `whsec_`). Several signatures are separated by spaces, one "
        "matching is enough: after a rotation the new and the replaced secret both sign until "
        "the replaced one expires. Any Standard Webhooks library verifies it: "
        "`Webhook(secret).verify(body, headers)`."
    ),
}
ANSWERS: dict[str, tuple[str, type[BaseModel] | None]] = {
    "200": (
        "Taken: any 2xx within 15 seconds. The answer's first 2 KB are kept in the delivery "
        "log (webhooks.listDeliveries).",
        None,
    ),
    "410": (
        "Gone: the endpoint is disabled at once (`disabled_reason` gone) and its admins told.",
        None,
    ),
    "4XX": (
        "Refused: not tried again (send it again with webhooks.redeliver once fixed); 408 and "
        "429 are tried again, after Retry-After when it says so. A redirect (3xx) is not "
        "followed and counts as refused.",
        None,
    ),
    "5XX": (
        "Failed: tried again on the retry schedule (at once, 5 s, 5 min, 30 min, 2 h, 5 h, "
        "10 h, 10 h by default, each with jitter; a longer Retry-After wins), as is a timeout "
        "or a dropped connection. An endpoint failing for a whole retry window is disabled "
        "(`disabled_reason` failing) and its admins told.",
        None,
    ),
}
SENT = (
    "POSTed as JSON to every enabled endpoint of the organization subscribed to this type "
    "(webhooks.createEndpoint), signed per the Standard Webhooks specification (see the "
    "headers). Delivered at least once: keep deliveries by `webhook-id`."
)


def _model_name(event_type: str) -> str:
    words = event_type.replace(".", "_").split("_")
    return "".join(word.capitalize() for word in words) + "Message"


def _documented(event_type: catalog.EventType) -> SentRequest:
    message = create_model(
        _model_name(event_type.name),
        __base__=EventMessage,
        __doc__=event_type.summary,
        type=(cast(Any, Literal)[event_type.name], Field(description="The event type.")),
    )
    return SentRequest(
        name=event_type.name,
        summary=event_type.summary.rstrip("."),
        description=SENT,
        tag="Webhooks",
        payload=message,
        headers=HEADERS,
        responses=ANSWERS,
    )


# Every subscribable type, under its own name (what an endpoint subscribes to).
SENT_REQUESTS: tuple[SentRequest, ...] = tuple(
    _documented(catalog.get(name)) for name in catalog.SUBSCRIBABLE
)
