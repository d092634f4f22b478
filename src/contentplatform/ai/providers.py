"""The language model and the embeddings server the settings ask for.

The OpenAI-compatible clients are imported only when the settings name one: the `openai`
package takes over a second of CPU to import, which every process start (the service, a worker,
each test's service process) would otherwise pay for a provider it may never use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contentplatform.ai.base import ChatModel
from contentplatform.ai.offline import OfflineWriter
from contentplatform.config import Settings

if TYPE_CHECKING:
    from contentplatform.ai.embeddings import Embeddings


def from_settings(settings: Settings) -> ChatModel:
    """`offline` (the default): the embedded extractive writer. `openai`: the chat-completions
    server at `llm_base_url` (OpenAI's own API when unset). The caller owns it: `await close()`."""
    if settings.llm_provider == "openai":
        from contentplatform.ai.openai_compatible import OpenAICompatible  # see the module

        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return OpenAICompatible(
            base_url=settings.llm_base_url,
            api_key=key,
            model=settings.llm_model,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
        )
    return OfflineWriter()


def embeddings_from_settings(settings: Settings) -> Embeddings | None:
    """The embeddings server the settings name; None when embeddings are off. The caller owns
    it: `await close()`."""
    if settings.embeddings_base_url is None or settings.embeddings_model is None:
        return None
    from contentplatform.ai.embeddings import Embeddings  # see the module

    key = settings.embeddings_api_key
    return Embeddings(
        settings.embeddings_base_url,
        key.get_secret_value() if key else None,
        settings.embeddings_model,
        dimensions=settings.embeddings_dimensions,
        timeout=settings.embeddings_timeout_seconds,
        max_retries=settings.embeddings_max_retries,
        batch_size=settings.embeddings_batch_size,
    )
