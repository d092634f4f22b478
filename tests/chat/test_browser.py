"""A chat answer in a real browser, across origins: headless Chromium (Debian's, driven over the
DevTools protocol: tests/support/browser.py) opens a page served from one loopback origin
(chat_page.html) that calls the service on another, through CORS (CONTENTPLATFORM_CORS_ORIGINS
names the page's origin). The page asks with fetch() and its bearer token, makes a stream URL,
and follows the answer with EventSource; the test cuts the stream mid-answer and the page
resumes without losing or repeating an event; a page of an origin not listed reads nothing.

The service is a real `contentplatform serve` process (tests/support/processes.py) whose model
is SlowModel (stand_in.py), which stops after a set number of words until the test lets it go
on: the answer is mid-stream exactly when the connection is cut, without a sleep. The browser
reaches the service through DroppingProxy (tests/support/proxy.py), which cuts the stream's TCP
connection as a network would and notes what the browser sent (a reconnect's Last-Event-ID, a
new URL) and what it was answered. On PostgreSQL and Redis (CI) the answer's events are in
Redis.
"""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import select

from tests.chat.stand_in import ANSWER, SlowModel
from tests.chat.support import QUESTION
from tests.chat.test_processes import MESSAGES, Asker, llm_settings
from tests.support.browser import Browser, Page
from tests.support.processes import LOOPBACK, Service, Services, Stack, wait_for
from tests.support.proxy import DroppingProxy, Exchange
from tests.support.servers import LoopbackServer

PAGE = (Path(__file__).parent / "chat_page.html").read_text()
PAUSES = (10, 30)  # the model stops after these many words until the test resumes it
CONNECTING, CLOSED = 0, 2  # EventSource.readyState


