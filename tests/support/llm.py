"""A stand-in for an OpenAI-compatible chat-completions server, on `StubServer` (loopback only).

`POST /v1/chat/completions` answers, in order: the next scripted item (`llm.script(...)`), else
what `responder(request_json)` returns (a content string, a `Reply` or a `Failure`), else a 400
saying nothing was scripted. Replies take the real shapes: a `chat.completion` JSON body, or with
`"stream": true` a `text/event-stream` of `chat.completion.chunk` events (a role chunk, one chunk
per word, a finish chunk, a usage chunk with no choices when `stream_options.include_usage`, then
`data: [DONE]`), sent in one body. Failures are `{"error": {...}}` bodies with any headers
(`retry-after-ms`, ...).

    with ChatServer() as llm:
        llm.script(Failure(429, headers={"retry-after-ms": "10"}), Reply("Hello"))
        model = OpenAICompatible(llm.base_url, "key", "stub-model")
        ...
        assert llm.requests[1].json["model"] == "stub-model"
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contentplatform.ai.tokens import count_tokens
from tests.support.servers import StubServer

PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    content: str | None = "OK"
    finish_reason: str = "stop"
    # (prompt_tokens, completion_tokens); "auto": counted like our count_tokens; None: no usage.
    usage: tuple[int, int] | Literal["auto"] | None = "auto"
    model: str | None = None  # None: the model asked for
    refusal: str | None = None
    delay: float = 0.0  # seconds before answering
    # Streaming only: after the content, an error event instead of the finish.
    stream_error: str | None = None


@dataclass(frozen=True)
class Failure:
    status: int
    message: str = "failure"
    type: str = "server_error"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class SeenRequest:
    json: dict[str, Any]
    headers: dict[str, str]  # names lowercased


Responder = Callable[[dict[str, Any]], "str | Reply | Failure"]


class ChatServer:
    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self._script: deque[Reply | Failure] = deque()
        self._lock = threading.Lock()
        self._stub = StubServer()
        self._stub.route("POST", PATH, self._handle)
        self.url = self._stub.url
        self.base_url = f"{self._stub.url}/v1"

    def script(self, *items: Reply | Failure | str) -> None:
        with self._lock:
            self._script.extend(Reply(item) if isinstance(item, str) else item for item in items)

    def reset(self) -> None:
        """Forget the script, the responder and the requests seen (to share one server)."""
        with self._lock:
            self._script.clear()
            self.responder = None
            self._stub.requests.clear()

    @property
    def requests(self) -> list[SeenRequest]:
        return [
            SeenRequest(
                json=json.loads(seen["body"] or b"{}"),
                headers={name.lower(): value for name, value in seen["headers"].items()},
            )
            for seen in self._stub.requests
            if seen["path"].split("?", 1)[0] == PATH
        ]

    def __enter__(self) -> ChatServer:
        self._stub.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stub.__exit__(*exc)

    def _next(self, request: dict[str, Any]) -> Reply | Failure:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            answer = self.responder(request)
            return Reply(answer) if isinstance(answer, str) else answer
        return Failure(400, "the stub has no response scripted", type="invalid_request_error")

    def _handle(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, Any]:
        request = json.loads(body or b"{}")
        answer = self._next(request)
        time.sleep(answer.delay)
        if isinstance(answer, Failure):
            error = {"message": answer.message, "type": answer.type, "param": None, "code": None}
            return answer.status, dict(answer.headers), {"error": error}
        if request.get("stream"):
            headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
            return 200, headers, _events(request, answer)
        return 200, {}, _completion(request, answer)


def _usage(request: dict[str, Any], reply: Reply) -> dict[str, int] | None:
    if reply.usage is None:
        return None
    if reply.usage == "auto":
        prompt = sum(count_tokens(str(m.get("content") or "")) for m in request["messages"])
        answer = count_tokens(reply.content or "")
    else:
        prompt, answer = reply.usage
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}


def _completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": reply.model or request.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": reply.content,
                    "refusal": reply.refusal,
                },
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
    }
    usage = _usage(request, reply)
    if usage is not None:
        body["usage"] = usage
    return body


def _events(request: dict[str, Any], reply: Reply) -> bytes:
    model = reply.model or request.get("model")
    with_usage = bool((request.get("stream_options") or {}).get("include_usage"))

    def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
        event: dict[str, Any] = {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": choices,
        }
        if with_usage:
            event["usage"] = usage
        return f"data: {json.dumps(event)}\n\n"

    def delta(content: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish}]

    events = [chunk(delta({"role": "assistant", "content": ""}))]
    events += [
        chunk(delta({"content": word})) for word in re.findall(r"\s*\S+", reply.content or "")
    ]
    if reply.refusal:
        events.append(chunk(delta({"refusal": reply.refusal})))
    if reply.stream_error is not None:
        error = {"message": reply.stream_error, "type": "server_error"}
        events.append(f"data: {json.dumps({'error': error})}\n\n")
    else:
        events.append(chunk(delta({}, reply.finish_reason)))
        usage = _usage(request, reply)
        if with_usage and usage is not None:
            events.append(chunk([], usage))
        events.append("data: [DONE]\n\n")
    return "".join(events).encode()
