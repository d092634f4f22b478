"""Ghost through its Admin API (v5), with a custom integration's Admin API key.

Every request carries a JWT minted for it (HS256 with the key's hex secret, `kid` the key's id,
`aud` "/admin/", valid for 5 minutes) and `Accept-Version: v5.0`. Posts are sent as HTML
(`?source=html`) inside an HTML card, so Ghost keeps our markup as it is instead of converting
it to its editor's blocks. Ghost refuses an update that does not carry the post's current
`updated_at` (409 UPDATE_COLLISION): an update sends the one we last saw, and when someone saved
the post in Ghost since, reads the post again and writes once more.

Ghost has no idempotency key, so every create first looks for a post of ours and updates it when
found: a retry after an ambiguous create (a timeout, a 5xx) then updates the post the lost try
made instead of adding a second one. A post of ours is one whose footer code injection carries
the draft's marker comment (Ghost keeps no comment inside an HTML card), found by a filter on it
(`codeinjection_foot:~'...'`), not by its slug: Ghost may have given ours another one (`rss`,
`ghost` and `amp` become `rss-post`..., and a post someone wrote in Ghost with the same slug
makes ours `-2`). Such a post of theirs is never taken over. Updates leave the code injection as
it is, and the slug too: Ghost gives a post sent a slug other than its own a fresh one, so
sending ours again would move a post Ghost named `rss-post` or `-2` to another URL at every
update (a slug changes on our side only until the draft is first published, and a slug someone
sets in Ghost stays).

`targets()` lists the site's tags and staff users (`/tags/`, `/users/`), 100 a page (Ghost 6
serves no more, and `limit=all` no longer), following `meta.pagination.next`.

The title, excerpt, meta title and description and tags go as plain text: Ghost keeps them as
text and escapes them in its pages. Tags are clipped to the 191 characters Ghost takes.

The featured image is uploaded (`POST /images/upload/`, multipart, `purpose=image`) and the
URL Ghost answers with becomes the post's `feature_image`, with `feature_image_alt` and
`feature_image_caption` (HTML: the caption and the attribution its licence requires, author and
source linked). Its filename carries the image's content hash, so a post whose feature image is
already that upload is not sent the file again; the rest of it is the image's own name made
ASCII and short (Ghost writes it to disk as sent, and a name too long for the file system is
refused). Ghost takes no AVIF: such an image is sent as WebP, encoded again. A hotlinked stock
image (Unsplash) is never uploaded: Ghost takes the provider's URL as `feature_image` as it is.
Without a featured image the post's is cleared. Inline images are uploaded the same way and
shown in the HTML card as figures of the URLs Ghost answers (base.with_inline_images places
them); hotlinked ones by the provider's URL. Ghost's Admin API cannot list uploads, so each
publish or update uploads them again (Ghost keeps each as a file of its own, `-1`, `-2`... after
its name).
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from functools import cached_property
from typing import Any
from urllib.parse import quote

import httpx
import jwt
from pydantic import ConfigDict, Field, field_validator

from contentplatform.kit.outbound import Response
from contentplatform.media import images
from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    MAX_OPTION_PAGES,
    Article,
    Choice,
    Invalid,
    Mode,
    Picture,
    Remote,
    RemoteConflict,
    RemoteOptions,
    RemoteStatus,
    Result,
    SiteAddress,
    Strategy,
    TargetConfig,
    TargetCredentials,
    TestResult,
    inline_figures,
    marker,
    mask,
    unpublished,
    with_inline_images,
)
from contentplatform.storage import paths

TARGET = "Ghost"
# A URL that is not a Ghost site's answers 200 with an HTML page.
NOT_THE_API = (
    f"{TARGET} did not answer with its Admin API: is adminUrl the address of a Ghost site?"
)
API_VERSION = "v5.0"
# Seconds; Ghost refuses a token issued longer ago than this (whatever its `exp` says).
TOKEN_LIFETIME = 5 * 60
# Ghost refuses longer values (422); an over-long excerpt should not stop a post going out.
MAX_LENGTHS = {
    "custom_excerpt": 300,
    "meta_title": 300,
    "meta_description": 500,
    "feature_image_alt": 191,
    "tag": 191,
}
# The image types Ghost takes; another (AVIF) is sent as WebP.
GHOST_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp", "image/svg+xml")
_KEY = re.compile(r"(?P<id>[0-9a-f]+):(?P<secret>(?:[0-9a-f]{2})+)")


class GhostConfig(TargetConfig):
    # The site's address, as Ghost shows it beside the Admin API key ("API URL").
    admin_url: SiteAddress

    def urls(self) -> list[str]:
        return [str(self.admin_url)]


class GhostCredentials(TargetCredentials):
    model_config = ConfigDict(hide_input_in_errors=True)

    admin_api_key: str = Field(repr=False)

    @field_validator("admin_api_key")
    @classmethod
    def _key_form(cls, key: str) -> str:
        if not _KEY.fullmatch(key.strip()):
            raise ValueError(
                "an Admin API key has the form id:secret (both hex), as Ghost shows it "
                "under Settings > Integrations"
            )
        return key.strip()

    def hint(self) -> str:
        return mask(self.admin_api_key)


class Ghost(Strategy[GhostConfig, GhostCredentials], type="ghost"):
    @cached_property
    def api(self) -> http.Api:
        # Also accept the address of Ghost's admin screens (https://site/ghost/).
        site = str(self.config.admin_url).rstrip("/").removesuffix("/ghost")
        return http.Api(self.client, TARGET, f"{site}/ghost/api/admin", self._headers)

    async def test_connection(self) -> TestResult:
        response = await self.api.call("GET", "/site/")
        site = http.json_object(response, unexpected=NOT_THE_API).get("site")
        title = site.get("title") if isinstance(site, dict) else None
        # Ghost serves /site/ without a key: reading a post is what proves the key works.
        await self.api.call("GET", "/posts/", params={"limit": 1, "fields": "id"})
        return TestResult(
            ok=True,
            account_label=str(title) if title else None,
            # An integration's key may do anything with posts; reading one proved it is valid.
            capabilities=["read_posts", "edit_posts", "publish_posts"],
        )

    async def publish(self, article: Article, mode: Mode) -> Result:
        ours = await self._find_ours(article)
        if ours is not None:
            fields = _fields(article, mode, await self._figures(article)) | (
                await self._feature_image(article, ours)
            )
            return await self._save(str(ours["id"]), fields, ours["updated_at"])
        fields = (
            _fields(article, mode, await self._figures(article))
            | await self._feature_image(article, None)
            | {"slug": article.slug, "codeinjection_foot": marker(article)}
        )
        response = await self.api.call(
            "POST", "/posts/", params={"source": "html"}, json={"posts": [fields]}, creates=True
        )
        return _result(_post(response))

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        current = None
        if article.featured_image is not None and article.featured_image.data is not None:
            current = await self._read(remote.external_id)
        fields = _fields(article, mode, await self._figures(article)) | (
            await self._feature_image(article, current)
        )
        return await self._save(remote.external_id, fields, remote.remote_version)

    async def _feature_image(
        self, article: Article, current: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The post's feature image fields: the upload the post already shows when it is this
        image (`current`, the post as Ghost has it), else a new upload; None to clear it."""
        picture = article.featured_image
        if picture is None:
            return {"feature_image": None, "feature_image_alt": None, "feature_image_caption": None}
        url = picture.url
        if picture.data is not None:
            shown = (current or {}).get("feature_image")
            if isinstance(shown, str) and picture.content_hash[:16] in shown:
                url = shown
            else:
                url = await self._upload(picture, picture.data)
        return {
            "feature_image": url,
            "feature_image_alt": _clip(picture.alt, MAX_LENGTHS["feature_image_alt"]) or None,
            "feature_image_caption": picture.caption_html(),
        }

    async def _figures(self, article: Article) -> list[str]:
        """The inline images as figures of their uploads (hotlinked: the provider's URL)."""
        return await inline_figures(article, self._upload)

    async def _upload(self, picture: Picture, data: bytes) -> str:
        filename, mime_type = paths.safe_filename(picture.filename), picture.mime_type
        if mime_type not in GHOST_IMAGE_TYPES:
            try:
                data = await images.off_loop(images.as_webp, data)
            except images.ImageError as error:
                raise Invalid(f"{picture.filename}: {error}") from None
            filename, mime_type = f"{filename.rsplit('.', 1)[0]}.webp", "image/webp"
        filename = f"cp-{picture.content_hash[:16]}-{filename}"
        # httpx encodes the multipart body; the guarded client sends it.
        encoded = httpx.Request(
            "POST",
            "http://upload.invalid/",
            files={"file": (filename, data, mime_type)},
            data={"purpose": "image", "ref": filename},
        )
        response = await self.api.call(
            "POST",
            "/images/upload/",
            content=encoded.read(),
            headers={"content-type": encoded.headers["content-type"]},
            creates=True,
        )
        uploaded = http.json_object(response, unexpected=NOT_THE_API).get("images")
        url = uploaded[0].get("url") if isinstance(uploaded, list) and uploaded else None
        if not isinstance(url, str):
            raise Invalid(NOT_THE_API)
        return url

    async def unpublish(self, remote: Remote) -> Result:
        result = await self._save(remote.external_id, {"status": "draft"}, remote.remote_version)
        return unpublished(result.external_id, result.remote_version, result.external_url)

    async def targets(self) -> RemoteOptions:
        return RemoteOptions(tags=await self._browse("tags"), authors=await self._browse("users"))

    async def _browse(self, resource: str) -> list[Choice]:
        """Every `resource` (tags, users) as {id, name}, a page of 100 at a time."""
        found: list[Choice] = []
        page = 1
        for _ in range(MAX_OPTION_PAGES):
            params: dict[str, str | int] = {"limit": 100, "page": page, "fields": "id,name"}
            response = await self.api.call("GET", f"/{resource}/", params=params)
            body = http.json_object(response, unexpected=NOT_THE_API)
            items = body.get(resource)
            if not isinstance(items, list):
                raise Invalid(NOT_THE_API)
            found += [
                Choice(str(item["id"]), str(item.get("name") or ""))
                for item in items
                if isinstance(item, dict) and item.get("id")
            ]
            meta = body.get("meta")
            pagination = meta.get("pagination") if isinstance(meta, dict) else None
            following = pagination.get("next") if isinstance(pagination, dict) else None
            if not isinstance(following, int):
                break
            page = following
        return found

    async def _find_ours(self, article: Article) -> dict[str, Any] | None:
        """The post an earlier try made for this draft, if there is one."""
        mark = marker(article)
        # The marker's text between its comment's brackets: hex, hyphens, `:` and `=`, nothing
        # that needs escaping in NQL's quotes.
        text = mark.removeprefix("<!--").removesuffix("-->").strip()
        params: dict[str, str | int] = {
            "filter": f"codeinjection_foot:~'{text}'",
            "fields": "id,updated_at,codeinjection_foot,feature_image",
            "limit": 5,
        }
        response = await self.api.call("GET", "/posts/", params=params)
        posts = http.json_object(response, unexpected=NOT_THE_API).get("posts")
        if not isinstance(posts, list):
            raise Invalid(NOT_THE_API)
        for post in posts:
            injected = post.get("codeinjection_foot") if isinstance(post, dict) else None
            if isinstance(injected, str) and mark in injected and "updated_at" in post:
                return dict(post)
        return None

    async def _save(self, post_id: str, fields: dict[str, Any], updated_at: str | None) -> Result:
        """Writes `fields` over the post whose `updated_at` we last saw (None: not known)."""
        if updated_at is None:
            updated_at = (await self._read(post_id))["updated_at"]
        try:
            return _result(await self._put(post_id, fields, updated_at))
        except RemoteConflict:
            # Saved in Ghost since we read it: ours is the newer version, so write it once more
            # over the latest. A second collision means someone is saving it right now.
            latest = await self._read(post_id)
            return _result(await self._put(post_id, fields, latest["updated_at"]))

    async def _read(self, post_id: str) -> dict[str, Any]:
        return _post(await self.api.call("GET", f"/posts/{quote(post_id, safe='')}/"))

    async def _put(self, post_id: str, fields: dict[str, Any], updated_at: str) -> dict[str, Any]:
        response = await self.api.call(
            "PUT",
            f"/posts/{quote(post_id, safe='')}/",
            params={"source": "html"},
            json={"posts": [fields | {"updated_at": updated_at}]},
        )
        return _post(response)

    def _token(self) -> str:
        """A JWT for one request, as Ghost's Admin API wants it."""
        now = int(time.time())
        claims = {"iat": now, "exp": now + TOKEN_LIFETIME, "aud": "/admin/"}
        key_id, secret = self.credentials.admin_api_key.split(":", 1)
        return jwt.encode(claims, bytes.fromhex(secret), algorithm="HS256", headers={"kid": key_id})

    def _headers(self) -> dict[str, str]:
        return {
            "authorization": f"Ghost {self._token()}",
            "accept-version": API_VERSION,
            "accept": "application/json",
        }


