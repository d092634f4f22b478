"""The OpenAI-compatible provider against a local chat-completions stand-in (loopback only)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from contentplatform import __version__
from contentplatform.ai.base import (
    Completion,
    CompletionRequest,
    Message,
    ProviderError,
    ProviderRejected,
    ProviderUnavailable,
    StreamChunk,
)
from contentplatform.ai.offline import OfflineWriter
from contentplatform.ai.openai_compatible import NO_API_KEY, OpenAICompatible
from contentplatform.ai.providers import from_settings
from contentplatform.ai.tokens import count_tokens
from contentplatform.config import Settings
from tests.support.llm import ChatServer, Failure, Reply

KEY = "sk-test-Secret-0123456789abcdef"
MESSAGES = (
    Message("system", "You write articles from the sources, citing them as [n]."),
    Message("user", "Write about Acme pricing."),
)
T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@pytest.fixture
def llm(chat_server: ChatServer) -> ChatServer:
    chat_server.reset()
    return chat_server


def model_for(llm: ChatServer, **options: Any) -> OpenAICompatible:
    values: dict[str, Any] = {"timeout": 5.0, "max_retries": 2} | options
    return OpenAICompatible(llm.base_url, values.pop("api_key", KEY), "stub-model", **values)


async def complete(model: OpenAICompatible, request: CompletionRequest) -> Completion:
    try:
        return await model.complete(request)
    finally:
        await model.close()


async def collect(model: OpenAICompatible, request: CompletionRequest) -> list[StreamChunk]:
    try:
        return [chunk async for chunk in model.stream(request)]
    finally:
        await model.close()


def request(**options: Any) -> CompletionRequest:
    return CompletionRequest(task="section", messages=MESSAGES, **options)


def test_request_shape_and_usage(llm: ChatServer) -> None:
    llm.script(Reply("Acme has three plans. [1]", usage=(42, 7), model="stub-model-2024"))
    result = run(complete(model_for(llm), request(max_tokens=321, temperature=0.2)))
    assert result.text == "Acme has three plans. [1]"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (42, 7)
    assert result.model == "stub-model-2024"
    assert result.finish_reason == "stop"
    [seen] = llm.requests
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["user-agent"] == f"contentplatform/{__version__}"
    assert seen.json["model"] == "stub-model"
    assert seen.json["messages"] == [
        {"role": "system", "content": MESSAGES[0].content},
        {"role": "user", "content": MESSAGES[1].content},
    ]
    assert seen.json["max_tokens"] == 321
    assert seen.json["temperature"] == 0.2
    assert "response_format" not in seen.json
    assert "stream" not in seen.json


def test_json_mode_asks_for_a_json_object(llm: ChatServer) -> None:
    llm.script('{"title": "Acme"}')
    result = run(complete(model_for(llm), request(json=True)))
    assert result.text == '{"title": "Acme"}'
    assert llm.requests[0].json["response_format"] == {"type": "json_object"}


def test_no_key_sends_a_placeholder(llm: ChatServer) -> None:
    llm.script("fine")
    run(complete(model_for(llm, api_key=None), request()))
    assert llm.requests[0].headers["authorization"] == f"Bearer {NO_API_KEY}"


def test_missing_usage_is_estimated(llm: ChatServer) -> None:
    llm.script(Reply("Three plans exist. [1]", usage=None))
    result = run(complete(model_for(llm), request()))
    assert result.usage.input_tokens == sum(count_tokens(m.content) for m in MESSAGES)
    assert result.usage.output_tokens == count_tokens("Three plans exist. [1]")


@pytest.mark.parametrize("header", [{"retry-after-ms": "10"}, {"retry-after": "0.01"}])
def test_rate_limit_then_success(llm: ChatServer, header: dict[str, str]) -> None:
    llm.script(Failure(429, "Rate limit reached", type="rate_limit_error", headers=header), "ok")
    started = time.monotonic()
    result = run(complete(model_for(llm), request()))
    assert result.text == "ok"
    assert len(llm.requests) == 2
    assert time.monotonic() - started < 2  # the server's short Retry-After, not the backoff


def test_server_errors_exhaust_the_retries(llm: ChatServer) -> None:
    fast = {"retry-after-ms": "5"}
    llm.script(*(Failure(500, "The server had an error", headers=fast) for _ in range(3)))
    with pytest.raises(ProviderUnavailable) as caught:
        run(complete(model_for(llm, max_retries=2), request()))
    assert len(llm.requests) == 3
    assert caught.value.retryable
    assert "500" in caught.value.message and "after 2 retries" in caught.value.message


def test_rate_limit_after_the_retries_is_unavailable(llm: ChatServer) -> None:
    llm.script(Failure(429, "slow down", headers={"retry-after-ms": "5"}))
    with pytest.raises(ProviderUnavailable, match="429"):
        run(complete(model_for(llm, max_retries=0), request()))


def test_bad_credentials_are_rejected_without_the_key(llm: ChatServer) -> None:
    llm.script(Failure(401, f"Incorrect API key provided: {KEY}", type="invalid_request_error"))
    with pytest.raises(ProviderRejected) as caught:
        run(complete(model_for(llm), request()))
    assert len(llm.requests) == 1  # not retried
    assert not caught.value.retryable
    assert "401" in caught.value.message and "CONTENTPLATFORM_LLM_API_KEY" in caught.value.message
    assert KEY not in caught.value.message and KEY not in str(caught.value)
    assert KEY[-8:] not in caught.value.message


@pytest.mark.parametrize(
    ("status", "expected"),
    [(400, "rejected the request (400)"), (404, "was not found (404)"), (422, "(422)")],
)
def test_client_errors_are_rejected(llm: ChatServer, status: int, expected: str) -> None:
    llm.script(Failure(status, f"bad thing; key was {KEY}", type="invalid_request_error"))
    with pytest.raises(ProviderRejected) as caught:
        run(complete(model_for(llm), request()))
    assert len(llm.requests) == 1
    assert expected in caught.value.message
    assert "bad thing" in caught.value.message  # the server's explanation is passed on
    assert KEY not in caught.value.message


def test_connection_refused_is_unavailable_quickly() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatible(f"http://127.0.0.1:{port}/v1", KEY, "stub-model", 2.0, 0)
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable, match="connection to the language model") as caught:
        run(complete(model, request()))
    assert time.monotonic() - started < 2
    assert KEY not in caught.value.message


def test_timeout_is_unavailable(llm: ChatServer) -> None:
    llm.script(Reply("too late", delay=0.5))
    with pytest.raises(ProviderUnavailable, match=r"did not answer within 0\.1 s"):
        run(complete(model_for(llm, timeout=0.1, max_retries=0), request()))


def test_empty_answers(llm: ChatServer) -> None:
    llm.script(
        Reply(""),
        Reply(None, finish_reason="length"),
        Reply(None, refusal="I can't help with that."),
        Reply("", finish_reason="content_filter"),
    )
    with pytest.raises(ProviderUnavailable, match="empty answer"):
        run(complete(model_for(llm), request()))
    with pytest.raises(ProviderError, match="max_tokens") as caught:
        run(complete(model_for(llm), request()))
    assert type(caught.value) is ProviderError and not caught.value.retryable
    with pytest.raises(ProviderRejected, match="I can't help with that"):
        run(complete(model_for(llm), request()))
    with pytest.raises(ProviderRejected, match="content filter"):
        run(complete(model_for(llm), request()))


def test_stream_concatenates_deltas_and_reports_usage(llm: ChatServer) -> None:
    text = "Acme offers three plans. [1] Billing runs monthly or annually. [2]"
    llm.script(Reply(text, usage=(30, 14)))
    chunks = run(collect(model_for(llm), request(json=True)))
    *pieces, last = chunks
    assert len(pieces) > 3
    assert "".join(piece.text for piece in pieces) == text
    assert all(piece.completion is None for piece in pieces)
    assert last.text == "" and last.completion is not None
    assert last.completion.text == text
    assert (last.completion.usage.input_tokens, last.completion.usage.output_tokens) == (30, 14)
    assert last.completion.finish_reason == "stop"
    seen = llm.requests[0].json
    assert seen["stream"] is True
    assert seen["stream_options"] == {"include_usage": True}
    assert seen["response_format"] == {"type": "json_object"}


def test_stream_without_usage_is_estimated(llm: ChatServer) -> None:
    llm.script(Reply("Short answer. [1]", usage=None))
    last = run(collect(model_for(llm), request()))[-1]
    assert last.completion is not None
    assert last.completion.usage.output_tokens == count_tokens("Short answer. [1]")
    assert last.completion.usage.input_tokens > 0


def test_stream_errors(llm: ChatServer) -> None:
    llm.script(Reply("Partial", stream_error="The model crashed"), Failure(401, KEY))
    with pytest.raises(ProviderUnavailable, match="The model crashed"):
        run(collect(model_for(llm), request()))
    with pytest.raises(ProviderRejected) as caught:
        run(collect(model_for(llm), request()))
    assert KEY not in caught.value.message


def test_stream_stopped_early_closes_cleanly(llm: ChatServer) -> None:
    llm.script(Reply("one two three four five six"))

    async def first_word() -> str:
        model = model_for(llm)
        stream = model.stream(request())
        try:
            return (await anext(stream)).text
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            await model.close()

    assert run(first_word()) == "one"


def test_responder_answers_per_request(llm: ChatServer) -> None:
    def answer(body: dict[str, Any]) -> str:
        return "JSON" if body.get("response_format") else body["messages"][-1]["content"].upper()

    llm.responder = answer
    llm.script("scripted first")
    assert run(complete(model_for(llm), request())).text == "scripted first"
    assert run(complete(model_for(llm), request())).text == "WRITE ABOUT ACME PRICING."
    assert run(complete(model_for(llm), request(json=True))).text == "JSON"


def test_from_settings() -> None:
    assert isinstance(from_settings(Settings(_env_file=None)), OfflineWriter)  # type: ignore[call-arg]
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        llm_provider="openai",
        llm_base_url="http://127.0.0.1:9/v1",
        llm_api_key=SecretStr(KEY),
        llm_model="llama3.1",
        llm_timeout_seconds=3,
        llm_max_retries=1,
    )
    model = from_settings(settings)
    assert isinstance(model, OpenAICompatible)
    assert (model.provider, model.model) == ("openai", "llama3.1")
    run(model.close())
