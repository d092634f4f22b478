"""A stand-in of the AI answer engines on loopback, each speaking its real protocol and strict
about its key:

- OpenAI (`/openai`): `GET /models` (what seo.connect checks a key with) and `POST /responses`
  (the Responses API: `message` output with `output_text` and `url_citation` annotations, and a
  `web_search_call` whose action names the query), Bearer key;
- Perplexity (`/perplexity`): `POST /chat/completions` (`choices`, `search_results`,
  `citations`), Bearer key; the 1-token completion seo.connect sends is answered too;
- Gemini (`/gemini`): `GET /openai/models` (the OpenAI-compatible base seo.connect checks with)
  and `POST /models/{model}:generateContent` (`candidates[0].content.parts`,
  `groundingMetadata` with `groundingChunks[].web` {uri (a Google redirect), title (the
  domain)} and `webSearchQueries`), key in `x-goog-api-key`;
- Anthropic (`/anthropic`): `GET /v1/models` and `POST /v1/messages` (text blocks with
  `web_search_result_location` citations, a `server_tool_use` web search), key in `x-api-key`
  with `anthropic-version`;
- DataForSEO (`/dfs`): `POST /v3/ai_optimization/{engine}/llm_responses/live` (Basic auth).

A test plants an answer for a prompt (`plant(provider, prompt, text, urls)`), fails a provider
(`fail(provider)`: HTTP 500 to every answer it is asked for), and counts what was asked
(`asked[(provider, prompt)]`, and `sent` the bodies). An unplanted prompt gets a plain answer
naming no brand and citing `https://example.org/guide`.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.servers import LoopbackServer, send

API_KEY = "sk-answers-0123456789abcdef"
DFS_LOGIN, DFS_PASSWORD = "answers-login@example.com", "answers-password-0123456789"


class AnswerEngineStandIn(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.planted: dict[tuple[str, str], tuple[str, list[str]]] = {}
        self.failing: set[str] = set()
        self.asked: Counter[tuple[str, str]] = Counter()
        self.sent: list[tuple[str, Any]] = []
        # Seconds each answer takes (a kill can then land while samples are in flight).
        self.delay = 0.0

    def settings(self) -> dict[str, Any]:
        return {
            "openai_api_base": f"{self.url}/openai",
            "perplexity_api_base": f"{self.url}/perplexity",
            "gemini_api_base": f"{self.url}/gemini/openai",
            "ai_gemini_api_base": f"{self.url}/gemini",
            "anthropic_api_base": f"{self.url}/anthropic",
        }

    def plant(self, provider: str, prompt: str, text: str, urls: list[str]) -> None:
        with self.lock:
            self.planted[(provider, prompt)] = (text, urls)

    def fail(self, provider: str) -> None:
        with self.lock:
            self.failing.add(provider)

    def heal(self, provider: str) -> None:
        with self.lock:
            self.failing.discard(provider)

    def _answer(self, provider: str, prompt: str) -> tuple[str, list[str]]:
        self.asked[(provider, prompt)] += 1
        return self.planted.get(
            (provider, prompt), (f"A plain answer about {prompt}.", ["https://example.org/guide"])
        )

    # --- serving ----------------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        length = int(request.headers.get("content-length") or 0)
        body = json.loads(request.rfile.read(length)) if length else None
        with self.lock:
            status, payload = self._route(request, path, body)
        if self.delay and status == 200:
            time.sleep(self.delay)
        send(request, status, {}, payload)

    def _route(self, request: BaseHTTPRequestHandler, path: str, body: Any) -> tuple[int, Any]:
        bearer = request.headers.get("authorization") == f"Bearer {API_KEY}"
        refused = {"error": {"message": "Incorrect API key provided.", "type": "auth"}}
        if path in ("/openai/models", "/gemini/openai/models"):
            return (200, {"object": "list", "data": []}) if bearer else (401, refused)
        if path == "/openai/responses":
            return self._openai(body) if bearer else (401, refused)
        if path == "/perplexity/chat/completions":
            return self._perplexity(body) if bearer else (401, refused)
        if path.startswith("/gemini/models/") and path.endswith(":generateContent"):
            if request.headers.get("x-goog-api-key") != API_KEY:
                return 400, {"error": {"code": 400, "message": "API key not valid."}}
            return self._gemini(path, body)
        if path.startswith("/anthropic/"):
            if request.headers.get("x-api-key") != API_KEY:
                return 401, {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                }
            assert request.headers.get("anthropic-version") == "2023-06-01"
            if path == "/anthropic/v1/models":
                return 200, {"data": [], "has_more": False}
            if path == "/anthropic/v1/messages":
                return self._anthropic(body)
        if path.startswith("/dfs/v3/ai_optimization/"):
            expected = base64.b64encode(f"{DFS_LOGIN}:{DFS_PASSWORD}".encode()).decode()
            if request.headers.get("authorization") != f"Basic {expected}":
                return 401, {"status_code": 40100, "status_message": "Not authorized."}
            return self._dataforseo(path, body)
        return 404, {"error": {"message": f"No route {path}"}}

    def _openai(self, body: dict[str, Any]) -> tuple[int, Any]:
        self.sent.append(("openai", body))
        assert body["tools"][0]["type"] == "web_search"
        if "openai" in self.failing:
            return 500, {"error": {"message": "The server had an error.", "type": "server_error"}}
        prompt = body["input"]
        text, urls = self._answer("openai", prompt)
        annotations = [
            {"type": "url_citation", "start_index": 0, "end_index": 1, "url": url, "title": url}
            for url in urls
        ]
        return 200, {
            "id": "resp_standin",
            "object": "response",
            "model": body["model"],
            "output": [
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": f"search: {prompt}"},
                },
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": annotations}],
                },
            ],
        }

    def _perplexity(self, body: dict[str, Any]) -> tuple[int, Any]:
        if body.get("max_tokens") == 1:  # seo.connect's check
            return 200, {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
        self.sent.append(("perplexity", body))
        if "perplexity" in self.failing:
            return 500, {"error": {"message": "Internal error", "type": "server_error"}}
        prompt = body["messages"][-1]["content"]
        text, urls = self._answer("perplexity", prompt)
        return 200, {
            "id": "pplx",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "citations": urls,
            "search_results": [{"title": f"Result {n}", "url": url} for n, url in enumerate(urls)],
        }

    def _gemini(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.sent.append(("gemini", body))
        if "gemini" in self.failing:
            return 503, {"error": {"code": 503, "message": "The model is overloaded."}}
        prompt = body["contents"][0]["parts"][0]["text"]
        text, urls = self._answer("gemini", prompt)
        chunks = [
            {
                "web": {
                    "uri": f"https://vertexaisearch.cloud.google.com/grounding-api-redirect/{n}",
                    "title": url.split("/")[2],
                }
            }
            for n, url in enumerate(urls)
        ]
        return 200, {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "groundingMetadata": {
                        "webSearchQueries": [f"search: {prompt}"],
                        "groundingChunks": chunks,
                    },
                }
            ],
            "modelVersion": path.split("/")[3].split(":")[0],
        }

    def _anthropic(self, body: dict[str, Any]) -> tuple[int, Any]:
        self.sent.append(("anthropic", body))
        assert body["tools"][0]["type"] == "web_search_20250305"
        if "anthropic" in self.failing:
            return 529, {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
        prompt = body["messages"][-1]["content"]
        text, urls = self._answer("anthropic", prompt)
        # Claude splits its text where citations attach: the first sentence cites every URL.
        head, _, tail = text.partition(". ")
        blocks: list[dict[str, Any]] = [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": f"search: {prompt}"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": url,
                        "title": url,
                        "encrypted_content": "x",
                    }
                    for url in urls
                ],
            },
            {
                "type": "text",
                "text": head + (". " if tail else ""),
                "citations": [
                    {
                        "type": "web_search_result_location",
                        "url": url,
                        "title": url,
                        "encrypted_index": "x",
                        "cited_text": head,
                    }
                    for url in urls
                ],
            },
        ]
        if tail:
            blocks.append({"type": "text", "text": tail})
        return 200, {
            "id": "msg_standin",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": "end_turn",
        }

    def _dataforseo(self, path: str, body: list[dict[str, Any]]) -> tuple[int, Any]:
        self.sent.append(("dataforseo", body))
        engine = path.split("/")[4]
        prompt = body[0]["user_prompt"]
        text, urls = self._answer(f"dataforseo:{engine}", prompt)
        return 200, {
            "status_code": 20000,
            "status_message": "Ok.",
            "tasks": [
                {
                    "status_code": 20000,
                    "status_message": "Ok.",
                    "result": [
                        {
                            "model_name": body[0]["model_name"],
                            "web_search": True,
                            "fan_out_queries": [f"search: {prompt}"],
                            "items": [
                                {
                                    "type": "message",
                                    "sections": [
                                        {
                                            "type": "text",
                                            "text": text,
                                            "annotations": [
                                                {"title": "source", "url": url} for url in urls
                                            ],
                                        }
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ],
        }
