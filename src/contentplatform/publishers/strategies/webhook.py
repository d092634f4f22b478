"""The webhook target: a publishing target that POSTs the article to a user's URL as a JSON event,
signed per the Standard Webhooks spec (`WebhookTarget`, connection type `webhook`; the module
is named for that type, as every strategy's is). Not the outbound webhook endpoints of the
`webhooks` domain, which subscribe to events.

Every event is `POST`ed to the connection's URL as `{"type", "timestamp", "data"}` with the
`webhook-id`, `webhook-timestamp` and `webhook-signature` headers the spec defines, signed with
the connection's `whsec_` secret by the `standardwebhooks` package, so a receiver verifies it
with any Standard Webhooks library (`Webhook(secret).verify(body, headers)`).

Event types: `article.published` (first publish), `article.updated` (a republish),
`article.drafted` (either, in draft mode), `article.unpublished`, and `webhook.test` from a
connection test.

The `webhook-id` is the receiver's key for dropping duplicates, so it names the delivery's
intent, not the try: the same publish retried after a timeout carries the same id, and the
receiver can tell it already has it. The id is derived from the event type, the draft and its
version, and the version marker of the previous delivery (`Remote.remote_version`, which is
the previous delivery's id): a later republish of the same version after an unpublish is a new
intent and gets a new id, where `msg_{draft}_{version}_{type}` alone would repeat an old one.

In `data`, `html` is the sanitized article; `title`, `excerpt`, `seo_title`,
`meta_description` and `tags` are plain text (no markup, entities decoded): a receiver that puts
them in a page escapes them as it would any text.

Rotation (publishers.rotateSecret): until the replaced secret's overlap ends, every delivery is
signed with both secrets, `webhook-signature` holding two space-separated `v1,` signatures (the
new secret's first), so a receiver verifies with either while it switches; Standard Webhooks
libraries accept a header when any one of its signatures matches.

A webhook has no remote options to list: `targets()` reads nothing.

The receiver may answer `{"id", "url"}` to name its copy; otherwise the draft's id is the
external id and there is no URL. 410 Gone (or 404) is RemoteNotFound; other statuses are mapped
as for any target.

Each body is built from its model below (`ArticleEvent`, `UnpublishedEvent`, `TestEvent`), and
the same models describe the events in the API document's `webhooks` section
(`SENT_REQUESTS`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import secrets
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from standardwebhooks.webhooks import Webhook as StandardWebhook

from contentplatform.core.sent_requests import SentRequest
from contentplatform.core.tags import PUBLISHING_WEBHOOKS
from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    EVERY_CAPABILITY,
    Article,
    Mode,
    Picture,
    Remote,
    RemoteOptions,
    RemoteStatus,
    Result,
    Strategy,
    TargetConfig,
    TestResult,
    parse_url,
    unpublished,
    with_inline_images,
)

TARGET = "The webhook"
SECRET_PREFIX = "whsec_"


def new_signing_secret() -> str:
    """A fresh `whsec_` secret: 32 random bytes in base64, as Standard Webhooks libraries
    expect (the spec asks for 24 to 64)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookTargetConfig(TargetConfig):
    url: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return str(parse_url(value))

    def urls(self) -> list[str]:
        return [self.url]


ArticleKind = Literal["article.published", "article.updated", "article.drafted"]


class ImageCredit(BaseModel):
    text: str = Field(description='The attribution to show, e.g. "Photo by Ana on Unsplash".')
    author_name: str | None
    author_url: str | None
    source_name: str | None
    source_url: str | None


class FeaturedImage(BaseModel):
    """The article's featured image. With `hotlink_required` the receiver must show it from
    `url`, the stock provider's, and never copy the file; otherwise `url` is a signed URL of
    ours, valid for an hour from the delivery: copy the file."""

    url: str
    alt: str
    caption: str | None = Field(description="Plain text, the attribution included.")
    mime_type: str
    sha256: str | None = Field(
        description="The hex SHA-256 of the file at `url` (null when hotlinked): a receiver "
        "that holds a file with this hash already need not copy it again."
    )
    hotlink_required: bool
    credit: ImageCredit | None = Field(description="The attribution its licence requires.")


class ArticleEventData(BaseModel):
    """The article as it goes out: `html` sanitized, the other texts plain (no markup)."""

    draft_id: uuid.UUID
    version: int
    title: str
    slug: str
    html: str
    excerpt: str | None
    seo_title: str | None
    meta_description: str | None
    tags: list[str]
    canonical_url: str | None
    featured_image: FeaturedImage | None = None
    inline_images: list[FeaturedImage] = Field(
        default_factory=list,
        description="The images of the body, in order, each also a figure in `html` at `url` "
        "(a signed URL valid for an hour: copy the file and rewrite the src; a hotlinked one "
        "stays as it is).",
    )
    external_id: str = Field(
        description="The receiver's id of its copy: the one it answered before, else the draft's."
    )


