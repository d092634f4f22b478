from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, header
from contentplatform.kit.text import Identifier

TENANT_HEADER = "x-tenant-id"
TENANT_DESCRIPTION = "Required. The id of the tenant whose blog to read."


# --- inputs -----------------------------------------------------------------------------------


class ListBlogsInput(Input):
    tenant_id: uuid.UUID = header(TENANT_HEADER, TENANT_DESCRIPTION)
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(10, ge=1, le=50)


class GetBlogInput(Input):
    tenant_id: uuid.UUID = header(TENANT_HEADER, TENANT_DESCRIPTION)
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
