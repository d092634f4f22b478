"""Shopify blog articles through the Admin GraphQL API.

Requests go to `{storeUrl}/admin/api/{API_VERSION}/graphql.json` with the app's access token in
`X-Shopify-Access-Token`. Articles are written with `articleCreate` / `articleUpdate`; taking one
down is `articleUpdate` with `isPublished: false` (Shopify keeps it as a hidden article).

GraphQL answers 200 to most failures, so a 2xx response is read again: `userErrors` are
validation (Invalid, NOT_FOUND on the id is RemoteNotFound), top-level `errors` carry a code
(THROTTLED is RateLimited with a wait computed from the query cost and the bucket's restore
rate, ACCESS_DENIED is a missing scope).

`targets()` lists the shop's blogs with the `blogs` query (250 a page, the most Shopify serves,
following `pageInfo.endCursor`): the ids `blogId` in the config names. It needs a content scope
(`read_content`, or the write scope, which includes it).

The featured image goes as the article's `image` (`{url, altText}`): Shopify fetches it from our
signed URL into its own CDN when the article is written. A hotlinked stock image (Unsplash),
whose file must not be copied, opens the body as a figure of the provider's URL with its
attribution instead.

Inline images: each is created as a file of the shop with `fileCreate` (`originalSource`: our
signed URL, which Shopify fetches into its CDN), then read back with `node(id)` until its
`fileStatus` is READY (at most FILE_POLLS times, FILE_POLL_SECONDS apart), and shown in the body
as a figure of the file's `image.url` (base.with_inline_images places them); a hotlinked one by
the provider's URL. Each publish or update creates them again (Shopify keeps each as a file).

The title and the SEO tags are plain text, as Shopify keeps them (themes escape them); the summary
is HTML to Shopify, so the excerpt goes escaped.

Duplicates: before every create the article is looked up by handle (our slug) in the blog, so a
create whose answer was lost (Ambiguous) is found and updated on the next try instead of being
made twice. An article is only taken over when it carries our mark (a `content_platform.draft_id`
metafield naming the draft): a merchant's own article that happens to have the same handle is
never overwritten; that is a RemoteConflict asking for another slug.
"""

from __future__ import annotations

import asyncio
import math
import re
from datetime import datetime
from functools import cached_property
from typing import Any

from pydantic import Field, field_validator

from contentplatform.kit import text
from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    EVERY_CAPABILITY,
    MAX_OPTION_PAGES,
    Ambiguous,
    Article,
    AuthFailed,
    Blog,
    Invalid,
    Mode,
    Picture,
    PublishError,
    RateLimited,
    Remote,
    RemoteConflict,
    RemoteNotFound,
    RemoteOptions,
    Result,
    Strategy,
    TargetConfig,
    TargetCredentials,
    TestResult,
    Transient,
    inline_figures,
    mask,
    parse_url,
    unpublished,
    with_inline_images,
)

# Pinned so a field Shopify renames in a later version cannot change our requests underneath
# us. 2025-04 or later is needed for the `handle` and `blog_id` filters of `articles`.
API_VERSION = "2026-01"
TARGET = "Shopify"
# Our mark on the articles we create, so a handle lookup only ever takes over our own article.
MARK_NAMESPACE = "content_platform"
MARK_KEY = "draft_id"
# The scopes that allow writing articles (either one is enough).
WRITE_SCOPES = {"write_content", "write_online_store_pages"}

ARTICLE_FIELDS = "id handle isPublished publishedAt updatedAt blog { handle }"
USER_ERRORS = "userErrors { field message code }"

CONTEXT_QUERY = f"""
query PublishContext($blogId: ID!, $articleQuery: String!) {{
  shop {{ name primaryDomain {{ url }} }}
  blog(id: $blogId) {{ handle }}
  articles(first: 1, query: $articleQuery) {{
    nodes {{
      {ARTICLE_FIELDS}
      metafield(namespace: "{MARK_NAMESPACE}", key: "{MARK_KEY}") {{ value }}
    }}
  }}
}}
"""

CREATE_MUTATION = f"""
mutation CreateArticle($article: ArticleCreateInput!) {{
  articleCreate(article: $article) {{ article {{ {ARTICLE_FIELDS} }} {USER_ERRORS} }}
}}
"""

UPDATE_MUTATION = f"""
mutation UpdateArticle($id: ID!, $article: ArticleUpdateInput!) {{
  articleUpdate(id: $id, article: $article) {{ article {{ {ARTICLE_FIELDS} }} {USER_ERRORS} }}
}}
"""

