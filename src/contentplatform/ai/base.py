"""The one small interface every language model sits behind: `complete`, and `stream` for chat.

A request carries both the rendered chat messages (what a real model reads) and the structured
task behind them (`task`, `brief`, `sources`), so the offline provider can do the same job
extractively without parsing prompts. Citations are `[n]` markers, n being a `Source.ref`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# What a completion is for: the offline writer answers the generation and chat tasks; a real
# model reads only the messages (`site_profile` and `sentiment` are read by a real model only,
# the offline reading of a site being extractive, website_scan/profiles/inference.py, and of
# sentiment a lexicon, seo/ai_visibility/extraction.py).
Task = Literal["outline", "section", "seo", "answer", "site_profile", "sentiment"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Source:
    """A retrieved passage the model may cite as `[ref]`."""

    ref: int
    chunk_id: str
    document_id: str
    document_name: str
    heading: str | None
    text: str
    # Where the passage is public (a scanned web page), so a citation of it may be published as
    # a link; None for the tenant's own files, which are only ever named in the provenance.
    url: str | None = None


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    task: Task
    messages: Sequence[Message]
    # The task's inputs as data (topic, keywords, instructions, outline, heading, ...).
    brief: dict[str, Any] = field(default_factory=dict)
    sources: Sequence[Source] = ()
    max_tokens: int = 1500
    temperature: float = 0.4
    # The answer must be one JSON object (OpenAI's response_format json_object).
    json: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage
    model: str
    finish_reason: str  # stop | length | ...


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """A piece of a streamed answer; the last one carries the whole `completion`."""

    text: str
    completion: Completion | None = None


class ProviderError(Exception):
    """The model could not answer. `retryable`: trying again later may work."""

    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ProviderUnavailable(ProviderError):
    """Rate limited, timed out, unreachable or failing (5xx) even after our retries."""

    retryable = True


class ProviderRejected(ProviderError):
    """The provider refused the request: bad credentials, unknown model, invalid request."""


class ChatModel(Protocol):
    provider: str  # "offline" | "openai"
    model: str

    async def complete(self, request: CompletionRequest) -> Completion: ...

    def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]: ...

    async def close(self) -> None: ...
