from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from contentplatform.core.procedures import ORGANIZATION_ID
from contentplatform.kit.schemas import MAX_PAGE, Input, Page, header
from contentplatform.kit.text import Identifier

TENANT_HEADER = "x-tenant-id"
TENANT_DESCRIPTION = (
    "Required. Whose blog to read: the tenant's id (`tenant_id` in system.whoami) or its "
    "organization's id (the `x-idp-org-id` of the other operations)."
)
# A tenant's id (a UUID) or an organization's id, which a UUID is a form of.
TenantRef = Annotated[str, StringConstraints(max_length=255, pattern=ORGANIZATION_ID)]


# --- inputs -----------------------------------------------------------------------------------


class ListBlogsInput(Input):
    tenant_id: TenantRef = header(TENANT_HEADER, TENANT_DESCRIPTION)
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(10, ge=1, le=50)


class GetBlogInput(Input):
    tenant_id: TenantRef = header(TENANT_HEADER, TENANT_DESCRIPTION)
    slug: Identifier = Field(min_length=1, max_length=200)


# --- outputs ----------------------------------------------------------------------------------


PLAIN = "Plain text: escape it to put it into HTML."


class BlogSummary(BaseModel):
    title: str = Field(description=PLAIN)
    slug: str
    excerpt: str = Field(
        description="The post's excerpt, or the start of its first paragraph when it has none. "
        + PLAIN
    )
    published_at: datetime
    url: str | None = Field(description="Where the post is live, when its target reported it.")


class BlogPage(Page[BlogSummary]):
    pass


class BlogSeo(BaseModel):
    title: str = Field(description="The SEO title, else the post's title. " + PLAIN)
    description: str = Field(description="The meta description, else the excerpt. " + PLAIN)
    canonical_url: str | None = Field(description="The URL where the post is live, if known.")


class Blog(BaseModel):
    title: str
    slug: str
    excerpt: str
    content_html: str = Field(description="Sanitized HTML: no scripts, styles or event handlers.")
    published_at: datetime
    updated_at: datetime
    url: str | None
    seo: BlogSeo
