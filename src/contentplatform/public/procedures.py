"""The public blog feed: no token; the tenant is named by the x-tenant-id header."""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.public import schemas, service
from contentplatform.public.errors import BlogNotFound, PostNotFound

router = ProcedureRouter("public", tag="Public")

FEED_RULES = (
    "No token is needed. `x-tenant-id` names the tenant: its id (`tenant_id` in "
    "system.whoami) or its organization's id (the `x-idp-org-id` the other operations take). "
    "Only published posts of that tenant appear; an unknown tenant is 404. Requests are rate "
    "limited per client address (429 TOO_MANY_REQUESTS with Retry-After)."
)


@router.get(
    "listBlogs", "/api/blogs", access=Access.public, description=FEED_RULES, errors=[BlogNotFound]
)
async def list_blogs(ctx: Context, data: schemas.ListBlogsInput) -> schemas.BlogPage:
    """Published posts of a tenant, newest first (the public blog feed)."""
    return await service.list_blogs(ctx.session, data)


@router.get(
    "getBlog",
    "/api/blogs/{slug}",
    access=Access.public,
    description=FEED_RULES + " A slug that is not a published post of the tenant is 404.",
    errors=[BlogNotFound, PostNotFound],
)
async def get_blog(ctx: Context, data: schemas.GetBlogInput) -> schemas.Blog:
    """One published post by its slug, with its sanitized HTML."""
    return await service.get_blog(ctx.session, data)
