"""What model tokens cost us, in US dollars: one versioned table, in code.

`cost_usd` in the AI usage reports is the tokens each model used times its price here, shown to
admins only (members get null). A change of prices is a new `VERSION` (the answers name it, so a
figure is always read against the table that made it). A model not in the table (another
provider's, one named later, a debit that used several: "a+b") costs nothing here: its tokens
are counted but not priced, and `unpriced_models` in an overview names them.

USD per 1,000,000 tokens: (input, output). The offline model runs in the process: it costs 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

VERSION = "2026-12-01"

PER_MILLION: dict[str, tuple[float, float]] = {
    "offline-extractive-1": (0.0, 0.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}


def priced(model: str | None) -> bool:
    return model is not None and model in PER_MILLION


def cost(tokens_by_model: Mapping[str | None, Sequence[int]]) -> float:
    """What these tokens ([input, output] by model) cost in USD, rounded to 1/1,000,000 of a
    dollar; models not in the table count 0."""
    total = 0.0
    for model, (input_tokens, output_tokens) in tokens_by_model.items():
        if model is not None and model in PER_MILLION:
            per_input, per_output = PER_MILLION[model]
            total += (input_tokens * per_input + output_tokens * per_output) / 1_000_000
    return round(total, 6)
