"""What an answer asks the model: the system prompt, the conversation so far and the question
with its numbered sources. The same inputs go as data (`brief`, `sources`) for the offline
writer, which answers extractively from the sources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contentplatform.ai.base import CompletionRequest, Message, Source

PROMPT_VERSION = "chat-2026-11.1"
MAX_TOKENS = 1024
# Earlier messages the model reads, and how much of each.
HISTORY_MESSAGES = 6
HISTORY_CHARS = 2000

SYSTEM = (
    "You answer questions for a team from its own knowledge base. Use only the numbered "
    "sources given with the question: every claim must come from them, and each sentence that "
    "uses a source ends with its number in square brackets, like [2]. When the sources do not "
    "hold the answer, say so plainly instead of guessing. Never invent facts, figures, names or "
    "links. Answer in the language of the question, briefly and in plain text."
)


def sources_of(resources: Sequence[dict[str, Any]]) -> list[Source]:
    """The retrieved chunks as the model's sources, numbered by their position."""
    return [
        Source(
            ref=resource["position"],
            chunk_id=resource["chunk_id"],
            document_id=resource["document_id"],
            document_name=resource["document_name"],
            heading=resource.get("heading"),
            text=resource["content"],
        )
        for resource in resources
    ]


def render_sources(sources: Sequence[Source]) -> str:
    if not sources:
        return "(no source matches the question)"
    blocks = []
    for source in sources:
        where = f" ({source.heading})" if source.heading else ""
        blocks.append(f"[{source.ref}]{where}\n{source.text.strip()}")
    return "\n\n".join(blocks)


def answer(
    question: str, history: Sequence[tuple[str, str]], sources: Sequence[Source]
) -> CompletionRequest:
    """The request for an answer to `question`, after `history` ((role, text), oldest first)."""
    messages = [Message("system", SYSTEM)]
    for role, text in history[-HISTORY_MESSAGES:]:
        messages.append(Message("assistant" if role == "assistant" else "user", _cut(text)))
    messages.append(Message("user", f"Sources:\n{render_sources(sources)}\n\nQuestion: {question}"))
    return CompletionRequest(
        task="answer",
        messages=messages,
        brief={"question": question},
        sources=sources,
        max_tokens=MAX_TOKENS,
        temperature=0.2,
    )


def _cut(text: str) -> str:
    return text if len(text) <= HISTORY_CHARS else text[:HISTORY_CHARS] + "…"