def _fields(article: Article, mode: Mode, figures: list[str]) -> dict[str, Any]:
    body = with_inline_images(article.html, figures)
    return {
        "title": article.title,
        # An HTML card: Ghost keeps what is inside as it is.
        "html": f"<!--kg-card-begin: html-->\n{body}\n<!--kg-card-end: html-->",
        "status": "published" if mode == "publish" else "draft",
        "custom_excerpt": _clip(article.excerpt, MAX_LENGTHS["custom_excerpt"]),
        "meta_title": _clip(article.seo_title, MAX_LENGTHS["meta_title"]),
        "meta_description": _clip(article.meta_description, MAX_LENGTHS["meta_description"]),
        "canonical_url": article.canonical_url,
        "tags": [{"name": _clip(tag, MAX_LENGTHS["tag"])} for tag in article.tags],
    }


def _clip(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _result(post: dict[str, Any]) -> Result:
    published = post.get("status") == "published"
    status: RemoteStatus = "published" if published else "draft"
    url, updated, date = post.get("url"), post.get("updated_at"), post.get("published_at")
    return Result(
        external_id=str(post["id"]),
        external_url=url if isinstance(url, str) else None,
        remote_version=updated if isinstance(updated, str) else None,
        status=status,
        published_at=_time(date) if published and isinstance(date, str) else None,
    )


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _post(response: Response) -> dict[str, Any]:
    """The one post of a `{"posts": [...]}` answer."""
    posts = http.json_object(response, unexpected=NOT_THE_API).get("posts")
    if not (isinstance(posts, list) and posts and isinstance(posts[0], dict)):
        raise Invalid(NOT_THE_API)
    post: dict[str, Any] = posts[0]
    if "id" not in post or "updated_at" not in post:
        raise Invalid(NOT_THE_API)
    return post
