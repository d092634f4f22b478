"""The language model the settings ask for."""

from __future__ import annotations

from contentplatform.ai.base import ChatModel
from contentplatform.ai.offline import OfflineWriter
from contentplatform.ai.openai_compatible import OpenAICompatible
from contentplatform.config import Settings


def from_settings(settings: Settings) -> ChatModel:
    """`offline` (the default): the embedded extractive writer. `openai`: the chat-completions
    server at `llm_base_url` (OpenAI's own API when unset). The caller owns it: `await close()`."""
    if settings.llm_provider == "openai":
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return OpenAICompatible(
            base_url=settings.llm_base_url,
            api_key=key,
            model=settings.llm_model,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
        )
    return OfflineWriter()