# Inline images: a file of the shop made from our URL, then read until Shopify has processed it.
FILE_CREATE_MUTATION = f"""
mutation CreateFile($files: [FileCreateInput!]!) {{
  fileCreate(files: $files) {{
    files {{ id fileStatus ... on MediaImage {{ image {{ url }} }} }} {USER_ERRORS}
  }}
}}
"""
FILE_QUERY = """
query FileStatus($id: ID!) {
  node(id: $id) { ... on MediaImage { id fileStatus image { url } } }
}
"""
FILE_POLLS = 10
FILE_POLL_SECONDS = 0.5

TEST_QUERY = """
query ConnectionTest($blogId: ID!) {
  shop { name myshopifyDomain primaryDomain { url } }
  blog(id: $blogId) { id title handle }
  currentAppInstallation { accessScopes { handle } }
}
"""

BLOGS_QUERY = """
query Blogs($after: String) {
  blogs(first: 250, after: $after) {
    nodes { id handle title }
    pageInfo { hasNextPage endCursor }
  }
}
"""

_BLOG_GID = re.compile(r"gid://shopify/Blog/(\d+)")


def _store_address(value: str) -> str:
    """`value` as `scheme://host[:port]` when it is an http(s) URL with nothing after the host."""
    parsed = parse_url(value)
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
        raise ValueError("give the store's address only, without a path or query")
    return str(parsed.copy_with(path="/")).rstrip("/")


class ShopifyConfig(TargetConfig):
    # https://{shop}.myshopify.com: the Admin API answers on the myshopify domain only.
    store_url: str
    # gid://shopify/Blog/123 (a bare 123 is accepted and completed).
    blog_id: str
    # The article's author; the shop's name when not given (Shopify requires one).
    author_name: str | None = Field(default=None, min_length=1, max_length=255)

    @field_validator("store_url")
    @classmethod
    def _store_url(cls, value: str) -> str:
        return _store_address(value)

    @field_validator("blog_id")
    @classmethod
    def _blog_id(cls, value: str) -> str:
        value = value.strip()
        if value.isdigit():
            value = f"gid://shopify/Blog/{value}"
        if not _BLOG_GID.fullmatch(value):
            raise ValueError("expected a blog id like gid://shopify/Blog/123")
        return value

    def urls(self) -> list[str]:
        return [self.store_url]


class ShopifyCredentials(TargetCredentials):
    # An Admin API access token (shpat_...) with the write_content scope.
    access_token: str = Field(min_length=1, repr=False)

    def hint(self) -> str:
        return mask(self.access_token)


