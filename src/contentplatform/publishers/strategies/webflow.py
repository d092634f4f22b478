"""Webflow CMS collection items through the Data API v2.

Items are written to the staged collection (`POST /v2/collections/{id}/items`, `PATCH
.../items/{item_id}`) and then, in `publish` mode, published one by one with `POST
.../items/publish`. We use the staged endpoints rather than the `/live` ones because the live
endpoints change only what visitors see and leave the copy the site's editors work on behind;
writing the staged item first also means a publish that fails leaves an item the next try finds.

`draft` mode writes the staged item with `isDraft: true` (a site-wide publish skips drafts) and
takes any live copy down with `DELETE .../items/{item_id}/live`, as Webflow no longer does that
for a draft; `unpublish` does the same without new content.

The article's parts go into the collection's fields named by `fieldMapping` (Webflow's own
`name` and `slug` by default; the rich-text body field has no default). The featured image goes
to the Image field `featuredImage` names, as `{url, alt}`: Webflow copies the file from our
signed URL into its asset CDN. A hotlinked stock image (Unsplash), whose file must not be
copied, opens the body as a figure of the provider's URL with its attribution instead.

Inline images go into the rich-text body as figures of Webflow-hosted assets: the Data API's
asset upload (`POST /v2/sites/{siteId}/assets` with the file's name and MD5 `fileHash`, then the
file posted to the `uploadUrl` it answers with its `uploadDetails` form fields) gives the
`hostedUrl` the figure shows. Webflow's documentation promises hosting for Image fields given a
URL, not for images inside rich text, so the body never points at a signed URL of ours (which
expires). That needs the connection's `siteId`: an article with inline images and none fails
with the reason. A hotlinked stock image stays at the provider's URL. Each publish or update
uploads them again (Webflow keeps each as an asset).

Tags are not sent: Webflow keeps them as references to items of another collection. The title,
excerpt, SEO title and meta description are plain text, for the PlainText fields Webflow escapes
when it renders.

Duplicates: before every create the collection is searched for the slug, so a create whose
answer was lost (Ambiguous) is found and updated on the next try. Only an item with our slug and
our title is taken over; any other item already holding the slug is a RemoteConflict.

`targets()` reads the connection's collection (`GET /v2/collections/{id}`) for its fields:
their slugs, types and whether each is required, for `fieldMapping`.

Errors are Webflow's `{code, message, details}` bodies, mapped by status (429 with Retry-After).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import httpx
from pydantic import Field, field_validator, model_validator

from contentplatform.publishers.strategies import http
from contentplatform.publishers.strategies.base import (
    EVERY_CAPABILITY,
    Article,
    Collection,
    CollectionField,
    Invalid,
    Mode,
    Picture,
    Remote,
    RemoteConflict,
    RemoteNotFound,
    RemoteOptions,
    Result,
    Settings,
    Strategy,
    TargetConfig,
    TargetCredentials,
    TestResult,
    inline_figures,
    mask,
    parse_url,
    unpublished,
    with_inline_images,
)

TARGET = "Webflow"
DEFAULT_API_BASE_URL = "https://api.webflow.com"
# An apiBaseUrl that is not Webflow's API may answer 200 with an HTML page.
NOT_THE_API = f"{TARGET} did not answer with its Data API: is apiBaseUrl Webflow's API?"
# Webflow ids are 24 hexadecimal digits (MongoDB object ids).
_WEBFLOW_ID = re.compile(r"[0-9a-f]{24}")
_FIELD_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]*")


class FieldMapping(Settings):
    """Which collection field (by its slug) gets each part of the article."""

    title: str = "name"
    slug: str = "slug"
    content: str = Field(description="The rich-text field for the body, e.g. post-body.")
    excerpt: str | None = None
    seo_title: str | None = None
    meta_description: str | None = None
    featured_image: str | None = Field(
        default=None, description="An Image field for the featured image, e.g. main-image."
    )

    @field_validator("*")
    @classmethod
    def _field_slug(cls, value: str | None) -> str | None:
        if value is not None and not _FIELD_SLUG.fullmatch(value):
            raise ValueError(f"{value!r} is not a field slug (lowercase letters, digits, -)")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> FieldMapping:
        slugs = list(self.fields().values())
        if len(set(slugs)) != len(slugs):
            raise ValueError("each article part needs a field of its own")
        return self

    def fields(self) -> dict[str, str]:
        """Article part -> collection field slug, for the parts that are mapped."""
        parts = self.model_dump(exclude_none=True)
        return {part: str(slug) for part, slug in parts.items()}


class WebflowConfig(TargetConfig):
    collection_id: str
    # Only used for the account label in a connection test.
    site_id: str | None = None
    field_mapping: FieldMapping
    api_base_url: str = DEFAULT_API_BASE_URL
    # Where a published item can be read, e.g. https://www.example.com/blog/{slug}. Webflow's
    # API does not say (the collection's page path is the site's design), so without it the
    # result has no URL. Never requested by us, so not subject to the outbound check.
    public_url_pattern: str | None = None

    @field_validator("collection_id", "site_id")
    @classmethod
    def _webflow_id(cls, value: str | None) -> str | None:
        if value is not None and not _WEBFLOW_ID.fullmatch(value):
            raise ValueError("expected a Webflow id (24 hexadecimal digits)")
        return value

    @field_validator("api_base_url")
    @classmethod
    def _api_base_url(cls, value: str) -> str:
        parsed = parse_url(value)
        if parsed.query or parsed.fragment:
            raise ValueError("the API address may not have a query")
        return str(parsed).rstrip("/")

    @field_validator("public_url_pattern")
    @classmethod
    def _public_url_pattern(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "{slug}" not in value:
            raise ValueError("the pattern must contain {slug}")
        parse_url(value.replace("{slug}", "slug"))
        return value

    def urls(self) -> list[str]:
        return [self.api_base_url]


class WebflowCredentials(TargetCredentials):
    # A site API token (or OAuth token) with the CMS:read and CMS:write scopes.
    api_token: str = Field(min_length=1, repr=False)

    def hint(self) -> str:
        return mask(self.api_token)


class Webflow(Strategy[WebflowConfig, WebflowCredentials], type="webflow"):
    @cached_property
    def api(self) -> http.Api:
        token = self.credentials.api_token
        headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
        return http.Api(self.client, TARGET, f"{self.config.api_base_url}/v2", lambda: headers)

    @property
    def collection(self) -> str:
        return f"/collections/{self.config.collection_id}"

    async def test_connection(self) -> TestResult:
        """ok when the token may read the collection and every mapped field exists in it; what
        is wrong otherwise is in `warnings`. A refused token raises AuthFailed, a collection
        that is not there RemoteNotFound (the service reports them as a failed test)."""
        collection = (await self.api.call("GET", self.collection)).json()
        site_name = None
        if self.config.site_id:
            site = await self.api.call("GET", f"/sites/{self.config.site_id}")
            site_name = site.json().get("displayName")
        problems = self._mapping_problems(collection.get("fields") or [])
        name = collection.get("displayName")
        label = " / ".join(str(part) for part in (site_name, name) if part) or None
        return TestResult(
            ok=not problems, account_label=label, capabilities=EVERY_CAPABILITY, warnings=problems
        )

    async def targets(self) -> RemoteOptions:
        response = await self.api.call("GET", self.collection)
        collection = http.json_object(response, unexpected=NOT_THE_API)
        fields = [
            CollectionField(
                str(field["slug"]), str(field.get("type")), field.get("isRequired") is True
            )
            for field in collection.get("fields") or []
            if isinstance(field, dict) and field.get("slug")
        ]
        found = Collection(
            str(collection.get("id") or self.config.collection_id),
            str(collection.get("displayName") or ""),
            fields,
        )
        return RemoteOptions(collections=[found])

    async def publish(self, article: Article, mode: Mode) -> Result:
        found = await self.api.call(
            "GET", f"{self.collection}/items", params={"slug": article.slug}
        )
        items = [
            item
            for item in found.json().get("items") or []
            if (item.get("fieldData") or {}).get(self._field("slug")) == article.slug
        ]
        if items:
            existing = items[0]
            if (existing.get("fieldData") or {}).get(self._field("title")) != article.title:
                raise RemoteConflict(
                    f"The collection already has an item with the slug {article.slug!r} that was "
                    "not published from here; give the draft another slug."
                )
            # Our own item from a try whose answer was lost: finish it rather than copy it.
            return await self.update(Remote(external_id=str(existing["id"])), article, mode)
        created = await self.api.call(
            "POST",
            f"{self.collection}/items",
            json=self._item(article, mode, await self._figures(article)),
            creates=True,
        )
        # A new item cannot be live yet: nothing to take down in draft mode.
        return await self._settle(created.json(), article, mode, may_be_live=False)

    async def update(self, remote: Remote, article: Article, mode: Mode) -> Result:
        item = self._item(article, mode, await self._figures(article))
        updated = await self.api.call("PATCH", self._item_path(remote.external_id), json=item)
        return await self._settle(updated.json(), article, mode)

    async def unpublish(self, remote: Remote) -> Result:
        # Marked a draft first, so a later site-wide publish does not bring it back.
        updated = await self.api.call(
            "PATCH", self._item_path(remote.external_id), json={"isDraft": True}
        )
        await self._take_down(remote.external_id)
        return unpublished(remote.external_id, updated.json().get("lastUpdated"))

    async def _settle(
        self, item: dict[str, Any], article: Article, mode: Mode, *, may_be_live: bool = True
    ) -> Result:
        """Publish the written item (`publish`) or take its live copy down (`draft`)."""
        item_id = str(item["id"])
        if mode == "draft":
            if may_be_live:
                await self._take_down(item_id)
            return Result(
                external_id=item_id,
                external_url=None,
                remote_version=item.get("lastUpdated"),
                status="draft",
                published_at=None,
            )
        answer = await self.api.call(
            "POST", f"{self.collection}/items/publish", json={"itemIds": [item_id]}
        )
        body = answer.json()
        if item_id not in (body.get("publishedItemIds") or []):
            errors = body.get("errors") or "no reason given"
            raise Invalid(f"{TARGET} did not publish the item: {str(errors)[: http.MAX_MESSAGE]}")
        url = None
        if self.config.public_url_pattern:
            url = self.config.public_url_pattern.replace("{slug}", article.slug)
        return Result(
            external_id=item_id,
            external_url=url,
            remote_version=item.get("lastUpdated"),
            status="published",
            # The publish answer carries no item; it went live now.
            published_at=datetime.now(UTC),
        )

    async def _take_down(self, item_id: str) -> None:
        with contextlib.suppress(RemoteNotFound):  # not live: already down
            await self.api.call("DELETE", f"{self._item_path(item_id)}/live")

    async def _figures(self, article: Article) -> list[str]:
        """The inline images as figures of Webflow-hosted copies (hotlinked: the provider's)."""
        return await inline_figures(article, self._hosted)

    async def _hosted(self, picture: Picture, data: bytes) -> str:
        """The hosted URL of a new asset of the site holding the picture's file."""
        if not self.config.site_id:
            raise Invalid(
                f"{TARGET}: the article has inline images, which Webflow hosts as site assets; "
                "set the connection's siteId."
            )
        filename = f"cp-{picture.content_hash[:16]}-{picture.filename}"
        digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
        response = await self.api.call(
            "POST",
            f"/sites/{self.config.site_id}/assets",
            json={"fileName": filename, "fileHash": digest},
            creates=True,
        )
        asset = http.json_object(response, unexpected=NOT_THE_API)
        upload_url, details = asset.get("uploadUrl"), asset.get("uploadDetails")
        hosted = asset.get("hostedUrl")
        if not (isinstance(upload_url, str) and isinstance(details, dict)):
            raise Invalid(NOT_THE_API)
        if not isinstance(hosted, str):
            raise Invalid(NOT_THE_API)
        # The storage's form upload: its fields first, the file last (httpx encodes it).
        form = httpx.Request(
            "POST",
            upload_url,
            data={str(k): str(v) for k, v in details.items()},
            files={"file": (filename, data, picture.mime_type)},
        )
        await http.call(
            self.client,
            "POST",
            upload_url,
            target=TARGET,
            headers={"content-type": form.headers["content-type"]},
            content=form.read(),
            creates=True,
        )
        return hosted

    def _item(self, article: Article, mode: Mode, figures: list[str]) -> dict[str, Any]:
        picture = article.featured_image
        content, image = with_inline_images(article.html, figures), None
        if picture is not None and picture.hotlinked:
            content = f"{picture.figure()}\n{content}"
        elif picture is not None:
            image = {"url": picture.url, "alt": picture.alt}
        values = {
            "title": article.title,
            "slug": article.slug,
            "content": content,
            "featured_image": image,
            "excerpt": article.excerpt,
            "seo_title": article.seo_title,
            "meta_description": article.meta_description,
        }
        field_data = {
            field: values[part]
            for part, field in self.config.field_mapping.fields().items()
            if values[part] is not None
        }
        return {"isArchived": False, "isDraft": mode == "draft", "fieldData": field_data}

    def _mapping_problems(self, fields: list[dict[str, Any]]) -> list[str]:
        by_slug = {str(field.get("slug")): field for field in fields}
        mapped = self.config.field_mapping.fields()
        problems = [
            f"The collection has no field {slug!r} (mapped from {part})."
            for part, slug in mapped.items()
            if slug not in by_slug
        ]
        content = by_slug.get(mapped["content"])
        if content is not None and content.get("type") != "RichText":
            problems.append(
                f"The field {mapped['content']!r} is {content.get('type')}, not RichText: "
                "the article's HTML would show as text."
            )
        image = by_slug.get(mapped.get("featured_image", ""))
        if image is not None and image.get("type") != "Image":
            problems.append(
                f"The field {mapped['featured_image']!r} is {image.get('type')}, not Image: "
                "it cannot hold the featured image."
            )
        problems += [
            f"The collection requires the field {slug!r}, which no article part is mapped to."
            for slug, field in by_slug.items()
            if field.get("isRequired") and slug not in mapped.values()
        ]
        return problems

    def _field(self, part: str) -> str:
        return self.config.field_mapping.fields()[part]

    def _item_path(self, item_id: str) -> str:
        return f"{self.collection}/items/{item_id}"
