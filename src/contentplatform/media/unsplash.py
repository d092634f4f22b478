"""Unsplash (https://unsplash.com/documentation), at the configured base URL.

Every request sends `Authorization: Client-ID <access key>` and `Accept-Version: v1`:
`GET /search/photos?query&page&per_page[&orientation]`, `GET /photos/:id`, and, when a photo is
imported, a GET of its `links.download_location` (Unsplash's download tracking, which its API
guidelines require; only on the API's own origin, so the key never goes elsewhere). Photos are
hotlinked (`urls.regular` to show, `urls.small` as the thumbnail), never copied, and never
chosen automatically. Each link to the photo or its photographer carries
`utm_source=<STOCK_UNSPLASH_APP_NAME>&utm_medium=referral`, and the credit reads "Photo by
<name> on Unsplash", as the guidelines ask.

Answers: 404 -> PhotoMissing (of a photo or its download; of a search, ProviderFailed); 401
(the key refused) -> ProviderFailed, not retryable; 403 with `X-Ratelimit-Remaining: 0` (how
Unsplash says it is rate limiting), 429, 5xx, timeouts and connection failures ->
ProviderFailed, retryable; anything else unexpected, or an answer that is not the JSON the API
documents -> ProviderFailed, not retryable.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import httpx

from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.kit.text import cleaned
from contentplatform.media.stock import (
    PhotoMissing,
    ProviderFailed,
    StockLicense,
    StockPage,
    StockPhoto,
    StockProvider,
    StockQuery,
)

LICENSE_URL = "https://unsplash.com/license"


def _text(value: object, limit: int) -> str | None:
    """A provider's text made fit to show (plain, one line, cut), or None."""
    if not isinstance(value, str):
        return None
    return cleaned(value, limit) or None


def _web_url(value: object) -> str | None:
    """An http(s) URL the provider gave, or None (a `javascript:` link is no link)."""
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        return None
    try:
        httpx.URL(value)
    except (httpx.InvalidURL, ValueError):
        return None
    return value if not any(c.isspace() for c in value) else None


