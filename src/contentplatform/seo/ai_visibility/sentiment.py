"""The sentiment of the sentences naming a brand, read by the configured language model.

One request per answer: the sentences (extraction.mention_sentences) numbered, and the model
asked for one JSON object `{"scores": [...]}`, a number from -1 (very negative) to 1 (very
positive) per sentence, in order; a score s is stored as 50 + 50 x s (0-100, 50 neutral). With
the offline provider, or when the model cannot answer or answers in another shape, None: the
extraction falls back on its lexicon (extraction.LEXICON), and says so on the answer. The model's
tokens are the run's (committed with its credits, seen in AI usage analytics).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass

from contentplatform.ai.base import ChatModel, CompletionRequest, Message, ProviderError
from contentplatform.seo.ai_visibility.extraction import Span

log = logging.getLogger(__name__)

# Sentences sent in one request at most (the rest keep the lexicon's score), and their length.
MAX_SENTENCES = 40
MAX_SENTENCE_CHARS = 600
MAX_ANSWER_TOKENS = 400

_SYSTEM = (
    "You rate how sentences from an AI assistant's answer speak of the companies or products "
    "they name. For each numbered sentence give one number from -1 (very negative) through 0 "
    "(neutral or factual) to 1 (very positive). Answer with one JSON object and nothing else: "
    '{"scores": [one number per sentence, in the order given]}.'
)


@dataclass(frozen=True)
class Scored:
    scores: dict[Span, float]
    method: str
    model: str
    input_tokens: int
    output_tokens: int


async def by_model(model: ChatModel, text: str, sentences: list[Span]) -> Scored | None:
    """The model's score of each sentence of `text` at `sentences`, or None (see the module)."""
    asked = sentences[:MAX_SENTENCES]
    if model.provider == "offline" or not asked:
        return None
    numbered = "\n".join(
        f"{n}. {' '.join(text[start:end].split())[:MAX_SENTENCE_CHARS]}"
        for n, (start, end) in enumerate(asked, 1)
    )
    try:
        completion = await model.complete(
            CompletionRequest(
                task="sentiment",
                messages=[Message("system", _SYSTEM), Message("user", numbered)],
                max_tokens=MAX_ANSWER_TOKENS,
                temperature=0.0,
                json=True,
            )
        )
    except ProviderError as error:
        log.warning("the language model scored no sentiment: %s", error)
        return None
    scores = _scores(completion.text, len(asked))
    if scores is None:
        log.warning("the language model's sentiment answer was not %d scores", len(asked))
        return None
    return Scored(
        scores={span: 50.0 + 50.0 * score for span, score in zip(asked, scores, strict=True)},
        method=f"language model ({completion.model})",
        model=completion.model,
        input_tokens=completion.usage.input_tokens,
        output_tokens=completion.usage.output_tokens,
    )


def _scores(answer: str, count: int) -> list[float] | None:
    """The `count` scores of the model's answer, each clamped to [-1, 1]; None for any other
    shape."""
    try:
        found = json.loads(answer)
    except ValueError:
        return None
    values = found.get("scores") if isinstance(found, dict) else None
    if not isinstance(values, list) or len(values) != count:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    if not all(math.isfinite(v) for v in values):
        return None
    return [max(-1.0, min(1.0, float(v))) for v in values]
