"""The one price table: what a metered operation holds before it runs.

`credits.estimate` answers with it, and the metered operations size their holds with it, so a
client that reserves the estimate under the key it will send holds exactly what the operation
would have taken. A hold is the most the operation can cost; it commits what it actually used:

| kind               | hold                                   | committed                          |
|--------------------|----------------------------------------|------------------------------------|
| documents.ingest   | 1 credit per started megabyte (min 1)  | the hold                           |
| generation.blog    | GENERATION_CREDIT_HOLD (40)            | 1 per started 1,000 model tokens   |
|                    |                                        | (regenerate: 1 per started         |
|                    |                                        | GENERATION_REGENERATE_WORDS_PER_   |
|                    |                                        | CREDIT words), at most the hold    |
| chat.message       | CHAT_CREDIT_HOLD (10)                  | 1 per started 1,000 model tokens,  |
|                    |                                        | at least 1, at most the hold       |
| website_scan.      | SITE_PROFILE_HOLD (10)                 | 1 per started 1,000 model tokens,  |
| profile            |                                        | at least 1, at most the hold       |
| seo.checkRankings  | 1 per SERP page (10 results), keyword  | the pages of the tasks that        |
|                    | and device (estimate: one unit)        | succeeded                          |
| seo.research-      | 1 per keyword-provider request: one    | the requests that succeeded (none  |
| Keywords           | per seed for ideas, one for metrics    | when answered from the 30-day      |
|                    | (estimate: one unit)                   | store or from Search Console)      |
| seo.runAi-         | 1 per prompt x engine x sample         | the answers received               |
| Visibility         | (estimate: one unit)                   |                                    |
| seoPlans.generate  | 1 per started 10 items asked           | 1 per started 10 items written     |
|                    | (estimate: one unit)                   | (none when it fails)               |

The committed column is `tokens_charge` and `words_charge` below: generation's and chat's
workflows price what they used with them, so no other module knows a rate.

An article's and an answer's hold do not depend on their length or history: the hold is
already the most one can cost, and a price that moved with history would make a client's
pre-reservation miss the operation's by a credit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contentplatform.core import runtime

INGEST = "documents.ingest"
GENERATION = "generation.blog"
CHAT = "chat.message"
SITE_PROFILE = "website_scan.profile"
RANK_CHECK = "seo.checkRankings"
KEYWORD_RESEARCH = "seo.researchKeywords"
AI_VISIBILITY = "seo.runAiVisibility"
SEO_PLAN = "seoPlans.generate"
KINDS = (
    INGEST,
    GENERATION,
    CHAT,
    SITE_PROFILE,
    RANK_CHECK,
    KEYWORD_RESEARCH,
    AI_VISIBILITY,
    SEO_PLAN,
)
# A plan generation holds 1 credit per started this many items asked.
SEO_PLAN_ITEMS_PER_CREDIT = 10

BYTES_PER_CREDIT = 1_000_000
TOKENS_PER_CREDIT = 1_000
# A site profile reads a bounded sample of a snapshot (website_scan/profiles/inference.py): its
# prompt and answer stay under 10,000 tokens.
SITE_PROFILE_HOLD = 10


@dataclass(frozen=True)
class Price:
    kind: str
    amount: int
    basis: str


def price(kind: str, *, content_length: int | None = None) -> Price:
    """The credits an operation of `kind` holds; `content_length` (bytes) prices an ingest.

    Deterministic for the same inputs and settings. Unknown kinds are the caller's error
    (ValueError): the API checks the kind before it asks.
    """
    if kind == INGEST:
        size = max(0, content_length or 0)
        amount = max(1, math.ceil(size / BYTES_PER_CREDIT))
        return Price(kind, amount, f"1 credit per started megabyte: {size} bytes")
    if kind == GENERATION:
        hold = runtime.current().settings.generation_credit_hold
        return Price(
            kind,
            hold,
            f"{hold} credits per article, the most one can cost; it commits 1 per started "
            "1,000 model tokens",
        )
    if kind == CHAT:
        hold = runtime.current().settings.chat_credit_hold
        return Price(
            kind,
            hold,
            f"{hold} credits per answer, the most one can cost; it commits 1 per started "
            "1,000 model tokens, at least 1",
        )
    if kind == SITE_PROFILE:
        return Price(
            kind,
            SITE_PROFILE_HOLD,
            f"{SITE_PROFILE_HOLD} credits per site profile, the most one can cost; it commits 1 "
            "per started 1,000 model tokens, at least 1",
        )
    if kind == RANK_CHECK:
        return Price(
            kind,
            1,
            "1 credit per SERP page (10 results), keyword and device: a check holds keywords x "
            "devices x depth/10 and commits the pages of the tasks that succeeded",
        )
    if kind == KEYWORD_RESEARCH:
        return Price(
            kind,
            1,
            "1 credit per keyword-provider request: a research holds one per seed (related, "
            "matching, questions) or one (metrics) and commits the requests that succeeded; "
            "nothing when answered from its 30-day store or from Search Console",
        )
    if kind == AI_VISIBILITY:
        return Price(
            kind,
            1,
            "1 credit per answer asked for: a run holds prompts x engines x samples and commits "
            "the answers received",
        )
    if kind == SEO_PLAN:
        return Price(
            kind,
            1,
            f"1 credit per started {SEO_PLAN_ITEMS_PER_CREDIT} plan items: a generation holds "
            "one per started ten items asked and commits one per started ten items written; "
            "nothing when it fails",
        )
    raise ValueError(f"No price for {kind!r}.")


def tokens_charge(tokens: int) -> int:
    """What model tokens (prompts and answers) cost: 1 credit per started 1,000; 0 for none.
    generation.blog and chat.message commit this, at least 1 and at most their hold."""
    return math.ceil(max(0, tokens) / TOKENS_PER_CREDIT)


def words_charge(words: int) -> int:
    """What a regenerated draft costs: 1 credit per started
    GENERATION_REGENERATE_WORDS_PER_CREDIT words written; 0 for none."""
    per_credit = runtime.current().settings.generation_regenerate_words_per_credit
    return math.ceil(max(0, words) / per_credit)
