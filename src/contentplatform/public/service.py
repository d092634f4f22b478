"""The public blog feed: a tenant's published drafts, and nothing else. Never commits.

Titles, excerpts and the SEO title and description are plain text (kit/text.py), made so again
here because this is where they reach strangers' pages: a site that renders the feed escapes them
as text; `content_html` is the one field that is HTML.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import html
from contentplatform.drafts import publication as draft_publication
from contentplatform.drafts.models import Draft
from contentplatform.kit import errors, text
from contentplatform.kit.schemas import offset_of
from contentplatform.public import schemas
from contentplatform.public.errors import BlogNotFound, PostNotFound
from contentplatform.tenants import service as tenants

# How much of the first paragraph stands in for a missing excerpt.
LEAD_CHARACTERS = 300


async def list_blogs(session: AsyncSession, query: schemas.ListBlogsInput) -> schemas.BlogPage:
    """The tenant's published posts, newest publication first."""
    tenant_id = await _require_tenant(session, query.tenant_id)
    rows, total = await draft_publication.published_page(
        session, tenant_id, query.limit, offset_of(query.page, query.limit)
    )
    return schemas.BlogPage(
        data=[_summary(row) for row in rows], total=total, page=query.page, limit=query.limit
    )


async def get_blog(session: AsyncSession, query: schemas.GetBlogInput) -> schemas.Blog:
    tenant_id = await _require_tenant(session, query.tenant_id)
    found = await draft_publication.published_by_slug(session, tenant_id, query.slug)
    draft = errors.require(found, PostNotFound, repr(query.slug))
    summary = _summary(draft)
    seo_title = _text(draft.seo_meta.get("seo_title"))
    seo_description = _text(draft.seo_meta.get("meta_description"))
    return schemas.Blog(
        **summary.model_dump(),
        # Sanitized on every write already; again here, because this is the one place our
        # HTML reaches strangers' browsers, whatever a future write path forgets.
        content_html=html.sanitize(_published_content(draft)),
        updated_at=draft.updated_at,
        seo=schemas.BlogSeo(
            title=seo_title or summary.title,
            description=seo_description or summary.excerpt,
            canonical_url=draft.published_url,
        ),
    )


async def _require_tenant(session: AsyncSession, ref: str) -> uuid.UUID:
    """The id of the tenant `ref` names (its id or its organization's). Unknown and suspended
    tenants answer alike, so the feed tells nobody which exist."""
    tenant_id = await tenants.active_tenant(session, ref)
    if tenant_id is None:
        raise BlogNotFound(f"There is no blog for tenant {ref}.")
    return tenant_id


def _summary(draft: Draft) -> schemas.BlogSummary:
    return schemas.BlogSummary(
        title=_text(draft.title),
        slug=draft_publication.slug_of(draft),
        excerpt=_text(draft.excerpt) or _text(_lead(_published_content(draft))),
        # Publishing always dates a draft; one marked published by other means shows its last
        # change rather than failing the whole feed.
        published_at=draft.published_at or draft.updated_at,
        url=draft.published_url,
    )


def _published_content(draft: Draft) -> str:
    """The content as it is published: no Sources list naming the tenant's files (drafts
    generated before citations moved to the provenance have one)."""
    return html.without_private_citations(draft.content)


def _text(value: object) -> str:
    """`value` as plain text; "" when it is not a string."""
    return text.plain_text(value) if isinstance(value, str) else ""


def _lead(content: str) -> str:
    """The first paragraph's text, cut at a word boundary when long."""
    text = html.first_paragraph(content)
    if len(text) <= LEAD_CHARACTERS:
        return text
    return text[:LEAD_CHARACTERS].rsplit(" ", 1)[0].rstrip(" ,;:.") + "…"
