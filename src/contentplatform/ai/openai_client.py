"""What the chat model (ai/openai_compatible.py) and the embeddings (ai/embeddings.py) share as
clients of an OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp, LiteLLM,
...): their base class, holding the official `openai` package's client with our base URL, key,
timeout, retries and User-Agent, and what the server's failures mean to us.

Retries are the package's own: `max_retries` more attempts after 408, 409, 429, 5xx, timeouts and
dropped connections, with exponential backoff (0.5 s doubling up to 8 s, with jitter) that honours
`Retry-After` and `retry-after-ms` (up to 2 minutes; a longer wait is not retried). What still
fails is mapped onto our errors (`_error`), whose messages name the server and model but never
the API key.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
import openai

from contentplatform.ai.base import ProviderError, ProviderRejected, ProviderUnavailable
from contentplatform.kit import health
from contentplatform.kit.outbound import USER_AGENT

# Local servers (Ollama, llama.cpp, vLLM without --api-key) want no key, but the client needs one.
NO_API_KEY = "not-needed"


class OpenAIClient:
    """The client (`_client`) for `model` at `base_url` (OpenAI's own API when None). The owner
    closes it: `await close()`."""

    # What messages call the server ("language model"), and the prefix of the settings that
    # configure it (`settings`_API_KEY, _MODEL, _BASE_URL), for the messages to name.
    what: ClassVar[str]
    settings: ClassVar[str]
    # Its name in system.status (kit/health.py), where its calls' outcomes are recorded.
    component: ClassVar[str]

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        *,
        timeout: float,
        max_retries: int,
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
        # How messages name the server: "<base url> (model <model>)".
        self._where = f"{_safe_url(self._client.base_url)} (model {model})"

    async def close(self) -> None:
        await self._client.close()

    def _redact(self, text: str) -> str:
        """`text` without the API key."""
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    def _answered(self) -> None:
        health.record(self.component, True)

    def _error(self, error: openai.APIError) -> ProviderError:
        """What the server's failure means to us: unavailable (worth retrying later) or rejected
        (our request or configuration is wrong), with the settings to check and never the key."""
        failure = self._failure(error)
        health.record(self.component, not isinstance(failure, ProviderUnavailable))
        return failure

    def _failure(self, error: openai.APIError) -> ProviderError:
        who = f"The {self.what} at {self._where}"
        retries = f"after {self._max_retries} retries" if self._max_retries else "without retries"
        if isinstance(error, openai.APITimeoutError):
            return ProviderUnavailable(
                f"{who} did not answer within {self._timeout:g} s ({retries})"
            )
        if isinstance(error, openai.APIConnectionError):
            cause = self._redact(str(error.__cause__ or error))
            return ProviderUnavailable(
                f"The connection to the {self.what} at {self._where} failed ({retries}): {cause}"
            )
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            detail = self._detail(error)
            if isinstance(error, openai.RateLimitError):
                return ProviderUnavailable(f"{who} is rate limiting us (429, {retries}){detail}")
            if status >= 500 or status in (408, 409):
                return ProviderUnavailable(f"{who} is failing ({status}, {retries}){detail}")
            settings = self.settings
            if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
                # No server detail: OpenAI's echoes part of the key it refused.
                return ProviderRejected(
                    f"{who} refused our credentials ({status}); check {settings}_API_KEY"
                )
            if isinstance(error, openai.NotFoundError):
                return ProviderRejected(
                    f"{who} was not found (404); check {settings}_MODEL and {settings}_BASE_URL"
                    f"{detail}"
                )
            return ProviderRejected(f"{who} rejected the request ({status}){detail}")
        # An error event in the middle of a stream, or an answer not in the protocol's shape.
        message = self._redact(error.message)
        if isinstance(error, openai.APIResponseValidationError):
            return ProviderError(f"{who} sent an invalid answer: {message}")
        return ProviderUnavailable(f"{who} failed: {message}")

    def _detail(self, error: openai.APIStatusError) -> str:
        """The server's own explanation, short and without the key: ": <message>" or ""."""
        body: Any = error.body
        message = body.get("message") if isinstance(body, dict) else body
        if not isinstance(message, str) or not message.strip():
            return ""
        message = " ".join(self._redact(message).split())
        return f": {message[:300]}"


def _safe_url(url: httpx.URL) -> str:
    """The base URL without credentials or query (which might carry a key)."""
    return str(url.copy_with(username=None, password=None, query=None, fragment=None)).rstrip("/")


__all__ = ["NO_API_KEY", "OpenAIClient"]
