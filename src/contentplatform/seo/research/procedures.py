"""Declarations only: seo.researchKeywords."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.seo.research import schemas, service
from contentplatform.seo.research.errors import KeywordProviderFailed, ResearchKeyUsed

router = ProcedureRouter("seo", tag="SEO")


@router.post(
    "researchKeywords",
    "/v1/seo/keywords/research",
    access=Access.editor,
    errors=[InsufficientCredits, ResearchKeyUsed, KeywordProviderFailed],
)
async def research_keywords(
    ctx: Context, data: schemas.ResearchKeywordsInput
) -> schemas.KeywordResearch:
    """Keyword research: related ideas, matching terms, questions, or metrics of given keywords.

    Each idea with its volume, difficulty, CPC, intent and trend. `mode`: related (keywords
    searched around the seeds), matching (containing a seed), questions (starting with a
    question word), metrics (the seeds' own figures). The market defaults to the SEO settings'
    location and language (else 2840 US, en).

    **With the keyword provider** (the `dataforseo` connection: DataForSEO Labs' related
    keywords, keyword suggestions, and keyword overview, with search intent): one provider
    request per seed, each for its share of `limit` (metrics: one request), each charged 1
    credit (kind `seo.researchKeywords`, held under `idempotencyKey`, 402 when short, committed
    for the requests that succeeded; a key already spent on an answer no longer kept is 409;
    every request failing is 503, nothing charged). The answer is kept 30 days per market and
    request (mode, seeds, limit): asked again, it is served from that store (`cached` true, no
    credit). **Without one**, ideas come from the organization's own Search Console queries of
    the last 90 days (the selected property's stored rows: related, containing a seed's word;
    matching, a whole seed; questions, a question word and a seed's word; metrics, the seeds),
    their impressions' monthly average standing for search volume (`estimate` true, source
    `search_console`), free. With neither, source `offline`: no ideas, or in metrics mode the
    seeds with unknown figures.

    Ideas are de-duplicated (near-identical keywords: the most searched kept) and carry an
    intent: the provider's, else a lexical rule (transactional: buy, price, cheap, coupon,
    order...; commercial: best, vs, review, top, compare...; navigational: the brand name or
    terms, or the site's name; else informational). `minVolume`, `maxDifficulty` and
    `intents` filter after the provider answered, dropping only ideas known to fail them (an
    unknown volume or difficulty passes); `total` counts what passed, `data` the `limit` most
    searched of it. `our_position` and `tracked` come from rank tracking in this market;
    `planned_in` is null until SEO Plans exist."""
    return await service.research(ctx.session, ctx.settings, ctx.tenant.tenant_id, data)