class Shopify(Strategy[ShopifyConfig, ShopifyCredentials], type="shopify"):
    @cached_property
    def api(self) -> http.Api:
        headers = {
            "X-Shopify-Access-Token": self.credentials.access_token,
            "accept": "application/json",
        }
        endpoint = f"{self.config.store_url}/admin/api/{API_VERSION}/graphql.json"
        return http.Api(self.client, TARGET, endpoint, lambda: headers)

    async def test_connection(self) -> TestResult:
        """ok when the token works, the blog exists and the app may write articles; what is
        wrong otherwise is in `warnings`. A refused token raises AuthFailed (the service
        reports any PublishError as a failed test)."""
        data = await self._graphql(TEST_QUERY, {"blogId": self.config.blog_id})
        shop = data.get("shop") or {}
        warnings = []
        if not data.get("blog"):
            warnings.append(f"The shop has no blog {self.config.blog_id}.")
        installation = data.get("currentAppInstallation") or {}
        scopes = {scope.get("handle") for scope in installation.get("accessScopes") or []}
        if not scopes & WRITE_SCOPES:
            warnings.append(
                "The access token may not write articles: give the app the write_content scope."
            )
        return TestResult(
            ok=not warnings,
            account_label=shop.get("name"),
            capabilities=EVERY_CAPABILITY,
            warnings=warnings,
        )

    async def publish(self, article: Article, mode: Mode) -> Result:
        context = await self._context(article.slug)
        nodes = (context.get("articles") or {}).get("nodes") or []
        if nodes:
            existing = nodes[0]
            if (existing.get("metafield") or {}).get("value") != str(article.draft_id):
                raise RemoteConflict(
                    f"The blog already has an article with the handle {article.slug!r} that was "
                    "not published from here; give the draft another slug."
                )
            # Our own article from a try whose answer was lost: finish it rather than copy it.
            return await self._update(str(existing["id"]), article, mode, context)
        author = self.config.author_name or (context.get("shop") or {}).get("name") or "Staff"
        fields = {
            **self._article_input(article, mode, await self._figures(article)),
            "blogId": self.config.blog_id,
            "author": {"name": author},
        }
        fields["metafields"].append(
            {
                "namespace": MARK_NAMESPACE,
                "key": MARK_KEY,
                "type": "single_line_text_field",
                "value": str(article.draft_id),
            }
        )
        data = await self._graphql(CREATE_MUTATION, {"article": fields}, creates=True)
        return self._result(self._written(data, "articleCreate"), context)

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        context = await self._context(article.slug)
        return await self._update(remote.external_id, article, mode, context)

    async def unpublish(self, remote: Remote) -> Result:
        data = await self._graphql(
            UPDATE_MUTATION, {"id": remote.external_id, "article": {"isPublished": False}}
        )
        written = self._written(data, "articleUpdate")
        return unpublished(str(written["id"]), written.get("updatedAt"))

    async def targets(self) -> RemoteOptions:
        blogs: list[Blog] = []
        after = None
        for _ in range(MAX_OPTION_PAGES):
            found = (await self._graphql(BLOGS_QUERY, {"after": after})).get("blogs") or {}
            blogs += [
                Blog(str(node["id"]), str(node.get("handle") or ""), str(node.get("title") or ""))
                for node in found.get("nodes") or []
                if isinstance(node, dict) and node.get("id")
            ]
            page = found.get("pageInfo") or {}
            after = page.get("endCursor")
            if not (page.get("hasNextPage") and after):
                break
        return RemoteOptions(blogs=blogs)

    async def _update(
        self, article_id: str, article: Article, mode: Mode, context: dict[str, Any]
    ) -> Result:
        # A changed slug moves the article; the redirect keeps links to the old address working.
        figures = await self._figures(article)
        fields = {**self._article_input(article, mode, figures), "redirectNewHandle": True}
        data = await self._graphql(UPDATE_MUTATION, {"id": article_id, "article": fields})
        return self._result(self._written(data, "articleUpdate"), context)

    async def _context(self, handle: str) -> dict[str, Any]:
        """The shop's public domain, the blog's handle (for the article's URL) and any article
        with `handle` in the blog."""
        blog_number = self.config.blog_id.rsplit("/", 1)[-1]
        search = f'blog_id:{blog_number} AND handle:"{_quoted(handle)}"'
        data = await self._graphql(
            CONTEXT_QUERY, {"blogId": self.config.blog_id, "articleQuery": search}
        )
        if not data.get("blog"):
            raise RemoteNotFound(f"{TARGET}: the shop has no blog {self.config.blog_id}.")
        return data

    async def _figures(self, article: Article) -> list[str]:
        """The inline images as figures of the shop's own copies (hotlinked: the provider's);
        the shop fetches a file from our signed URL, so its bytes are not sent."""
        return await inline_figures(article, lambda picture, _data: self._hosted(picture))

    async def _hosted(self, picture: Picture) -> str:
        """The CDN URL of the shop's copy of the picture, made from our signed URL."""
        image = {"originalSource": picture.url, "contentType": "IMAGE", "alt": picture.alt}
        data = await self._graphql(FILE_CREATE_MUTATION, {"files": [image]})
        payload = data.get("fileCreate") or {}
        errors = payload.get("userErrors") or []
        if errors:
            raise Invalid(f"{TARGET}: {str(errors[0].get('message'))[: http.MAX_MESSAGE]}")
        files = payload.get("files") or []
        found = files[0] if files and isinstance(files[0], dict) else {}
        for _ in range(FILE_POLLS):
            status = found.get("fileStatus")
            url = (found.get("image") or {}).get("url")
            if status == "READY" and isinstance(url, str):
                return url
            if status == "FAILED" or not found.get("id"):
                raise Invalid(f"{TARGET} could not take the image {picture.filename}.")
            await asyncio.sleep(FILE_POLL_SECONDS)
            found = (await self._graphql(FILE_QUERY, {"id": found["id"]})).get("node") or {}
        raise Transient(f"{TARGET} had not processed the image {picture.filename} in time.")

    def _article_input(self, article: Article, mode: Mode, figures: list[str]) -> dict[str, Any]:
        seo = [
            ("title_tag", article.seo_title),
            ("description_tag", article.meta_description),
        ]
        picture = article.featured_image
        body = with_inline_images(article.html, figures)
        if picture is not None and picture.hotlinked:
            body = f"{picture.figure()}\n{body}"
        image = {}
        if picture is not None and not picture.hotlinked:
            image = {"image": {"url": picture.url, "altText": picture.alt}}
        return image | {
            "title": article.title,
            "handle": article.slug,
            "body": body,
            # An empty summary lets the theme show the start of the body, and clears an old one.
            "summary": text.escaped(article.excerpt) if article.excerpt else "",
            "tags": list(article.tags),
            "isPublished": mode == "publish",
            # The `global` title and description tags are what themes put in <title> and meta.
            "metafields": [
                {
                    "namespace": "global",
                    "key": key,
                    "type": "single_line_text_field",
                    "value": value,
                }
                for key, value in seo
                if value
            ],
        }

    def _result(self, written: dict[str, Any], context: dict[str, Any]) -> Result:
        published = bool(written.get("isPublished"))
        domain = ((context.get("shop") or {}).get("primaryDomain") or {}).get("url")
        blog_handle = (written.get("blog") or context.get("blog") or {}).get("handle")
        url = published_at = None
        if published and domain and blog_handle:
            # The theme's standard address of an article: /blogs/{blog}/{article}.
            url = f"{str(domain).rstrip('/')}/blogs/{blog_handle}/{written['handle']}"
        if published and written.get("publishedAt"):
            published_at = datetime.fromisoformat(str(written["publishedAt"]))
        return Result(
            external_id=str(written["id"]),
            external_url=url,
            remote_version=written.get("updatedAt"),
            status="published" if published else "draft",
            published_at=published_at,
        )

    def _written(self, data: dict[str, Any], mutation: str) -> dict[str, Any]:
        """The article a mutation wrote, or its userErrors as a typed error."""
        payload = data.get(mutation) or {}
        errors = payload.get("userErrors") or []
        gone = any(error.get("code") == "NOT_FOUND" for error in errors)
        if gone and mutation == "articleUpdate":
            raise RemoteNotFound(f"{TARGET}: {_user_errors(errors)}")
        if errors:
            raise Invalid(f"{TARGET} refused the article: {_user_errors(errors)}")
        article = payload.get("article")
        if not isinstance(article, dict):
            raise RemoteNotFound(f"{TARGET} returned no article from {mutation}.")
        return article

    async def _graphql(
        self, document: str, variables: dict[str, Any], *, creates: bool = False
    ) -> dict[str, Any]:
        response = await self.api.call(
            "POST", json={"query": document, "variables": variables}, creates=creates
        )
        try:
            body = response.json()
        except ValueError:
            kind = Ambiguous if creates else Transient
            raise kind(f"{TARGET} answered with something other than JSON.") from None
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors:
            raise _top_level_error(errors, body, creates=creates)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise Invalid(f"{TARGET} answered without data.")
        return data


