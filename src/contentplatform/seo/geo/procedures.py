"""Declarations only: seo.geoReadiness, listGeoPages, getLlmsTxt, generateLlmsTxt."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import Empty
from contentplatform.seo.geo import schemas, service
from contentplatform.seo.geo.errors import NoCompleteScan, NotAnIndexablePage
from contentplatform.website_scan.errors import SnapshotNotFound

router = ProcedureRouter("seo", tag="SEO")


@router.get(
    "geoReadiness",
    "/v1/seo/geo/readiness",
    access=Access.member,
    errors=[NoCompleteScan, SnapshotNotFound],
)
async def geo_readiness(ctx: Context, data: schemas.ReadinessInput) -> schemas.GeoReadiness:
    """How ready the site is for AI answers: AI crawlers' access, llms.txt, structured data and
    the pages' citability, from a website scan (never fetched live).

    The scan: `snapshotId`, else the newest complete scan of the site (the SEO profile's
    site_url, else the selected Search Console property; any scan when neither is set); 409
    when there is none. `crawler_access`: robots.txt as the scan found it, read per AI agent
    with protego (RFC 9309) for the site's root: GPTBot, OAI-SearchBot, ChatGPT-User,
    ClaudeBot, Claude-SearchBot, Claude-User, PerplexityBot, Perplexity-User, Google-Extended,
    Applebot-Extended, CCBot, Bingbot. Blocking a search or user-fetch agent keeps the site out
    of that engine's answers (an `error` issue); blocking a training-only token is a policy
    choice (a `notice`); a robots.txt that could not be read leaves access unknown. A scan made
    before robots.txt was kept with scans says `not_evaluated`. `llms_txt`: /llms.txt as the
    scan found it, checked against llmstxt.org's format. `structured_data`: the indexable pages
    carrying JSON-LD, by @type. `citability`: the indexable pages' scores (seo.listGeoPages).
    `score` weighs the four as its description says."""
    return await service.readiness(ctx.session, ctx.tenant.tenant_id, data)


@router.get("listGeoPages", "/v1/seo/geo/pages", access=Access.member)
async def list_geo_pages(ctx: Context, data: schemas.ListGeoPagesInput) -> schemas.GeoPagePage:
    """Each indexable page of the newest complete scan with its citability for AI answers:
    the score (0-100), the factors behind it and what would raise it.

    The rubric is deterministic and reads what the scan kept (main text, headings, JSON-LD,
    links); no model: answer in the first paragraph's two sentences (20), a question heading
    (10), FAQPage or HowTo JSON-LD (15; an Article type 8), a list or table (10), sources or
    figures (10), dateModified within a year of the scan (10; two years 5), a named author or
    publisher (10), 300 words (5), three H2 sections (10; two 5). `clicks_28d`: Search
    Console's clicks of the page in the last 28 stored days (null without Search Console);
    `ai_citations_28d` is null until AI visibility tracks answers. No scan yet: an empty list
    (`snapshot_id` null)."""
    return await service.list_pages(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getLlmsTxt", "/v1/seo/geo/llms-txt", access=Access.member)
async def get_llms_txt(ctx: Context, data: Empty) -> schemas.LlmsTxt:
    """The llms.txt generated here (null `content` until seo.generateLlmsTxt), and the one the
    site serves as the newest complete scan found it (`live`: whether it differs)."""
    return await service.get_llms_txt(ctx.session, ctx.tenant.tenant_id)


@router.post(
    "generateLlmsTxt",
    "/v1/seo/geo/llms-txt",
    access=Access.editor,
    errors=[NoCompleteScan, SnapshotNotFound, NotAnIndexablePage],
)
async def generate_llms_txt(ctx: Context, data: schemas.GenerateLlmsTxtInput) -> schemas.LlmsTxt:
    """Write an llms.txt for the site from a scan, per llmstxt.org, replacing the stored one.

    An H1 with the SEO profile's brand name (else the home page's title), a blockquote
    `summary` (default the home page's meta description), then H2 sections of
    `- [title](url): description` links, descriptions from the pages' meta descriptions. Only
    the scan's indexable pages (200, HTML, no noindex, their own canonical), in order of depth
    then URL: `includeUrls` first (400 naming one that is not such a page), none matching
    `excludeUrlPatterns` (globs over the path). `sections` sort pages by the first rule whose
    pattern matches their path (pages matching none are left out); without them, a section per
    top-level path and `Pages` for the root's. `optionalSection`: pages deeper than 2 links go
    to `## Optional`, what a model may skip. At most `maxLinks` links. Deterministic, no
    credits. Publish the file at the site's root; the next scan's readiness confirms it."""
    return await service.generate_llms_txt(ctx.session, ctx.tenant.tenant_id, data)
