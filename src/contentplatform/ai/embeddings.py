"""Any OpenAI-compatible embeddings server (`POST /v1/embeddings`: OpenAI, Ollama, vLLM,
llama.cpp, LiteLLM, ...) through the official `openai` package, with the same client, retries
and mapping of failures as the chat model (ai/openai_client.py); messages name the server and
model, never the key:
`ProviderUnavailable` (retryable), `ProviderRejected` (credentials, model, request), `ProviderError`
(an answer not in the protocol's shape: wrong count of vectors, vectors of different lengths).

The library asks for base64-encoded vectors (a third of the bytes of JSON floats) and decodes
them; a server that ignores `encoding_format` and sends floats is read as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import openai

from contentplatform.ai.base import ProviderError
from contentplatform.ai.openai_client import OpenAIClient


class Embeddings(OpenAIClient):
    """`embed(texts)`: one vector per text, in order, asked in batches of `batch_size`."""

    what = "embeddings server"
    component = "search"
    settings = "CONTENTPLATFORM_EMBEDDINGS"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 64,
    ) -> None:
        super().__init__(base_url, api_key, model, timeout=timeout, max_retries=max_retries)
        self.dimensions = dimensions
        self.batch_size = batch_size

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(await self._batch(list(texts[start : start + self.batch_size])))
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        try:
            response = await self._client.embeddings.create(
                model=self.model,
                input=texts,
                dimensions=self.dimensions if self.dimensions is not None else openai.omit,
            )
        except openai.APIError as error:
            raise self._error(error) from error
        self._answered()
        # `index` says which input a vector is of; servers may answer out of order.
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(texts))):
            raise ProviderError(
                f"The embeddings server at {self._where} sent {len(data)} vectors for "
                f"{len(texts)} texts"
            )
        vectors = [list(item.embedding) for item in data]
        if len({len(vector) for vector in vectors}) != 1 or not vectors[0]:
            raise ProviderError(
                f"The embeddings server at {self._where} sent vectors of different or no lengths"
            )
        return vectors


__all__ = ["Embeddings"]