def _top_level_error(errors: Any, body: dict[str, Any], *, creates: bool) -> PublishError:
    if not isinstance(errors, list):  # Shopify's REST-style `{"errors": "message"}`
        return Invalid(f"{TARGET}: {str(errors)[: http.MAX_MESSAGE]}")
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    code = (first.get("extensions") or {}).get("code")
    message = f"{TARGET}: {str(first.get('message') or code or 'an error')[: http.MAX_MESSAGE]}"
    if code == "THROTTLED":
        return RateLimited(message, retry_after=_throttle_wait(body))
    if code == "ACCESS_DENIED":
        return AuthFailed(message)
    if code == "INTERNAL_SERVER_ERROR":
        return (Ambiguous if creates else Transient)(message)
    return Invalid(message)


def _throttle_wait(body: dict[str, Any]) -> float:
    """Seconds until the cost bucket holds enough points for the query that was refused."""
    cost = (body.get("extensions") or {}).get("cost") or {}
    status = cost.get("throttleStatus") or {}
    try:
        missing = float(cost["requestedQueryCost"]) - float(status["currentlyAvailable"])
        rate = float(status["restoreRate"])
    except (KeyError, TypeError, ValueError):
        return 1.0
    if rate <= 0:
        return 1.0
    return float(max(1, math.ceil(missing / rate)))


def _user_errors(errors: list[dict[str, Any]]) -> str:
    described = []
    for error in errors:
        field = error.get("field") or []
        where = ".".join(str(part) for part in field if part != "article")
        described.append(f"{where}: {error.get('message')}" if where else str(error.get("message")))
    return "; ".join(described)[: http.MAX_MESSAGE]


def _quoted(value: str) -> str:
    """`value` safe inside a double-quoted term of Shopify's search syntax."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
