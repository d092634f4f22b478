"""Any OpenAI-compatible chat-completions server: OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp,
LiteLLM, ... through the official `openai` package (`AsyncOpenAI`).

Retries are the package's own: `max_retries` more attempts after 408, 409, 429, 5xx, timeouts and
dropped connections, with exponential backoff (0.5 s doubling up to 8 s, with jitter) that honours
`Retry-After` and `retry-after-ms` (up to 2 minutes; a longer wait is not retried).
What still fails is mapped onto our errors, whose messages name the server and model but never
the API key:

- `ProviderUnavailable` (retryable): 429, 408, 409, 5xx, timeouts, connection failures, an error
  in the middle of a stream, and an empty answer (no content, no refusal; servers do this
  transiently under load, so trying again later is the sensible reaction);
- `ProviderRejected`: 401, 403, 404, 400, 422 and every other 4xx, a refusal (`message.refusal`
  or finish reason `content_filter`);
- `ProviderError` (not retryable): an answer that is not the protocol's shape, or an empty answer
  that stopped at `max_tokens` (a reasoning model spent them all thinking; retrying the same
  request cannot help).

Requests send `model`, `messages`, `max_tokens` (the one every compatible server understands;
OpenAI's o-series and newer reasoning models want `max_completion_tokens` and reject it),
`temperature`, and `response_format={"type": "json_object"}` when `request.json`. Usage comes from
the response; a server that omits it gets an estimate by `count_tokens` over the prompt and answer.
Streams ask for `stream_options={"include_usage": True}`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletionMessageParam

from contentplatform.ai.base import (
    Completion,
    CompletionRequest,
    Message,
    ProviderError,
    ProviderRejected,
    ProviderUnavailable,
    StreamChunk,
    Usage,
)
from contentplatform.ai.tokens import count_tokens
from contentplatform.kit.outbound import USER_AGENT

# Local servers (Ollama, llama.cpp, vLLM without --api-key) want no key, but the client needs one.
NO_API_KEY = "not-needed"


class OpenAICompatible:
    provider = "openai"

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or NO_API_KEY,
            timeout=timeout,
            max_retries=max_retries,
            default_headers={"User-Agent": USER_AGENT},
        )
        self._where = f"{_safe_url(self._client.base_url)} (model {model})"

    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """What a completion and a stream of one ask the server alike."""
        return {
            "model": self.model,
            "messages": [_message(message) for message in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "response_format": {"type": "json_object"} if request.json else openai.omit,
        }

    async def complete(self, request: CompletionRequest) -> Completion:
        try:
            response = await self._client.chat.completions.create(**self._arguments(request))
        except openai.APIError as error:
            raise self._error(error) from error
        if not response.choices:
            raise ProviderError(
                f"The language model at {self._where} sent an answer with no choice"
            )
        choice = response.choices[0]
        text = choice.message.content or ""
        finish_reason = choice.finish_reason or "stop"
        if not text.strip():
            raise self._empty(finish_reason, choice.message.refusal)
        if response.usage is not None:
            usage = Usage(response.usage.prompt_tokens, response.usage.completion_tokens)
        else:
            usage = _estimate(request, text)
        return Completion(text, usage, response.model or self.model, finish_reason)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        parts: list[str] = []
        usage: Usage | None = None
        model = self.model
        finish_reason = "stop"
        refusal = ""
        try:
            chunks = await self._client.chat.completions.create(
                **self._arguments(request),
                stream=True,
                stream_options={"include_usage": True},
            )
            # The context closes the HTTP response even when our caller stops reading early.
            async with chunks:
                async for chunk in chunks:
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                    for choice in chunk.choices[:1]:
                        finish_reason = choice.finish_reason or finish_reason
                        refusal += choice.delta.refusal or ""
                        if choice.delta.content:
                            parts.append(choice.delta.content)
                            yield StreamChunk(choice.delta.content)
        except openai.APIError as error:
            raise self._error(error) from error
        text = "".join(parts)
        if not text.strip():
            raise self._empty(finish_reason, refusal)
        completion = Completion(text, usage or _estimate(request, text), model, finish_reason)
        yield StreamChunk("", completion=completion)

    async def close(self) -> None:
        await self._client.close()

    def _error(self, error: openai.APIError) -> ProviderError:
        return provider_error(
            error,
            what="language model",
            where=self._where,
            timeout=self._timeout,
            max_retries=self._max_retries,
            api_key=self._api_key,
            settings="CONTENTPLATFORM_LLM",
        )

    def _empty(self, finish_reason: str, refusal: str | None) -> ProviderError:
        if refusal or finish_reason == "content_filter":
            why = f": {_redact(refusal, self._api_key)}" if refusal else " (content filter)"
            return ProviderRejected(f"The language model at {self._where} refused to answer{why}")
        if finish_reason == "length":
            return ProviderError(
                f"The language model at {self._where} used all max_tokens before answering"
            )
        return ProviderUnavailable(f"The language model at {self._where} sent an empty answer")


def _message(message: Message) -> ChatCompletionMessageParam:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "assistant":
        return {"role": "assistant", "content": message.content}
    return {"role": "user", "content": message.content}


def _estimate(request: CompletionRequest, text: str) -> Usage:
    prompt = sum(count_tokens(message.content) for message in request.messages)
    return Usage(input_tokens=prompt, output_tokens=count_tokens(text))


def _detail(error: openai.APIStatusError, api_key: str | None) -> str:
    """The server's own explanation, short and without the key: ": <message>" or ""."""
    body: Any = error.body
    message = body.get("message") if isinstance(body, dict) else body
    if not isinstance(message, str) or not message.strip():
        return ""
    message = " ".join(_redact(message, api_key).split())
    return f": {message[:300]}"