class PageServer(LoopbackServer):
    """Serves the chat page at `/` from an origin of its own (a free loopback port), with the
    API's address and the caller's token and organization in `config`."""

    def __init__(self) -> None:
        super().__init__()
        self.config: dict[str, str] = {}

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        if request.path != "/":
            request.send_error(404)
            return
        body = PAGE.replace("__CONFIG__", json.dumps(self.config)).encode()
        request.send_response(200)
        request.send_header("content-type", "text/html; charset=utf-8")
        request.send_header("content-length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


def chatting(
    services: Services, model: SlowModel, site: PageServer, **settings: str
) -> tuple[Service, Asker]:
    """A service answering with `model` and letting `site`'s pages call it, and an editor of a
    new organization there with a ready document."""
    service = services.start(
        **llm_settings(model.base_url, cors_origins=json.dumps([site.url]), **settings)
    )
    asker = Asker.of_new_org(services, service, "browser")
    asker.ready_document()
    return service, asker


def page_config(asker: Asker, api: str) -> dict[str, str]:
    token = asker.headers["Authorization"].removeprefix("Bearer ")
    return {"api": api, "token": token, "org": asker.org}


def deltas_when_paused(page: Page, model: SlowModel, words: int) -> str:
    """Wait until the model holds after `words` words and the page has every one of them;
    the id of the last event the page saw."""
    page.wait(
        f"page.seen.filter((f) => f.event === 'message_delta').length >= {words}",
        f"the page to see {words} words",
    )
    assert model.paused_at == words
    deltas = page.evaluate("page.seen.filter((f) => f.event === 'message_delta').length")
    assert deltas == words  # the answer is caught mid-stream, nothing past the pause
    last: str = page.evaluate("page.lastId")
    return last


def opened(proxy: DroppingProxy, path: str, count: int, service: Service) -> list[Exchange]:
    """The first `count` requests to `path`, once the last of them has its answer's status."""
    return wait_for(
        f"request {count} to {path} to be answered",
        lambda: (
            (found := proxy.to(path))[count - 1 :]
            and found[count - 1].status is not None
            and found[:count]
        ),
        service,
    )


def check_answer(stack: Stack, frames: list[dict[str, Any]], message_id: str) -> None:
    """Every event once, in order (seq 1..n without a gap), one terminal event, the last; the
    words assembled are the answer as stored."""
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert [f["id"] for f in frames] == [f"{message_id}:{f['seq']}" for f in frames]
    assert [f["event"] for f in frames[:3]] == ["message_start", "retrieval", "conversation_title"]
    assert [f["event"] for f in frames[3:-1]] == ["message_delta"] * (len(frames) - 4)
    assert frames[-1]["event"] == "message_end"
    text = "".join(f["text"] for f in frames if f["event"] == "message_delta")
    stored = stack.one(select(MESSAGES).where(MESSAGES.c.id == uuid.UUID(message_id)))
    assert (stored.status, stored.content) == ("completed", text)
    assert text.strip() == ANSWER


def token_of(exchange: Exchange) -> str:
    return parse_qs(urlsplit(exchange.target).query)["streamToken"][0]


def test_a_page_of_another_origin_streams_an_answer_and_resumes_it_after_a_drop(
    chromium: str, stack: Stack, services: Services, tmp_path: Path
) -> None:
    with (
        SlowModel(word_delay=0.01, pauses=PAUSES) as model,
        PageServer() as site,
        PageServer() as stranger,
    ):
        service, asker = chatting(services, model, site)
        with DroppingProxy(service.url) as proxy, Browser(chromium, tmp_path / "chromium") as tab:
            site.config = stranger.config = page_config(asker, proxy.url)
            page = tab.open(f"{site.url}/")
            message_id = page.evaluate(f"ask({json.dumps(QUESTION)}, 'browser-drop')")
            events = f"/v1/chat/messages/{message_id}/events"

            # Mid-answer the stream's connection is cut; EventSource reconnects by itself to
            # the same URL (its token still valid), sending the last id it saw.
            last = deltas_when_paused(page, model, PAUSES[0])
            assert proxy.drop(events) == 1
            first, reconnect = opened(proxy, events, 2, service)
            assert (first.method, first.status, reconnect.status) == ("GET", 200, 200)
            assert "last-event-id" not in first.headers
            assert reconnect.target == first.target
            assert reconnect.headers["last-event-id"] == last
            assert reconnect.headers["origin"] == site.url
            model.resume()

            # At the next pause the page drops the stream itself and opens a new URL after the
            # last event it saw (?lastEventId=: what it does once a URL has expired).
            last = deltas_when_paused(page, model, PAUSES[1])
            page.evaluate("reopen()")
            *_, again = opened(proxy, events, 3, service)
            assert again.status == 200
            assert parse_qs(urlsplit(again.target).query)["lastEventId"] == [last]
            assert token_of(again) != token_of(first)
            assert "last-event-id" not in again.headers
            model.resume()

            frames = page.wait("answer()", "the answer's end")
            check_answer(stack, frames, message_id)
            log = page.evaluate("page.log")
            assert ["error", CONNECTING] in log and ["closed"] in log
            assert ["error", CLOSED] not in log

            # The page reads an answer's headers CORS exposes: its request id.
            probed = page.evaluate("probe()")
            assert probed["status"] == 200 and len(probed["requestId"]) == 32, probed

            # A page of an origin not listed: its fetch fails, and an EventSource of a URL
            # valid for this very answer gets nothing.
            outsider = tab.open(f"{stranger.url}/")
            assert outsider.evaluate("probe()") == {"refused": "TypeError"}
            made = asker.request("POST", f"/v1/chat/messages/{message_id}/stream-url")
            url = made["url"].replace(service.url, proxy.url)
            assert outsider.evaluate(f"tryStream({json.dumps(url)})") == {
                "events": 0,
                "state": CLOSED,
            }
            # The fetch's preflight was refused; the stream (a simple GET) was served, without a
            # CORS header for that origin, so the browser kept it from the page.
            sent = [e for e in proxy.exchanges if e.headers.get("origin") == stranger.url]
            assert [(e.method, e.status) for e in sent] == [("OPTIONS", 400), ("GET", 200)]

        answered = LOOPBACK.get(
            f"{service.url}/v1/system/whoami", headers={**asker.headers, "Origin": stranger.url}
        )
        assert answered.status_code == 200
        assert not [h for h in answered.headers if h.lower().startswith("access-control-")]
        # No stream token reached the service's log.
        assert "cpst_" not in service.tail(10_000_000)


def test_once_its_url_has_expired_the_page_resumes_with_a_new_one(
    chromium: str, stack: Stack, services: Services, tmp_path: Path
) -> None:
    """URLs last 3 s here: EventSource's own reconnect (3 s after the drop, made once the URL
    has expired) is refused, 401; the browser gives the stream up, and the page makes a new URL
    and opens it after the last event it saw."""
    with SlowModel(word_delay=0.01, pauses=PAUSES[:1]) as model, PageServer() as site:
        service, asker = chatting(services, model, site, stream_token_ttl_seconds="3")
        with DroppingProxy(service.url) as proxy, Browser(chromium, tmp_path / "chromium") as tab:
            site.config = page_config(asker, proxy.url)
            page = tab.open(f"{site.url}/")
            message_id = page.evaluate(f"ask({json.dumps(QUESTION)}, 'browser-expiry')")
            events = f"/v1/chat/messages/{message_id}/events"

            last = deltas_when_paused(page, model, PAUSES[0])
            (made,) = [entry for entry in page.evaluate("page.log") if entry[0] == "url"]
            expires = time.mktime(time.strptime(made[1], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
            wait_for("the stream URL to expire", lambda: time.time() > expires, service)
            assert proxy.drop(events) == 1
            first, refused, renewed = opened(proxy, events, 3, service)
            assert (refused.target, refused.status) == (first.target, 401)
            assert refused.headers["last-event-id"] == last
            assert renewed.status == 200
            assert token_of(renewed) != token_of(first)
            assert parse_qs(urlsplit(renewed.target).query)["lastEventId"] == [last]
            model.resume()

            frames = page.wait("answer()", "the answer's end")
            check_answer(stack, frames, message_id)
            log = page.evaluate("page.log")
            assert ["error", CONNECTING] in log and ["error", CLOSED] in log
            assert len([entry for entry in log if entry[0] == "url"]) == 2
