"""The Website Scan operations on a configuration's site profile: declarations only; the rules
live in profiles/service.py. Every member reads the site profile; editors refresh it."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.website_scan.errors import (
    ContentPurged,
    CrawlConfigNotFound,
    NoSnapshotToProfile,
    SiteProfileGenerating,
    SnapshotNotFound,
)
from contentplatform.website_scan.profiles import schemas
from contentplatform.website_scan.profiles import service as profiles

router = ProcedureRouter("websiteScan", tag="Website Scan")


@router.get(
    "getSiteProfile",
    "/v1/website-scan/configs/{id}/profile",
    access=Access.member,
    errors=[CrawlConfigNotFound],
)
async def get_site_profile(ctx: Context, data: schemas.ProfileConfigInput) -> schemas.SiteProfile:
    """Inferred site profile: business, products, audience, tone.

    A read-only suggestion (applying it to the brand voice is a Team and Settings action).
    Status `none`, with empty fields, until the first refresh; `generating`, then `ready` with
    the profile and `generated_at`, or `failed` with the reason in `error`."""
    return await profiles.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "refreshSiteProfile",
    "/v1/website-scan/configs/{id}/profile/refresh",
    access=Access.editor,
    errors=[
        CrawlConfigNotFound,
        SnapshotNotFound,
        ContentPurged,
        NoSnapshotToProfile,
        SiteProfileGenerating,
        InsufficientCredits,
    ],
)
async def refresh_site_profile(
    ctx: Context, data: schemas.RefreshProfileInput
) -> schemas.SiteProfile:
    """Re-infer the site profile from a snapshot.

    Reads up to 20 pages of the snapshot (nearest the start URL first, then the wordiest),
    in the background: the answer is the profile `generating`; poll getSiteProfile. Without
    `snapshotId`, the configuration's latest finished, non-partial snapshot (400 when it has
    none); a snapshot named must be a finished one of this configuration (404) whose content
    is kept (410). Holds `website_scan.profile` credits (10; 402 when short) and commits what
    the model's tokens cost, 1 per started 1,000, at least 1; a failed refresh costs nothing.
    409 while the profile is generating. With the default offline model the profile is read
    extractively from the pages (structured data, titles, descriptions, headings, the text's
    sentences)."""
    return await profiles.refresh(ctx.session, ctx.runtime, ctx.tenant.tenant_id, data)