def _redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "[redacted]") if api_key else text


def _safe_url(url: httpx.URL) -> str:
    """The base URL without credentials or query (which might carry a key)."""
    return str(url.copy_with(username=None, password=None, query=None, fragment=None)).rstrip("/")


__all__ = ["NO_API_KEY", "OpenAICompatible", "provider_error"]


def provider_error(
    error: openai.APIError,
    *,
    what: str,
    where: str,
    timeout: float,
    max_retries: int,
    api_key: str | None,
    settings: str,
) -> ProviderError:
    """What an OpenAI-compatible server's failure means to us: unavailable (worth retrying
    later) or rejected (our request or configuration is wrong), said of the `what` ("language
    model") at `where`, with the settings to check (`settings`_API_KEY, _MODEL, _BASE_URL) and
    never the key."""
    who = f"The {what} at {where}"
    retries = f"after {max_retries} retries" if max_retries else "without retries"
    if isinstance(error, openai.APITimeoutError):
        return ProviderUnavailable(f"{who} did not answer within {timeout:g} s ({retries})")
    if isinstance(error, openai.APIConnectionError):
        cause = _redact(str(error.__cause__ or error), api_key)
        return ProviderUnavailable(
            f"The connection to the {what} at {where} failed ({retries}): {cause}"
        )
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = _detail(error, api_key)
        if isinstance(error, openai.RateLimitError):
            return ProviderUnavailable(f"{who} is rate limiting us (429, {retries}){detail}")
        if status >= 500 or status in (408, 409):
            return ProviderUnavailable(f"{who} is failing ({status}, {retries}){detail}")
        if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            # No server detail: OpenAI's echoes part of the key it refused.
            return ProviderRejected(
                f"{who} refused our credentials ({status}); check {settings}_API_KEY"
            )
        if isinstance(error, openai.NotFoundError):
            return ProviderRejected(
                f"{who} was not found (404); check {settings}_MODEL and {settings}_BASE_URL{detail}"
            )
        return ProviderRejected(f"{who} rejected the request ({status}){detail}")
    # An error event in the middle of a stream, or an answer not in the protocol's shape.
    message = _redact(error.message, api_key)
    if isinstance(error, openai.APIResponseValidationError):
        return ProviderError(f"{who} sent an invalid answer: {message}")
    return ProviderUnavailable(f"{who} failed: {message}")