def _object(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class Unsplash(StockProvider):
    name = "unsplash"
    label = "Unsplash"
    license_type = "unsplash"
    hotlink_required = True
    allows_automated_selection = False

    @classmethod
    def configured(cls, settings: Settings) -> bool:
        key = settings.stock_unsplash_access_key
        return key is not None and bool(key.get_secret_value().strip())

    @property
    def base(self) -> str:
        return self.settings.stock_unsplash_base_url.rstrip("/")

    @property
    def _headers(self) -> dict[str, str]:
        key = self.settings.stock_unsplash_access_key
        secret = key.get_secret_value().strip() if key is not None else ""
        return {
            "Authorization": f"Client-ID {secret}",
            "Accept-Version": "v1",
            "Accept": "application/json",
        }

    def referral(self, url: str | None) -> str | None:
        """`url` with the referral Unsplash asks every link back to carry."""
        if url is None:
            return None
        parts = urlsplit(url)
        query = [
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if key not in ("utm_source", "utm_medium")
        ]
        query += [("utm_source", self.settings.stock_unsplash_app_name), ("utm_medium", "referral")]
        return urlunsplit(parts._replace(query=urlencode(query)))

    async def _get(self, url: str, params: dict[str, str | int] | None = None) -> Any:
        try:
            response = await self.client.request("GET", url, headers=self._headers, params=params)
        except outbound.Refused as error:
            raise ProviderFailed(
                f"Unsplash may not be reached from here: {error}", retryable=False
            ) from None
        except outbound.TooLarge as error:
            raise ProviderFailed(f"Unsplash answered too much: {error}", retryable=False) from None
        except outbound.OutboundError as error:
            raise ProviderFailed(
                f"Unsplash could not be reached: {error}", retryable=True
            ) from None
        status = response.status
        if status == 404:
            raise PhotoMissing()
        if status == 401:
            raise ProviderFailed(
                "Unsplash refused this service's access key (401); check "
                "CONTENTPLATFORM_STOCK_UNSPLASH_ACCESS_KEY.",
                retryable=False,
            )
        if status == 429 or (
            status == 403 and response.headers.get("x-ratelimit-remaining", "").strip() == "0"
        ):
            raise ProviderFailed(
                "Unsplash is rate limiting this service; try again later.", retryable=True
            )
        if status >= 500:
            raise ProviderFailed(f"Unsplash failed ({status}); try again later.", retryable=True)
        if status != 200:
            raise ProviderFailed(f"Unsplash answered {status}.", retryable=False)
        try:
            return response.json()
        except ValueError:
            raise ProviderFailed(
                "Unsplash answered with something that is not JSON.", retryable=False
            ) from None

    def _photo(self, data: object) -> StockPhoto | None:
        """A photo of Unsplash's JSON, or None when it lacks what we need."""
        if not isinstance(data, dict):
            return None
        urls, links, user = _object(data, "urls"), _object(data, "links"), _object(data, "user")
        user_links = _object(user, "links")
        asset_id, regular, small = (
            data.get("id"),
            _web_url(urls.get("regular")),
            _web_url(urls.get("small")),
        )
        if not (isinstance(asset_id, str) and asset_id and regular and small):
            return None
        tags = data.get("tags")
        tags = tags if isinstance(tags, list) else []
        return StockPhoto(
            provider=self.name,
            asset_id=asset_id,
            url=regular,
            thumb_url=small,
            preview_url=regular,
            width=_number(data.get("width")),
            height=_number(data.get("height")),
            description=_text(data.get("description"), 2000),
            alt_description=_text(data.get("alt_description"), 1000),
            author_name=_text(user.get("name"), 255),
            author_url=self.referral(_web_url(user_links.get("html"))),
            source_url=self.referral(_web_url(links.get("html"))),
            tags=tuple(
                title
                for tag in tags
                if isinstance(tag, dict) and (title := _text(tag.get("title"), 50))
            ),
            download_location=_web_url(links.get("download_location")),
        )

    async def search(self, query: StockQuery) -> StockPage:
        params: dict[str, str | int] = {
            "query": query.query,
            "page": query.page,
            "per_page": query.per_page,
        }
        if query.orientation != "any":
            params["orientation"] = query.orientation
        try:
            body = await self._get(f"{self.base}/search/photos", params)
        except PhotoMissing:
            raise ProviderFailed("Unsplash answered 404 to a search.", retryable=False) from None
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise ProviderFailed("Unsplash answered a search without results.", retryable=False)
        photos = [photo for item in body["results"] if (photo := self._photo(item)) is not None]
        total = body.get("total")
        return StockPage(photos=photos, total=total if isinstance(total, int) and total >= 0 else 0)

    async def get(self, asset_id: str) -> StockPhoto:
        body = await self._get(f"{self.base}/photos/{quote(asset_id, safe='')}")
        photo = self._photo(body)
        if photo is None:
            raise ProviderFailed("Unsplash answered a photo without its URLs.", retryable=False)
        return photo

    async def track_download(self, photo: StockPhoto) -> None:
        location = photo.download_location
        if location is None:
            raise ProviderFailed(
                "Unsplash gave no download location for the photo, so its use cannot be "
                "reported as Unsplash requires.",
                retryable=False,
            )
        try:
            api, given = httpx.URL(self.base), httpx.URL(location)
        except (httpx.InvalidURL, ValueError):
            raise ProviderFailed("Unsplash's API address is not a URL.", retryable=False) from None
        if (given.scheme, given.host, given.port) != (api.scheme, api.host, api.port):
            # Our key goes to Unsplash's API alone, never to a host an answer names.
            raise ProviderFailed(
                "Unsplash's download location is not on its API's address.", retryable=False
            )
        await self._get(location)

    def license(self, photo: StockPhoto) -> StockLicense:
        return StockLicense(
            type=self.license_type,
            source_name=self.label,
            source_url=photo.source_url,
            attribution_required=True,
            attribution_text=self.attribution(photo),
            author_name=photo.author_name,
            author_url=photo.author_url,
            commercial=True,
            editorial_only=False,
            modification=True,
            notes=f"Unsplash License ({LICENSE_URL}): shown from Unsplash's URL, never copied, "
            "never chosen automatically.",
        )
