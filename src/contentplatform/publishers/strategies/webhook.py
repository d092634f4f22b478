"""A generic webhook: the article as a JSON event, signed per the Standard Webhooks spec.

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

The receiver may answer `{"id", "url"}` to name its copy; otherwise the draft's id is the
external id and there is no URL. 410 Gone (or 404) is RemoteNotFound; other statuses are mapped
as for any target.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import field_validator
from standardwebhooks.webhooks import Webhook as StandardWebhook

from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    EVERY_CAPABILITY,
    Article,
    Mode,
    Remote,
    RemoteStatus,
    Result,
    Strategy,
    TargetConfig,
    TestResult,
    parse_url,
    unpublished,
)

TARGET = "The webhook"
SECRET_PREFIX = "whsec_"


def new_signing_secret() -> str:
    """A fresh `whsec_` secret: 32 random bytes in base64, as Standard Webhooks libraries
    expect (the spec asks for 24 to 64)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookConfig(TargetConfig):
    url: str

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return str(parse_url(value))

    def urls(self) -> list[str]:
        return [self.url]


# Nothing to keep secret but the signing secret, which the connection holds itself.
class Webhook(Strategy[WebhookConfig, None], type="webhook"):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.signing_secret:
            raise ValueError("a webhook connection needs its signing secret")
        self.signer = StandardWebhook(self.signing_secret)

    async def test_connection(self) -> TestResult:
        """ok when the receiver accepts a signed `webhook.test` event with a 2xx; any other
        answer raises (the service reports it as a failed test)."""
        data = {"message": "A test event from the Content Platform: you may ignore it."}
        # A test is never a duplicate of an earlier one: a fresh id each time.
        await self._send("webhook.test", f"msg_test_{uuid.uuid4().hex}", data)
        host = parse_url(self.config.url).host
        return TestResult(ok=True, account_label=host, capabilities=EVERY_CAPABILITY)

    async def publish(self, article: Article, mode: Mode) -> Result:
        event = "article.published" if mode == "publish" else "article.drafted"
        message_id = _message_id(event, str(article.draft_id), str(article.version), "")
        answer = await self._send(
            event, message_id, _article_data(article, str(article.draft_id)), creates=True
        )
        return _result(answer, message_id, mode, str(article.draft_id), None)

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        event = "article.updated" if mode == "publish" else "article.drafted"
        message_id = _message_id(
            event, str(article.draft_id), str(article.version), remote.remote_version or ""
        )
        answer = await self._send(event, message_id, _article_data(article, remote.external_id))
        return _result(answer, message_id, mode, remote.external_id, remote.external_url)

    async def unpublish(self, remote: Remote) -> Result:
        event = "article.unpublished"
        message_id = _message_id(event, remote.external_id, remote.remote_version or "")
        await self._send(event, message_id, {"external_id": remote.external_id})
        return unpublished(remote.external_id, message_id)

    async def _send(
        self, event: str, message_id: str, data: dict[str, Any], *, creates: bool = False
    ) -> dict[str, Any]:
        """Deliver one signed event; the receiver's JSON answer ({} when it sent none)."""
        now = datetime.now(UTC)
        body = json.dumps(
            {"type": event, "timestamp": now.isoformat(), "data": data}, separators=(",", ":")
        )
        headers = {
            "content-type": "application/json",
            "webhook-id": message_id,
            "webhook-timestamp": str(math.floor(now.timestamp())),
            "webhook-signature": self.signer.sign(message_id, now, body),
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


def _article_data(article: Article, external_id: str) -> dict[str, Any]:
    return {
        "draft_id": str(article.draft_id),
        "version": article.version,
        "title": article.title,
        "slug": article.slug,
        "html": article.html,
        "excerpt": article.excerpt,
        "seo_title": article.seo_title,
        "meta_description": article.meta_description,
        "tags": list(article.tags),
        "canonical_url": article.canonical_url,
        "external_id": external_id,
    }


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
