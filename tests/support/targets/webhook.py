"""A stand-in for a webhook receiver that verifies Standard Webhooks signatures, on loopback.

`POST {path}` is verified with the `standardwebhooks` package, as a real receiver would
(`Webhook(secret).verify(body, headers)`: the `webhook-id`, `webhook-timestamp` and
`webhook-signature` headers, the timestamp within five minutes, an HMAC over id, timestamp and
body). A bad or missing signature is a 400 and the event is dropped (`rejected`). A verified
event is kept once per `webhook-id` (`events`), as the spec asks receivers to do; a repeat is
acknowledged again but not kept twice (`deliveries` has every verified try).

A 2xx answers with what `answer(event)` returns (`{"received": true}` by default; give it e.g.
`lambda event: {"id": "post-1", "url": "https://blog.example/post-1"}` to name the copy).
Failures are scripted as for any `ScriptedServer`; `after=True` keeps the event, then fails:

    secret = new_signing_secret()
    with WebhookReceiver(secret) as receiver:
        receiver.fail(Failure(503), times=2)
        ...
        assert [event["type"] for event in receiver.events] == ["article.published"]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.support.targets.scripted import Answer, ScriptedServer, Seen

Answerer = Callable[[dict[str, Any]], Any]


class WebhookReceiver(ScriptedServer):
    def __init__(
        self,
        secret: str,
        *,
        path: str = "/hooks/content",
        answer: Answerer | None = None,
    ) -> None:
        super().__init__()
        self.verifier = Webhook(secret)
        self.path = path
        self.hook_url = f"{self.url}{path}"
        self.answer: Answerer = answer or (lambda event: {"received": True})
        self.events: list[dict[str, Any]] = []  # verified, one per webhook-id
        self.deliveries: list[Seen] = []  # every verified try
        self.rejected: list[Seen] = []  # tries whose signature did not verify

    @property
    def event_ids(self) -> list[str]:
        return [seen.headers["webhook-id"] for seen in self.deliveries]

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return {"error": message}

    def handle(self, request: Seen) -> Answer:
        if request.method != "POST" or request.path != self.path:
            return 404, {}, {"error": "not found"}
        try:
            event = self.verifier.verify(request.body, request.headers)
        except WebhookVerificationError as error:
            self.rejected.append(request)
            return 400, {}, {"error": f"invalid signature: {error}"}
        self.deliveries.append(request)
        if request.headers["webhook-id"] not in self.event_ids[:-1]:
            self.events.append(event)
        return 200, {}, self.answer(event)
