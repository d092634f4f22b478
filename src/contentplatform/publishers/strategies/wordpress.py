"""WordPress through its REST API (v2), signed in with an Application Password.

Posts are created at `{siteUrl}/wp-json/wp/v2/posts` and updated at `.../posts/{id}`; taking a
post down makes it a draft again. WordPress has no idempotency key, so every create first looks
for a post of ours with the article's slug (`?slug=&status=any&context=edit`) and updates it
when found: a retry after an ambiguous create (a timeout, a 5xx) then updates the post the lost
try made instead of adding a second one. "Of ours" means its content carries the draft's marker
comment, so a post someone wrote in WordPress with the same slug is never taken over (ours is
created beside it, and WordPress gives a published one a `-2` slug).

WordPress reads a post's title and excerpt as HTML (themes print them as they are), so both go
escaped: a title "Tom & Jerry <3" shows as written and never becomes markup.

`targets()` lists the site's categories and tags (`/categories`, `/tags`) and the users who may
write posts (`/users?who=authors`, which needs edit_posts; without `who` WordPress shows only
users with published posts), 100 a page, following `X-WP-TotalPages`: the ids `categories`,
`tags` and `authorId` in the config name.

The featured image is uploaded to the media library (`POST /media`, the file as the body with
its `Content-Disposition` filename), its alt text and caption (with the attribution its licence
requires) set on it, and named as the post's `featured_media`. Its filename carries the
image's content hash (`cp-<hash>-<name>`), and the library is searched for it first, so a
republish or a retry reuses the upload instead of adding a copy. A hotlinked stock image
(Unsplash, whose files must not be copied) is not uploaded: it opens the post's content as a
figure of the provider's URL with its attribution. A post without a featured image is sent
`featured_media: 0`, which clears one an earlier version had. Inline images are uploaded the
same way (found again by their hash) and shown in the content as figures of the library's
`source_url` (base.with_inline_images places them); hotlinked ones by the provider's URL.

Not sent: the article's tags (WordPress wants term ids, which it would take a lookup and maybe a
create per tag to get; `tags` in the config gives fixed ones), the SEO title and meta
description (core WordPress has no fields for them; SEO plugins add their own).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from functools import cached_property
from typing import Any
from urllib.parse import quote

from pydantic import ConfigDict, Field, PositiveInt

from contentplatform.kit import text
from contentplatform.kit.outbound import Response
from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    MAX_OPTION_PAGES,
    Article,
    Choice,
    Invalid,
    Mode,
    Picture,
    Remote,
    RemoteOptions,
    RemoteStatus,
    Result,
    SiteAddress,
    Strategy,
    TargetConfig,
    TargetCredentials,
    TestResult,
    marker,
    mask,
    unpublished,
    with_inline_images,
)

TARGET = "WordPress"
# A site without the REST API (or a siteUrl that is not a WordPress site) answers 200 with
# an HTML page.
NOT_THE_API = (
    f"{TARGET} did not answer with its REST API: is siteUrl the address of a WordPress site?"
)
# What a user may do with posts, as WordPress names it; reported by test_connection.
CAPABILITIES = ("edit_posts", "publish_posts", "edit_published_posts", "edit_others_posts")


class WordPressConfig(TargetConfig):
    site_url: SiteAddress
    categories: list[PositiveInt] = Field(default_factory=list)
    tags: list[PositiveInt] = Field(default_factory=list)
    author_id: PositiveInt | None = None

    def urls(self) -> list[str]:
        return [str(self.site_url)]


class WordPressCredentials(TargetCredentials):
    model_config = ConfigDict(hide_input_in_errors=True)

    username: str = Field(min_length=1)
    # As WordPress shows it ("abcd EFGH 1234 ..."); it ignores the spaces.
    application_password: str = Field(min_length=1, repr=False)

    def hint(self) -> str:
        return f"{self.username} {mask(self.application_password)}"


class WordPress(Strategy[WordPressConfig, WordPressCredentials], type="wordpress"):
    @cached_property
    def api(self) -> http.Api:
        pair = f"{self.credentials.username}:{self.credentials.application_password}"
        headers = {
            "authorization": f"Basic {base64.b64encode(pair.encode()).decode()}",
            "accept": "application/json",
        }
        site = str(self.config.site_url).rstrip("/")
        return http.Api(self.client, TARGET, f"{site}/wp-json/wp/v2", lambda: headers)

    async def test_connection(self) -> TestResult:
        response = await self.api.call("GET", "/users/me", params={"context": "edit"})
        me = http.json_object(response, unexpected=NOT_THE_API)
        granted = me.get("capabilities")
        granted = granted if isinstance(granted, dict) else {}
        capabilities = [name for name in CAPABILITIES if granted.get(name) is True]
        warnings = []
        if "edit_posts" not in capabilities:
            warnings.append("This user cannot create posts (it lacks edit_posts).")
        elif "publish_posts" not in capabilities:
            warnings.append(
                "This user can save drafts but not publish them (it lacks publish_posts)."
            )
        elif "edit_published_posts" not in capabilities:
            warnings.append(
                "This user cannot update or take down a post once it is published "
                "(it lacks edit_published_posts)."
            )
        label = me.get("name") or me.get("slug")
        return TestResult(
            ok="edit_posts" in capabilities,
            account_label=str(label) if label else None,
            capabilities=capabilities,
            warnings=warnings,
        )

    async def publish(self, article: Article, mode: Mode) -> Result:
        ours = await self._find_ours(article)
        fields = self._fields(
            article, mode, await self._featured_media(article), await self._figures(article)
        )
        if ours is not None:
            return await self._save(ours, fields)
        response = await self.api.call("POST", "/posts", json=fields, creates=True)
        return _result(http.json_object(response, unexpected=NOT_THE_API))

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        fields = self._fields(
            article, mode, await self._featured_media(article), await self._figures(article)
        )
        return await self._save(remote.external_id, fields)

    async def unpublish(self, remote: Remote) -> Result:
        result = await self._save(remote.external_id, {"status": "draft"})
        return unpublished(result.external_id, result.remote_version, result.external_url)

    async def targets(self) -> RemoteOptions:
        return RemoteOptions(
            categories=await self._choices("/categories"),
            tags=await self._choices("/tags"),
            authors=await self._choices("/users", who="authors"),
        )

    async def _choices(self, path: str, **query: str) -> list[Choice]:
        """Every item of a list route, as {id, name}, a page of 100 at a time."""
        found: list[Choice] = []
        for page in range(1, MAX_OPTION_PAGES + 1):
            params: dict[str, str | int] = {"per_page": 100, "page": page, "_fields": "id,name"}
            params.update(query)
            response = await self.api.call("GET", path, params=params)
            items = http.json_of(response, unexpected=NOT_THE_API)
            if not isinstance(items, list):
                raise Invalid(NOT_THE_API)
            found += [
                Choice(item["id"], str(item.get("name") or ""))
                for item in items
                if isinstance(item, dict) and isinstance(item.get("id"), int)
            ]
            if page >= _total_pages(response):
                break
        return found

    async def _find_ours(self, article: Article) -> str | None:
        """The id of the post an earlier try made for this draft, if there is one."""
        response = await self.api.call(
            "GET",
            "/posts",
            params={"slug": article.slug, "status": "any", "context": "edit", "per_page": 100},
        )
        found = http.json_of(response, unexpected=NOT_THE_API)
        if not isinstance(found, list):
            raise Invalid(NOT_THE_API)
        for post in found:
            content = post.get("content") if isinstance(post, dict) else None
            raw = content.get("raw") if isinstance(content, dict) else None
            if isinstance(raw, str) and marker(article) in raw:
                return str(post["id"])
        return None

    async def _save(self, post_id: str, fields: dict[str, Any]) -> Result:
        response = await self.api.call("POST", f"/posts/{quote(post_id, safe='')}", json=fields)
        return _result(http.json_object(response, unexpected=NOT_THE_API))

    async def _featured_media(self, article: Article) -> int:
        """The media library's id of the article's featured image, uploaded unless an earlier
        try did; 0 when it has none, or one that must stay hotlinked."""
        picture = article.featured_image
        if picture is None or picture.data is None:
            return 0
        return int((await self._uploaded(picture, picture.data))["id"])

    async def _figures(self, article: Article) -> list[str]:
        """The inline images as figures of their library copies (hotlinked: the provider's)."""
        figures = []
        for picture in article.inline_images:
            src = picture.url
            if picture.data is not None:
                src = str((await self._uploaded(picture, picture.data))["source_url"])
            figures.append(picture.figure(src))
        return figures

    async def _uploaded(self, picture: Picture, data: bytes) -> dict[str, Any]:
        """The library item of the picture (`id`, `source_url`), uploaded unless it is there."""
        filename = f"cp-{picture.content_hash[:16]}-{picture.filename}"
        response = await self.api.call(
            "GET",
            "/media",
            params={"search": filename.rsplit(".", 1)[0], "context": "edit", "per_page": 10},
        )
        found = http.json_of(response, unexpected=NOT_THE_API)
        for item in found if isinstance(found, list) else []:
            source = item.get("source_url") if isinstance(item, dict) else None
            if isinstance(source, str) and picture.content_hash[:16] in source:
                return {"id": int(item["id"]), "source_url": source}
        response = await self.api.call(
            "POST",
            "/media",
            content=data,
            headers={
                "content-type": picture.mime_type,
                "content-disposition": f'attachment; filename="{quote(filename)}"',
            },
            creates=True,
        )
        media = http.json_object(response, unexpected=NOT_THE_API)
        if not isinstance(media.get("id"), int):
            raise Invalid(NOT_THE_API)
        details = {"alt_text": picture.alt, "caption": picture.caption_html() or ""}
        await self.api.call("POST", f"/media/{media['id']}", json=details)
        source = media.get("source_url")
        if not isinstance(source, str) or not source:
            raise Invalid(NOT_THE_API)
        return {"id": int(media["id"]), "source_url": source}

    def _fields(
        self, article: Article, mode: Mode, featured_media: int, figures: list[str]
    ) -> dict[str, Any]:
        content = with_inline_images(article.html, figures)
        if article.featured_image is not None and article.featured_image.hotlinked:
            content = f"{article.featured_image.figure()}\n{content}"
        fields: dict[str, Any] = {
            "title": text.escaped(article.title),
            "content": f"{marker(article)}\n{content}",
            "featured_media": featured_media,
            # Empty lets WordPress derive one from the content, as it does for its own posts.
            "excerpt": text.escaped(article.excerpt) if article.excerpt else "",
            "slug": article.slug,
            "status": "publish" if mode == "publish" else "draft",
        }
        if self.config.categories:
            fields["categories"] = list(self.config.categories)
        if self.config.tags:
            fields["tags"] = list(self.config.tags)
        if self.config.author_id is not None:
            fields["author"] = self.config.author_id
        return fields


def _result(post: dict[str, Any]) -> Result:
    if "id" not in post:
        raise Invalid(NOT_THE_API)
    published = post.get("status") == "publish"
    status: RemoteStatus = "published" if published else "draft"
    link, modified, date = post.get("link"), post.get("modified_gmt"), post.get("date_gmt")
    return Result(
        external_id=str(post["id"]),
        external_url=link if isinstance(link, str) else None,
        remote_version=modified if isinstance(modified, str) else None,
        status=status,
        published_at=_gmt(date) if published and isinstance(date, str) else None,
    )


def _total_pages(response: Response) -> int:
    try:
        return int(response.headers.get("x-wp-totalpages") or 1)
    except ValueError:
        return 1


def _gmt(text: str) -> datetime | None:
    """WordPress's `*_gmt` dates ("2024-05-01T10:00:00") are UTC without saying so."""
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        return None