class ArticleEvent(BaseModel):
    """An article published (`article.published`), published again (`article.updated`) or put
    on the target unpublished (`article.drafted`)."""

    type: ArticleKind
    timestamp: datetime
    data: ArticleEventData


class UnpublishedEventData(BaseModel):
    external_id: str = Field(description="The receiver's id of the copy to take down.")


class UnpublishedEvent(BaseModel):
    """An article taken down (`article.unpublished`)."""

    type: Literal["article.unpublished"]
    timestamp: datetime
    data: UnpublishedEventData


TEST_MESSAGE = "A test event from the Content Platform: you may ignore it."


class TestEventData(BaseModel):
    message: str = Field(examples=[TEST_MESSAGE])


class TestEvent(BaseModel):
    """A connection test (`webhook.test`): nothing to keep."""

    type: Literal["webhook.test"]
    timestamp: datetime
    data: TestEventData


Event = ArticleEvent | UnpublishedEvent | TestEvent


class WebhookAnswer(BaseModel):
    """What a receiver may answer to name its copy (optional: any 2xx is accepted)."""

    model_config = ConfigDict(extra="allow")

    id: str | int | None = Field(
        None, description="Its id of the copy: the external id.", examples=["post-77"]
    )
    url: str | None = Field(None, description="Where the copy is published.")


# Nothing to keep secret but the signing secret, which the connection holds itself.
class WebhookTarget(Strategy[WebhookTargetConfig, None], type="webhook"):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.signing_secret:
            raise ValueError("a webhook connection needs its signing secret")
        # The current secret's signature first, then the replaced one's while it lasts.
        current = (self.signing_secret, self.previous_signing_secret)
        self.signers = [StandardWebhook(secret) for secret in current if secret]

    async def test_connection(self) -> TestResult:
        """ok when the receiver accepts a signed `webhook.test` event with a 2xx; any other
        answer raises (the service reports it as a failed test)."""
        data = TestEventData(message=TEST_MESSAGE)
        event = TestEvent(type="webhook.test", timestamp=datetime.now(UTC), data=data)
        # A test is never a duplicate of an earlier one: a fresh id each time.
        await self._send(event, f"msg_test_{uuid.uuid4().hex}")
        host = parse_url(self.config.url).host
        return TestResult(ok=True, account_label=host, capabilities=EVERY_CAPABILITY)

    async def publish(self, article: Article, mode: Mode) -> Result:
        kind: ArticleKind = "article.published" if mode == "publish" else "article.drafted"
        message_id = _message_id(kind, str(article.draft_id), str(article.version), "")
        event = _article_event(kind, article, str(article.draft_id))
        answer = await self._send(event, message_id, creates=True)
        return _result(answer, message_id, mode, str(article.draft_id), None)

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        kind: ArticleKind = "article.updated" if mode == "publish" else "article.drafted"
        message_id = _message_id(
            kind, str(article.draft_id), str(article.version), remote.remote_version or ""
        )
        answer = await self._send(_article_event(kind, article, remote.external_id), message_id)
        return _result(answer, message_id, mode, remote.external_id, remote.external_url)

    async def targets(self) -> RemoteOptions:
        return RemoteOptions()

    async def unpublish(self, remote: Remote) -> Result:
        message_id = _message_id(
            "article.unpublished", remote.external_id, remote.remote_version or ""
        )
        data = UnpublishedEventData(external_id=remote.external_id)
        event = UnpublishedEvent(type="article.unpublished", timestamp=datetime.now(UTC), data=data)
        await self._send(event, message_id)
        return unpublished(remote.external_id, message_id)

    async def _send(
        self, event: Event, message_id: str, *, creates: bool = False
    ) -> dict[str, Any]:
        """Deliver one signed event; the receiver's JSON answer ({} when it sent none)."""
        now = event.timestamp
        body = json.dumps(event.model_dump(mode="json"), separators=(",", ":"))
        headers = {
            "content-type": "application/json",
            "webhook-id": message_id,
            "webhook-timestamp": str(math.floor(now.timestamp())),
            "webhook-signature": " ".join(
                signer.sign(message_id, now, body) for signer in self.signers
            ),
        }
        response = await http.call(
            self.client,
            "POST",
            self.config.url,
            target=TARGET,
            headers=headers,
            content=body.encode(),
            creates=creates,
        )
        try:
            answer = response.json()
        except ValueError:
            return {}  # an answer that is not JSON names nothing; the delivery still counts
        return answer if isinstance(answer, dict) else {}


def _message_id(*intent: str) -> str:
    return "msg_" + hashlib.sha256("\x1f".join(intent).encode()).hexdigest()[:32]


