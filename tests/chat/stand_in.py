"""A slow OpenAI-compatible model for the chat process tests, on `LoopbackServer` (loopback only).

`POST /v1/chat/completions` with `"stream": true` answers `ANSWER` as the real protocol does (a
role chunk, one `chat.completion.chunk` per word, a finish chunk, a usage chunk when asked,
`data: [DONE]`), each word written and flushed `word_delay` seconds after the one before, so
an answer is still being written while a test reads, stops or kills it. With `hold`, the first
request waits for `release` before its first word (`holding` is set meanwhile): a model that
hangs. With `pauses`, it stops after each of those numbers of words until `resume()`
(`paused_at` says where it waits): an answer caught mid-stream exactly where a test wants it.
tests/support/llm.py's ChatServer sends a whole stream at once; this one trickles.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Collection
from http.server import BaseHTTPRequestHandler
from typing import Any

from contentplatform.ai.tokens import count_tokens
from tests.support.servers import LoopbackServer

PATH = "/v1/chat/completions"
TIMEOUT = 60.0
ANSWER = (
    "Tomatoes in a dry summer need deep watering twice a week rather than a little every day "
    "[1]. Early morning watering loses the least water to evaporation and gives leaves time to "
    "dry before the evening [1]. The controller skips a scheduled watering when rain is "
    "expected within the next twelve hours [1]. Soil moisture sensors postpone watering until "
    "the soil dries out [1]."
)


class SlowModel(LoopbackServer):
    def __init__(
        self, *, word_delay: float = 0.05, hold: bool = False, pauses: Collection[int] = ()
    ) -> None:
        super().__init__()
        self.base_url = f"{self.url}/v1"
        self.word_delay = word_delay
        self.hold = hold
        self.holding = threading.Event()
        self.release = threading.Event()
        self.pauses = frozenset(pauses)
        # The number of words written when it stopped at a pause; None while it writes.
        self.paused_at: int | None = None
        self._resumed = threading.Semaphore(0)
        self.requests: list[dict[str, Any]] = []
        # Words written before the client went away (or all of them), per request.
        self.written: list[int] = []
        self._lock = threading.Lock()

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = json.loads(request.rfile.read(length) or b"{}")
        with self._lock:
            self.requests.append(body)
            first = len(self.requests) == 1
        if request.path.split("?", 1)[0] != PATH or not body.get("stream"):
            request.send_error(400, "this stand-in only streams chat completions")
            return
        if self.hold and first:
            self.holding.set()
            self.release.wait(TIMEOUT)
        words = re.findall(r"\s*\S+", ANSWER)
        written = 0
        try:
            request.send_response(200)
            request.send_header("content-type", "text/event-stream")
            request.send_header("cache-control", "no-cache")
            request.send_header("connection", "close")
            request.end_headers()
            self._send(request, body, {"role": "assistant", "content": ""})
            for word in words:
                self._send(request, body, {"content": word})
                written += 1
                if written in self.pauses:
                    self.paused_at = written
                    self._resumed.acquire(timeout=TIMEOUT)
                    self.paused_at = None
                time.sleep(self.word_delay)
            self._send(request, body, {}, finish="stop")
            if (body.get("stream_options") or {}).get("include_usage"):
                prompt = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": count_tokens(ANSWER),
                    "total_tokens": prompt + count_tokens(ANSWER),
                }
                self._chunk(request, body, [], usage)
            request.wfile.write(b"data: [DONE]\n\n")
            request.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (a stopped answer, a killed service)
        finally:
            with self._lock:
                self.written.append(written)

    def resume(self) -> None:
        """Go on from the pause it waits at (or the next one it reaches)."""
        self._resumed.release()

    def _send(
        self,
        request: BaseHTTPRequestHandler,
        body: dict[str, Any],
        delta: dict[str, Any],
        finish: str | None = None,
    ) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        self._chunk(request, body, [choice], None)

    def _chunk(
        self,
        request: BaseHTTPRequestHandler,
        body: dict[str, Any],
        choices: list[dict[str, Any]],
        usage: dict[str, int] | None,
    ) -> None:
        event: dict[str, Any] = {
            "id": "chatcmpl-slow",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": body.get("model"),
            "choices": choices,
        }
        if (body.get("stream_options") or {}).get("include_usage"):
            event["usage"] = usage
        request.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        request.wfile.flush()
