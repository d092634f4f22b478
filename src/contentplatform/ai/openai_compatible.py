"""Any OpenAI-compatible chat-completions server: OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp,
LiteLLM, ... through the official `openai` package (`AsyncOpenAI`).

Retries, the client and the mapping of failures onto our errors (whose messages name the server and
model but never the API key) are its base class's (ai/openai_client.py); what they mean here:

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
from contentplatform.ai.openai_client import NO_API_KEY, OpenAIClient
from contentplatform.ai.tokens import count_tokens


class OpenAICompatible(OpenAIClient):
    provider = "openai"
    what = "language model"
    component = "llm"
    settings = "CONTENTPLATFORM_LLM"

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        super().__init__(base_url, api_key, model, timeout=timeout, max_retries=max_retries)

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
        self._answered()
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
            self._answered()
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

    def _empty(self, finish_reason: str, refusal: str | None) -> ProviderError:
        if refusal or finish_reason == "content_filter":
            why = f": {self._redact(refusal)}" if refusal else " (content filter)"
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


__all__ = ["NO_API_KEY", "OpenAICompatible"]
