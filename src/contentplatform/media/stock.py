"""Stock photo providers: one small interface, one class per provider, one registry.

A provider searches, gets one photo, tracks a download (the call a provider's terms require
when a photo is used) and says the licence of a photo; two flags say how its photos may be
used: `hotlink_required` (show them from the provider's URL, never copy them) and
`allows_automated_selection` (whether software, an AI workflow's images step, may pick one by
itself, or only a person). Unsplash requires hotlinking and allows no automated selection. A
provider for Pexels is one more class in PROVIDERS.

Every request goes through the outbound guard (kit/outbound.py), with the operator's
allowances (OUTBOUND_ALLOW_*), the stock timeout and the response cap. The registry of
providers is providers.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from contentplatform.config import Settings
from contentplatform.kit import outbound


@dataclass(frozen=True)
class StockQuery:
    query: str
    page: int
    per_page: int
    orientation: str  # any | landscape | portrait | squarish


@dataclass(frozen=True)
class StockPhoto:
    """One photo as a provider describes it, its links already carrying the referral."""

    provider: str
    asset_id: str
    url: str  # the web-sized image to show (hotlinked)
    thumb_url: str
    preview_url: str
    width: int | None
    height: int | None
    description: str | None
    alt_description: str | None
    author_name: str | None
    author_url: str | None
    source_url: str | None
    tags: tuple[str, ...] = ()
    # Where the provider wants to hear of a download (Unsplash's links.download_location).
    download_location: str | None = None


@dataclass(frozen=True)
class StockPage:
    photos: list[StockPhoto]
    total: int


@dataclass(frozen=True)
class StockLicense:
    type: str
    source_name: str
    source_url: str | None
    attribution_required: bool
    attribution_text: str
    author_name: str | None
    author_url: str | None
    commercial: bool
    editorial_only: bool
    modification: bool
    notes: str | None = None

    def as_record(self) -> dict[str, Any]:
        """The licence as a media asset stores it."""
        return {
            "type": self.type,
            "source_name": self.source_name,
            "source_url": self.source_url,
            "attribution": {
                "required": self.attribution_required,
                "text": self.attribution_text,
                "author_name": self.author_name,
                "author_url": self.author_url,
            },
            "usage_rights": {
                "commercial": self.commercial,
                "editorial_only": self.editorial_only,
                "modification": self.modification,
            },
            "expires_at": None,
            "notes": self.notes,
        }


class ProviderFailed(Exception):
    """The provider could not answer (unreachable, 5xx, rate limited, our key refused, an
    answer that is not what its API says); `str()` is fit to show; `retryable` whether trying
    again later may help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class PhotoMissing(Exception):
    """The provider has no photo with that id."""


class StockProvider(ABC):
    """One provider, for one request: `async with` it, then call it."""

    name: ClassVar[str]
    label: ClassVar[str]
    license_type: ClassVar[str]
    hotlink_required: ClassVar[bool]
    allows_automated_selection: ClassVar[bool]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.client = outbound.GuardedClient(
            outbound.policy_of(
                settings,
                timeout=settings.stock_timeout_seconds,
                connect_timeout=min(5.0, settings.stock_timeout_seconds),
            )
        )

    async def __aenter__(self) -> StockProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    @classmethod
    @abstractmethod
    def configured(cls, settings: Settings) -> bool:
        """Whether this deployment has what the provider needs (an access key)."""

    @abstractmethod
    async def search(self, query: StockQuery) -> StockPage: ...

    @abstractmethod
    async def get(self, asset_id: str) -> StockPhoto: ...

    @abstractmethod
    async def track_download(self, photo: StockPhoto) -> None: ...

    @abstractmethod
    def license(self, photo: StockPhoto) -> StockLicense: ...

    def attribution(self, photo: StockPhoto) -> str:
        return f"Photo by {photo.author_name or 'an unknown photographer'} on {self.label}"