def _article_event(kind: ArticleKind, article: Article, external_id: str) -> ArticleEvent:
    data = ArticleEventData(
        draft_id=article.draft_id,
        version=article.version,
        title=article.title,
        slug=article.slug,
        html=with_inline_images(
            article.html, [picture.figure() for picture in article.inline_images]
        ),
        excerpt=article.excerpt,
        seo_title=article.seo_title,
        meta_description=article.meta_description,
        tags=list(article.tags),
        canonical_url=article.canonical_url,
        featured_image=_featured(article.featured_image),
        inline_images=[image for picture in article.inline_images if (image := _featured(picture))],
        external_id=external_id,
    )
    return ArticleEvent(type=kind, timestamp=datetime.now(UTC), data=data)


def _featured(picture: Picture | None) -> FeaturedImage | None:
    if picture is None:
        return None
    credit = picture.credit
    return FeaturedImage(
        url=picture.url,
        alt=picture.alt,
        caption=picture.caption_text(),
        mime_type=picture.mime_type,
        sha256=None if picture.hotlinked else picture.content_hash,
        hotlink_required=picture.hotlinked,
        credit=ImageCredit(**asdict(credit)) if credit is not None else None,
    )


def _result(
    answer: dict[str, Any],
    message_id: str,
    mode: Mode,
    external_id: str,
    external_url: str | None,
) -> Result:
    named_id = answer.get("id")
    if isinstance(named_id, str | int) and named_id:
        external_id = str(named_id)
    if isinstance(answer.get("url"), str):
        external_url = answer["url"]
    status: RemoteStatus = "published" if mode == "publish" else "draft"
    return Result(
        external_id=external_id,
        # A draft is not public: whatever address it will have is not one to show yet.
        external_url=external_url if mode == "publish" else None,
        # The delivery's id: the next event's id is derived from it (see the module docstring).
        remote_version=message_id,
        status=status,
        published_at=datetime.now(UTC) if mode == "publish" else None,
    )


# --- the events in the API document ------------------------------------------------------------

HEADERS = {
    "webhook-id": (
        "The delivery's id (`msg_...`), the same on every try of one delivery: a receiver that "
        "keeps the ids it has taken drops duplicates."
    ),
    "webhook-timestamp": (
        "When the delivery was signed, in whole seconds since 1970-01-01 UTC. Refuse one far "
        "from your clock (Standard Webhooks libraries allow 5 minutes): a replay."
    ),
    "webhook-signature": (
        "`v1,<signature>`: the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` "
        "(the raw body as sent), keyed with the connection's signing secret (the `whsec_...` "
        "value `publishers.create` answers once; the key is the base64 after `whsec_`). "
        "Several signatures are separated by spaces; one that matches is enough: after "
        "`publishers.rotateSecret` the new and the previous secret both sign until the "
        "previous one expires. Any Standard "
        "Webhooks library verifies it: `Webhook(secret).verify(body, headers)`."
    ),
}
ANSWERS: dict[str, tuple[str, type[BaseModel] | None]] = {
    "200": (
        "Taken (any 2xx). The receiver may answer `{id, url}` to name its copy: the id becomes "
        "the draft's external id (sent again in later events), the url its published address.",
        WebhookAnswer,
    ),
    "4XX": (
        "Refused, not tried again: 401 and 403 say the receiver does not accept this sender, "
        "404 and 410 that the copy is gone, 409 and 412 a conflict; 408 and 429 are tried again "
        "later (after Retry-After when it says so).",
        None,
    ),
    "5XX": (
        "Failed: tried again with backoff (after Retry-After when it says so). Keep deliveries "
        "by `webhook-id`: a try whose answer was lost comes again with the same id.",
        None,
    ),
}
SENT = (
    "POSTed as JSON to the URL of each webhook connection (`publishers.create` with type "
    "`webhook`), signed per the Standard Webhooks specification (see the headers)."
)


# The document names these `publisher.<type>`, apart from the events endpoints subscribe to
# (`webhooks` holds both kinds): the body's `type` is the bare one (`article.published`).
DOCUMENT_PREFIX = "publisher."


def _declared(name: str, summary: str, payload: type[BaseModel]) -> SentRequest:
    return SentRequest(
        name=DOCUMENT_PREFIX + name,
        summary=summary,
        description=SENT,
        tag=PUBLISHING_WEBHOOKS,
        payload=payload,
        headers=HEADERS,
        responses=ANSWERS,
    )


SENT_REQUESTS = (
    _declared("article.published", "An article was published", ArticleEvent),
    _declared("article.updated", "A published article was published again", ArticleEvent),
    _declared("article.drafted", "An article was put on the target unpublished", ArticleEvent),
    _declared("article.unpublished", "An article was taken down", UnpublishedEvent),
    _declared("webhook.test", "A connection test", TestEvent),
)
