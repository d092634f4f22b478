"""Declarations only: seo.listAiPrompts, createAiPrompts, updateAiPrompt, deleteAiPrompt,
suggestAiPrompts, runAiVisibility, aiVisibilityOverview, listAiAnswers, getAiAnswer,
listAiSources."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.seo.ai_visibility import reports, schemas, service
from contentplatform.seo.ai_visibility.errors import (
    AiAnswerNotFound,
    AiPromptLimitReached,
    AiPromptNotFound,
    AnswerEngineNotConnected,
    NothingToAsk,
)
from contentplatform.seo.sync_runs.schemas import SyncRun

router = ProcedureRouter("seo", tag="SEO")


@router.get("listAiPrompts", "/v1/seo/ai-visibility/prompts", access=Access.member)
async def list_ai_prompts(ctx: Context, data: schemas.ListAiPromptsInput) -> schemas.AiPromptPage:
    """Tracked AI prompts with their latest visibility result.

    Prompts are the tracked unit of AI visibility, as keywords are for rank tracking. `latest`
    is the newest run's reading of the prompt (null before its first): the answers it got, the
    prompt's visibility (share of those answers mentioning the brand, with `n`, its 95% Wilson
    interval, and `insufficient_data` below 5 answers), the brand's mean position and sentiment
    where mentioned, whether our domain was cited, and the competitors named. Filters: `search`
    (contained in the text, case-insensitive), `tag`, `topic`, `status`, `engine` (asked of it),
    `mentioned` (in the latest run). Newest first, those created together by text. Deleted
    prompts are not listed."""
    return await service.list_prompts(ctx.session, ctx.tenant.tenant_id, data)


@router.post("createAiPrompts", "/v1/seo/ai-visibility/prompts", access=Access.editor)
async def create_ai_prompts(
    ctx: Context, data: schemas.CreateAiPromptsInput
) -> schemas.CreatedAiPrompts:
    """Add up to 100 prompts to track across AI answer engines.

    Texts are 3 to 500 characters of plain text, blanks made one space. `country` and
    `language` default to the SEO settings' (else none), `engines` to the settings'
    `ai_visibility.engines` (chatgpt when none is set). A duplicate (same text, compared
    case-insensitively, in the same country and language, among the live prompts) is skipped
    (`duplicate`), as is what passes the organization's 100 active prompts (`plan_limit`):
    neither is an error."""
    return await service.create_prompts(ctx.session, ctx.tenant.tenant_id, data)


@router.patch(
    "updateAiPrompt",
    "/v1/seo/ai-visibility/prompts/{id}",
    access=Access.editor,
    errors=[AiPromptNotFound, AiPromptLimitReached],
)
async def update_ai_prompt(ctx: Context, data: schemas.UpdateAiPromptInput) -> schemas.AiPrompt:
    """Retag, pause or change the engines of a prompt.

    Only what is sent changes; `tags` is replaced whole, `topic` null clears it. The text is
    immutable so a series stays comparable: reword by creating a new prompt. Making a paused
    prompt active past the organization's 100 active prompts is 409."""
    return await service.update_prompt(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteAiPrompt",
    "/v1/seo/ai-visibility/prompts/{id}",
    access=Access.admin,
    errors=[AiPromptNotFound],
)
async def delete_ai_prompt(ctx: Context, data: schemas.AiPromptIdInput) -> Success:
    """Stop tracking a prompt.

    A soft delete: the prompt is no longer listed or run, and its answers are kept (readable
    through seo.listAiAnswers and getAiAnswer) but left out of every metric."""
    await service.delete_prompt(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.post("suggestAiPrompts", "/v1/seo/ai-visibility/prompts/suggest", access=Access.editor)
async def suggest_ai_prompts(
    ctx: Context, data: schemas.SuggestAiPromptsInput
) -> schemas.SuggestedAiPrompts:
    """Suggest conversational prompts worth tracking from Search Console questions, tracked
    keywords and competitors.

    Not persisted (create them with seo.createAiPrompts). Written offline by templates, no
    model asked (`method` says so), so deterministic and free: no credits are held and
    `idempotencyKey` is accepted for the catalog's sake and changes nothing. In order:
    `search_console`, the question-form queries (starting how, what, why, which, best, vs...)
    of the last 90 days by impressions, as questions; `tracked_keywords`, each active tracked
    keyword as a question ('What is the best X?' unless it is one already); `competitors`
    (tracked for AI), '<brand> vs <competitor>: which is better?' and 'What are the best
    alternatives to <competitor>?'. `knowledge` makes none: reading product terms from the
    knowledge documents needs a model. Prompts already tracked (and repeats) are left out;
    the first `count` are answered, in English whatever `language` says."""
    return await service.suggest(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "runAiVisibility",
    "/v1/seo/ai-visibility/runs",
    access=Access.editor,
    errors=[AnswerEngineNotConnected, NothingToAsk, InsufficientCredits],
)
async def run_ai_visibility(ctx: Context, data: schemas.RunAiVisibilityInput) -> SyncRun:
    """Ask the AI answer engines the tracked prompts now and record mentions, position,
    sentiment and citations.

    Asks each active prompt among `promptIds` (default: all active ones) of each engine in
    `engines` (default: the prompt's own engines that have a provider) `samples` times
    (default: the SEO settings' `ai_visibility.samples_per_prompt`, 3): answers vary run to
    run. Each engine is answered by a connected provider: chatgpt by `openai` (the Responses
    API with web search), perplexity by `perplexity`, gemini by `gemini` (generateContent with
    Google Search grounding), claude by `anthropic` (the Messages API with its web search
    tool), and any engine, google_ai_overview included, by `dataforseo` (its AI Optimization
    LLM responses; google_ai_overview from the Google SERP's AI Overview); in the local
    environment a connected `offline` answers with made-up, labelled answers. Holds prompts x
    engines x samples credits (kind `seo.runAiVisibility`, under `idempotencyKey`: the same
    key answers the same run, never a second hold; 402 when short) and commits, once the run
    ends, one per answer received; the rest is given back.

    Answers the sync run (kind `ai_visibility`, `queued`) at once; the work is durable: poll
    seo.getSyncRun. Every answer is stored with its raw text, then read locally (brand and
    competitor mentions with their offsets, order of mention, sentiment per sentence by a
    lexicon, citations reduced to registrable domains). A sample an engine fails fails alone:
    the run ends `partial` (`failed` when none was answered), its error naming the engines
    failing and the samples. A run already going for the organization is answered instead of
    a new one. 409 when a requested engine has no provider, or no active prompt is asked for."""
    return await service.run(
        ctx.session, ctx.settings, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.get("aiVisibilityOverview", "/v1/seo/ai-visibility/overview", access=Access.member)
async def ai_visibility_overview(
    ctx: Context, data: schemas.AiOverviewInput
) -> schemas.AiVisibilityOverview:
    """AI visibility KPIs: visibility, share of voice, position, sentiment and citation share,
    by engine and vs competitors.

    Over the stored answers of live prompts answered from `startDate` (default 30 days before
    `endDate`) to `endDate` (default today, UTC; at most 366 days), filtered by `engine`,
    `tag`, `topic` and `country`. visibility = answers mentioning the brand / answers (%);
    share_of_voice = brand mentions / mentions of every tracked brand, a brand counted once per
    answer (%); avg_position = mean rank of the brand's first mention among the brands of an
    answer (1 = first; lower is better); sentiment = mean sentiment of the brand's mention
    sentences, 0-100 (a lexicon, offline); citation_share = citations of our registrable
    domain / all citations (%). Each has `n` (the answers, mentions or citations it is over)
    and a 95% interval (Wilson's for the shares, a normal one for the means), and is null with
    `insufficient_data` below `min_sample` (5). `change` gives each share's change in points
    against the preceding window of equal length with Newcombe's 95% interval for a
    difference of proportions, `real` when it leaves out 0 (more than sampling noise); `trend`
    one point per day with answers; `gaps` counts the prompts
    where only competitors were named, and those where our domain was never cited."""
    return await reports.overview(ctx.session, ctx.tenant.tenant_id, data)


@router.get("listAiAnswers", "/v1/seo/ai-visibility/answers", access=Access.member)
async def list_ai_answers(ctx: Context, data: schemas.ListAiAnswersInput) -> schemas.AiAnswerPage:
    """Stored AI answers with who was mentioned and what was cited.

    Newest first; answers of deleted prompts included. `mentioned` false with `competitorId`
    lists the gap answers (the competitor named, the brand not) behind close_ai_gap actions.
    `excerpt` is the text's first 300 characters."""
    return await service.list_answers(ctx.session, ctx.tenant.tenant_id, data)


@router.get(
    "getAiAnswer",
    "/v1/seo/ai-visibility/answers/{id}",
    access=Access.member,
    errors=[AiAnswerNotFound],
)
async def get_ai_answer(ctx: Context, data: schemas.AiAnswerIdInput) -> schemas.AiAnswerDetail:
    """One AI answer in full, with mention offsets, citations and the engine's search fan-out.

    The evidence for every AI visibility number: the text as the engine gave it (at most
    100,000 characters), each mention's [start, end) character offsets in it and an excerpt,
    the citations with their registrable domain and owner, the search queries the engine
    reports (OpenAI's web_search_call, Gemini's webSearchQueries, DataForSEO's fan-out), and
    `changes`: what changed against the same prompt's answer from the same engine in the run
    before (brands and cited domains added and dropped, a unified diff of the texts, and the
    engine's visibility for the prompt over each run's samples with Newcombe's interval:
    `real` when the brand's presence changed beyond sampling noise; 5 samples a run at least
    are needed to tell)."""
    return await service.get_answer(ctx.session, ctx.tenant.tenant_id, data.id)


@router.get("listAiSources", "/v1/seo/ai-visibility/sources", access=Access.member)
async def list_ai_sources(ctx: Context, data: schemas.ListAiSourcesInput) -> schemas.AiSourcePage:
    """Domains and URLs the AI engines cite for the tracked prompts: ours, competitors' and
    third parties'.

    Over the stored answers of live prompts in the window (`startDate` default 30 days before
    `endDate`, default today), `engine` and `promptId`; grouped by registrable domain or by URL
    (`groupBy`), filtered by `owner`; most cited first. `citation_share` is a source's share of
    all citations in the window (%), `prompts` the prompts it was cited for, `engines` its
    citations per engine, `change_pct` its change against the preceding window of equal length
    (null when it had none then). `category`: owned, competitor, ugc (forums, social, review
    sites), reference (encyclopedias, .gov, .edu) or other. Third-party sources cited where we
    are absent are outreach and content targets."""
    return await reports.sources(ctx.session, ctx.tenant.tenant_id, data)
