"""Declarations only: seo.listTrackedKeywords, addTrackedKeywords, updateTrackedKeyword,
deleteTrackedKeyword, getKeywordRankHistory, getKeywordSerp, checkRankings, rankOverview."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.seo.rank import schemas, service
from contentplatform.seo.rank.errors import (
    NothingToCheck,
    SerpNotFound,
    SerpProviderNotConnected,
    TrackedKeywordNotFound,
)
from contentplatform.seo.sync_runs.schemas import SyncRun

router = ProcedureRouter("seo", tag="SEO")


@router.get("listTrackedKeywords", "/v1/seo/rank/keywords", access=Access.member)
async def list_tracked_keywords(
    ctx: Context, data: schemas.ListTrackedKeywordsInput
) -> schemas.TrackedKeywordPage:
    """Tracked keywords with current position, movement, ranking URL, SERP features and
    competitor positions.

    Each row is one keyword x market (location, language) x device, its figures those of its
    newest check. `position` null: not within the depth read (SEO settings `rank.depth`), or
    never checked (`last_checked_at` null); `url` differing from `target_url` flags the wrong
    page ranking; `cannibalization` lists our URLs when two or more of them show on the one
    SERP. `movement` is since the keyword's previous check (improved, declined, new: ranking
    now and not then, lost: the reverse, unchanged); `change_1d`/`change_7d`/`change_30d` are
    the positions gained since the newest check at least that many days older (not ranking
    counted as 100; null when there is none). A competitor's position with `known` false is
    unknown: the check stopped at our domain's page before it showed (settings
    `rank.stop_at_own_domain`). `estimated_traffic` = search_volume x CTR(position) (null until
    the volume is known). Filters: `search` (contained in the keyword), `tag`, `status`,
    `device`, `locationCode`, `bucket` (top3, top10, top20, top100 by position; not_ranking)
    and `movement`. Sorted by `sortBy` (default position) then id; a null sorts as the largest
    value either way."""
    return await service.list_keywords(ctx.session, ctx.tenant.tenant_id, data)


@router.post("addTrackedKeywords", "/v1/seo/rank/keywords", access=Access.editor)
async def add_tracked_keywords(
    ctx: Context, data: schemas.AddTrackedKeywordsInput
) -> schemas.AddedKeywords:
    """Start tracking up to 500 keywords for a market and devices.

    Keywords are trimmed, lowercased and de-duplicated (1 to 100 characters, no markup).
    `locationCode`, `languageCode` and `devices` default to the SEO settings' (else 2840 US,
    en, both devices). One tracked keyword per keyword x location x language x device: one
    already tracked is skipped (`duplicate`), as is what passes the organization's 500
    (`plan_limit`): neither is an error. Volume, difficulty, CPC and intent stay null until a
    keyword-data provider fills them (not part of this operation).

    **First check**: with `checkNow` (default true) and a SERP provider connected, the keywords
    added are checked at once, as seo.checkRankings would check them (their credits held, the
    run answered in `check` to poll); none starts when the organization's check is already
    running or its credits are short, and `check_skipped` says why (the add succeeds all the
    same). From the first keyword tracked, the scheduled checks follow the SEO settings'
    `rank.frequency` and `rank.weekday`."""
    return await service.add_keywords(
        ctx.session, ctx.settings, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.patch(
    "updateTrackedKeyword",
    "/v1/seo/rank/keywords/{id}",
    access=Access.editor,
    errors=[TrackedKeywordNotFound],
)
async def update_tracked_keyword(
    ctx: Context, data: schemas.UpdateTrackedKeywordInput
) -> schemas.TrackedKeyword:
    """Retag a keyword, set its target URL, or pause it.

    Only what is sent changes; `tags` is replaced whole, `targetUrl` null clears it. The
    keyword, its market and device are immutable so the history stays one series. A paused
    keyword is left out of checks run without `keywordIds` and of those naming it."""
    return await service.update_keyword(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteTrackedKeyword",
    "/v1/seo/rank/keywords/{id}",
    access=Access.admin,
    errors=[TrackedKeywordNotFound],
)
async def delete_tracked_keyword(ctx: Context, data: schemas.KeywordIdInput) -> Success:
    """Stop tracking a keyword and delete its history.

    Its positions and stored SERPs go with it."""
    await service.delete_keyword(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.get(
    "getKeywordRankHistory",
    "/v1/seo/rank/keywords/{id}/history",
    access=Access.member,
    errors=[TrackedKeywordNotFound],
)
async def get_keyword_rank_history(
    ctx: Context, data: schemas.RankHistoryInput
) -> schemas.RankHistory:
    """Daily position series of one keyword, ours and competitors'.

    One point per succeeded check from `startDate` (default 90 days before `endDate`) to
    `endDate` (default today, UTC), at most 366 days; gaps mean no check that day. A
    competitor's point with `known` false is unknown (the check stopped at our domain)."""
    return await service.history(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getKeywordSerp",
    "/v1/seo/rank/keywords/{id}/serp",
    access=Access.member,
    errors=[TrackedKeywordNotFound, SerpNotFound],
)
async def get_keyword_serp(ctx: Context, data: schemas.KeywordSerpInput) -> schemas.SerpSnapshot:
    """The stored results page a position was read from, with SERP features and AI Overview
    references.

    The newest check's (of `date`, when given; 404 when none succeeded that day). Items follow
    DataForSEO's advanced SERP: `rank_group` is the position within the item's type,
    `rank_absolute` its place on the page; `owner` says whether it is ours (`self`), a
    competitor's or another site's, as are an AI Overview's `references`. `depth` (10, 20, 50,
    100; default 100) shows the organic results up to that position and the other elements up
    to that place. `cannibalization`: our URLs when two or more show. Read from our store only."""
    return await service.serp(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "checkRankings",
    "/v1/seo/rank/check",
    access=Access.editor,
    errors=[SerpProviderNotConnected, NothingToCheck, InsufficientCredits],
)
async def check_rankings(
    ctx: Context, data: schemas.CheckRankingsInput
) -> SyncRun | schemas.RankCheckPreview:
    """Check positions now for all or some tracked keywords (scheduled checks follow settings).

    **Scheduled checks**: every active keyword is also checked on the SEO settings' schedule,
    `rank.frequency` daily (every day) or weekly (on `rank.weekday`), at 05:00 of the
    organization's time zone (jobs.schedulingConfig), `off` never; the clock starts with the
    first keyword tracked. A scheduled check is charged like this one; one the credits cannot
    pay for is not run and is kept as a failed run (trigger `schedule`, error code
    `insufficient_credits`), never retried within its day or week.

    Checks the active keywords among `keywordIds` (default: all active ones), one SERP task per
    tracked keyword (keyword x market x device), `rank.depth` results deep (SEO settings:
    10-100 in tens, default 20). Search engines show 10 results a page and providers bill per
    page, so the check holds keywords x devices x depth/10 credits (kind `seo.checkRankings`,
    under `idempotencyKey`: the same key answers the same run, never a second hold; 402 when
    short) and commits, once it ends, the pages its succeeded tasks read; the rest is given
    back. **Cost preview**: `preview: true` answers {preview, keywords, devices, tasks, pages,
    credits, mode, available, sufficient} and holds, checks and stores nothing (it needs no
    provider connected): the preview is a flag of this operation rather than another
    operation, so it prices exactly the keywords and settings the check would use.

    Through DataForSEO (its `dataforseo` connection; in the local environment a connected
    `offline` provider serves made-up, labelled SERPs instead): a check of at most
    `CONTENTPLATFORM_RANK_LIVE_MAX_TASKS` tasks (default 20) uses live mode, one answer per
    task; a larger one task mode (task_post in batches of 100, then tasks_ready and
    task_get/advanced). With `rank.stop_at_own_domain` the provider stops at the page our
    domain shows on: cheaper, and competitors not seen by then show as unknown. Answers the
    sync run (kind `rank_check`, `queued`; `credits_reserved` set, `params` the counts and
    mode) at once; the work is durable: poll seo.getSyncRun. A task the provider fails (its
    40xxx/50xxx status) fails that keyword alone: the run ends `partial` (`failed` when none
    succeeded), its error naming them. A check already running for the organization is
    returned instead of a new one. 409 when no SERP provider is connected or no active
    keyword is asked for."""
    return await service.check(
        ctx.session, ctx.settings, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.get("rankOverview", "/v1/seo/rank/overview", access=Access.member)
async def rank_overview(ctx: Context, data: schemas.RankOverviewInput) -> schemas.RankOverview:
    """Visibility %, estimated traffic, average position, position distribution and competitor
    comparison over a window.

    Over the tracked keywords matching `tag`, `device` and `locationCode`, each at its newest
    check on or before `endDate` (default today, UTC; window from `startDate`, default 30 days
    before, at most 366 days). visibility = sum(volume x CTR(position)) / sum(volume x CTR(1))
    x 100 (Semrush's Visibility %), estimated_traffic = sum(volume x CTR(position)) a month,
    with the CTR curve of Backlinko's study of 4 million Google results (positions 1-10; page
    two shares 0.63 %; 0 past 20 and when not ranking); avg_position counts not ranking as
    100. A keyword whose search volume is not known yet is left out of visibility and traffic
    (visibility is null when none is known) but counted in avg_position and the distribution.
    `visibility_change` and `movement` compare with the newest checks on or before
    `startDate`; `trend` has one point per day a check ran. Competitors are measured on the
    same SERPs at no extra cost, leaving out keywords where their position is unknown."""
    return await service.overview(ctx.session, ctx.tenant.tenant_id, data)
