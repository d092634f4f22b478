"""What AI visibility refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict, RecordNotFound


class AiPromptNotFound(RecordNotFound):
    """There is no such tracked prompt in this organization (deleted, or another
    organization's)."""

    record = "AI prompt"


class AiAnswerNotFound(RecordNotFound):
    """There is no such stored AI answer in this organization."""

    record = "AI answer"


class AnswerEngineNotConnected(Conflict):
    """An engine asked for has no connected answer-engine provider (seo.connect: `openai` for
    chatgpt, `perplexity`, `gemini`, `anthropic` for claude, or `dataforseo` for any of them and
    google_ai_overview; `offline` in the local environment)."""


class NothingToAsk(Conflict):
    """None of the prompts asked for (or, by default, none of the organization's) is an active
    tracked prompt with an engine to ask."""


class AiPromptLimitReached(Conflict):
    """The organization tracks as many active prompts as it may (100): pause or delete one
    before making another active."""
