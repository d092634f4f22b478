"""Inputs and answers of the media operations: inputs camelCase on the wire (the licence object
too), the records (MediaAsset, its licence, an attachment, a stock result) with the catalog's
snake_case field names."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from contentplatform.kit.schemas import MAX_PAGE, Input, Page, Record
from contentplatform.kit.text import Identifier, Name, PlainMultiLine, PlainText

MimeType = Literal["image/jpeg", "image/png", "image/webp", "image/gif", "image/avif", "video/mp4"]
IMAGE_TYPES: tuple[MimeType, ...] = (
    "image/jpeg",
    "image/png",
    "image/webp",
    "image/gif",
    "image/avif",
)
MIB = 1024 * 1024
IMAGE_MAX_BYTES = 20 * MIB
VIDEO_MAX_BYTES = 100 * MIB
# The most bytes of each type (the service's MAX_UPLOAD_BYTES caps every type too).
MAX_BYTES: dict[str, int] = {
    **dict.fromkeys(IMAGE_TYPES, IMAGE_MAX_BYTES),
    "video/mp4": VIDEO_MAX_BYTES,
}

Kind = Literal["image", "video"]
Storage = Literal["internal", "hotlink"]
Source = Literal["upload", "stock", "ai_generated"]
Role = Literal["featured", "inline", "gallery"]
LicenseType = Literal[
    "owned",
    "ai_generated",
    "royalty_free",
    "cc0",
    "cc_by",
    "cc_by_sa",
    "unsplash",
    "pexels",
    "editorial",
    "rights_managed",
]
LicenseStatus = Literal["unverified", "valid", "expiring", "expired"]
Orientation = Literal["any", "landscape", "portrait", "squarish"]

MAX_TAGS = 30
MAX_TAG_LENGTH = 50
MAX_TAG_FILTERS = 10
# A stock provider's id of a photo: letters, digits, `_` and `-` (Unsplash's are 11 such).
STOCK_ASSET_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_WEB_URL = re.compile(r"https?://[^\s/?#]+[^\s]*", re.IGNORECASE)


def _web_url(value: str | None) -> str | None:
    """An http(s) URL (a link shown beside an image: never `javascript:` or `data:`)."""
    if value is not None and not _WEB_URL.fullmatch(value):
        raise ValueError("must be an http or https URL")
    return value


def _tags(value: list[str] | None) -> list[str] | None:
    """Tags trimmed, blank ones refused, repeats (ignoring case) dropped, order kept."""
    if value is None:
        return None
    kept: dict[str, str] = {}
    for tag in value:
        tag = " ".join(tag.split())
        if not tag:
            raise ValueError("a tag must not be blank")
        kept.setdefault(tag.lower(), tag)
    return list(kept.values())


Tag = Annotated[Name, Field(min_length=1, max_length=MAX_TAG_LENGTH)]
WebUrl = Annotated[Identifier, Field(min_length=1, max_length=2048), AfterValidator(_web_url)]
Filename = Annotated[Identifier, Field(min_length=1, max_length=255)]


# --- the licence --------------------------------------------------------------------------------


class AttributionInput(Input):
    required: bool | None = Field(None, description="Whether a credit must be shown with it.")
    text: PlainText | None = Field(
        None, max_length=500, description="The credit as shown, e.g. `Photo by Ada on Unsplash`."
    )
    author_name: Name | None = Field(None, max_length=255)
    author_url: WebUrl | None = None


class UsageRightsInput(Input):
    commercial: bool | None = Field(None, description="false: no commercial use (attach is 409).")
    editorial_only: bool | None = None
    modification: bool | None = None


class LicenseInput(Input):
    """A licence, or the part of it to change: fields left out stay as they are (in
    `attribution` and `usageRights` too); null clears one."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "cc_by",
                    "sourceName": "Wikimedia Commons",
                    "sourceUrl": "https://commons.wikimedia.org/wiki/File:Watering_can.jpg",
                    "attribution": {
                        "required": True,
                        "text": "Watering can by Ada, CC BY 4.0",
                        "authorName": "Ada",
                    },
                    "usageRights": {"commercial": True, "modification": True},
                    "expiresAt": None,
                }
            ]
        }
    )

    type: LicenseType | None = None
    source_name: Name | None = Field(None, max_length=255)
    source_url: WebUrl | None = None
    attribution: AttributionInput | None = None
    usage_rights: UsageRightsInput | None = None
    expires_at: datetime | None = Field(None, description="Null: the licence does not expire.")
    notes: PlainMultiLine | None = Field(None, max_length=2000)


class Attribution(BaseModel):
    required: bool = False
    text: str | None = None
    author_name: str | None = None
    author_url: str | None = None


class UsageRights(BaseModel):
    commercial: bool | None = None
    editorial_only: bool | None = None
    modification: bool | None = None


class MediaLicense(BaseModel):
    type: LicenseType | None = None
    source_name: str | None = None
    source_url: str | None = None
    attribution: Attribution = Field(default_factory=Attribution)
    usage_rights: UsageRights = Field(default_factory=UsageRights)
    expires_at: datetime | None = None
    notes: str | None = None


# --- inputs -----------------------------------------------------------------------------------

_ALT = "Alternative text for readers who cannot see the image (plain text)."
_CAPTION = "Shown under the image (plain text; line breaks kept)."
_TAGS = (
    f"At most {MAX_TAGS}, each 1-{MAX_TAG_LENGTH} characters (plain text); repeats, ignoring "
    "case, are dropped."
)


class CreateMediaUploadUrlInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"filename": "watering-can.jpg", "mimeType": "image/jpeg", "bytes": 482133}
            ]
        }
    )

    filename: Filename
    mime_type: MimeType
    bytes: int = Field(
        ge=1,
        le=VIDEO_MAX_BYTES,
        description="The size of what will be uploaded: at most 20971520 (20 MiB) for images, "
        "104857600 (100 MiB) for video/mp4.",
    )


class StockChoice(Input):
    provider: Identifier = Field(min_length=1, max_length=40, examples=["unsplash"])
    asset_id: Identifier = Field(
        min_length=1,
        max_length=100,
        description="The provider's id of the photo (a search result's `asset_id`).",
        examples=["Dwu85P9SOIk"],
    )


class ConfirmMediaUploadInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "storagePath": "org_a/media/3fa85f64-5717-4562-b3fc-2c963f66afa6/"
                    "watering-can.jpg",
                    "filename": "watering-can.jpg",
                    "mimeType": "image/jpeg",
                    "altText": "A green watering can on a garden path",
                    "tags": ["watering", "tools"],
                    "license": {"type": "owned"},
                }
            ]
        }
    )

    storage_path: Identifier | None = Field(
        None,
        min_length=1,
        max_length=1024,
        description="Where the bytes were PUT (media.createUploadUrl's `storage_path`); "
        "required unless `stock` is given.",
    )
    filename: Filename | None = Field(
        None, description="Required with storagePath; with stock, `<provider>-<assetId>.jpg`."
    )
    mime_type: MimeType | None = Field(
        None, description="Required with storagePath; checked against the file's bytes."
    )
    stock: StockChoice | None = Field(
        None, description="A stock search result to import instead of an upload."
    )
    alt_text: PlainText | None = Field(None, max_length=1000, description=_ALT)
    caption: PlainMultiLine | None = Field(None, max_length=2000, description=_CAPTION)
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description=_TAGS)
    license: LicenseInput | None = Field(
        None,
        description="The licence (a stock import has its provider's, which only an admin may "
        "change).",
    )

    _tag_list = field_validator("tags")(_tags)


class MediaIdInput(Input):
    id: uuid.UUID


class ListMediaInput(Input):
    search: str | None = Field(
        None,
        max_length=255,
        description="Matches part of the title, alt text, caption, filename or a tag, ignoring "
        "case.",
    )
    kind: Literal["all", "image", "video"] = "all"
    tags: Name | None = Field(
        None,
        max_length=MAX_TAG_FILTERS * (MAX_TAG_LENGTH + 1),
        description=f"Comma-separated, at most {MAX_TAG_FILTERS}: assets carrying every one of "
        "them (ignoring case).",
    )
    source: Literal["all", "upload", "stock", "ai_generated"] = "all"
    license_status: Literal["all", "unverified", "valid", "expiring", "expired"] = "all"
    unused: bool | None = Field(
        None, description="true: attached to no draft; false: attached to at least one."
    )
    sort_by: Literal["created_at", "filename", "bytes"] = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)

    @field_validator("tags")
    @classmethod
    def _tag_filters(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = [" ".join(part.split()) for part in value.split(",")]
        tags = [part for part in parts if part]
        if len(tags) > MAX_TAG_FILTERS:
            raise ValueError(f"at most {MAX_TAG_FILTERS} tags")
        if any(len(tag) > MAX_TAG_LENGTH for tag in tags):
            raise ValueError(f"a tag has at most {MAX_TAG_LENGTH} characters")
        return ",".join(tags)

    @property
    def tag_list(self) -> list[str]:
        return [tag.lower() for tag in (self.tags or "").split(",") if tag]


class UpdateMediaInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
                    "title": "Watering can",
                    "license": {"expiresAt": "2031-01-01T00:00:00Z"},
                }
            ]
        }
    )

    id: uuid.UUID
    title: PlainText | None = Field(None, max_length=255, description="Null clears it.")
    alt_text: PlainText | None = Field(None, max_length=1000, description=_ALT + " Null clears it.")
    caption: PlainMultiLine | None = Field(
        None, max_length=2000, description=_CAPTION + " Null clears it."
    )
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description=_TAGS + " Replaces.")
    license: LicenseInput | None = Field(
        None,
        description="Merged into the licence (fields left out stay); `license_status` is "
        "recomputed. A stock asset's licence: admins only (403).",
    )

    _tag_list = field_validator("tags")(_tags)


class DeleteMediaInput(Input):
    id: uuid.UUID
    force: bool = Field(
        False, description="Delete even when attached to published drafts (they keep it)."
    )


class AttachMediaInput(Input):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
                    "draftId": "5f0c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f",
                    "role": "featured",
                }
            ]
        }
    )

    id: uuid.UUID
    draft_id: uuid.UUID
    role: Role = "inline"
    position: int | None = Field(
        None,
        ge=0,
        le=10_000,
        description="Among the draft's attachments of this role; default: after the last.",
    )


class DetachMediaInput(Input):
    id: uuid.UUID
    draft_id: uuid.UUID
    role: Role | None = Field(None, description="Only this role; all roles when omitted.")


class MediaUsageInput(Input):
    id: uuid.UUID
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=100)


class SearchStockInput(Input):
    query: str = Field(min_length=1, max_length=200, description="What to look for.")
    provider: Identifier | None = Field(
        None,
        min_length=1,
        max_length=40,
        description="`unsplash`; default: the first configured provider.",
    )
    orientation: Orientation = "any"
    page: int = Field(1, ge=1, le=MAX_PAGE)
    limit: int = Field(20, ge=1, le=30)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return " ".join(value.split())


# --- outputs ----------------------------------------------------------------------------------


class MediaUploadUrl(BaseModel):
    upload_url: str = Field(description="PUT the bytes here, with `headers`.")
    storage_path: str = Field(description="`<org_id>/media/<uuid>/<filename>`.")
    method: Literal["PUT"]
    headers: dict[str, str]
    expires_at: datetime


class Rendition(BaseModel):
    url: str = Field(description="A signed URL, valid for an hour.")
    width: int
    height: int
    bytes: int


class MediaAsset(Record):
    id: uuid.UUID
    tenant_id: uuid.UUID
    kind: Kind
    filename: str
    mime_type: str
    storage: Storage
    url: str | None = Field(
        description="internal: a signed URL of the original, valid for an hour; hotlink: the "
        "provider's URL (show it from there, never copy it)."
    )
    thumbnail_url: str | None = Field(
        description="A thumbnail (320 px at most on its longer side) as `url` is; null for a video."
    )
    renditions: dict[str, Rendition] = Field(
        description="Web-sized copies of an uploaded image (`w1600`, `w800`: that width, never "
        "larger than the original), as `url` is."
    )
    width: int | None
    height: int | None
    bytes: int | None
    content_hash: str | None = Field(description="sha256 of the stored file (uploads).")
    title: str | None
    alt_text: str | None
    caption: str | None
    tags: list[str]
    source: Source
    provider: str | None
    provider_asset_id: str | None
    license: MediaLicense
    license_status: LicenseStatus = Field(
        description="`unverified`: no type, or attribution required without a text; `expired`: "
        "past `expires_at`; `expiring`: within 30 days of it; else `valid`."
    )
    usage_count: int = Field(description="Drafts it is attached to.")
    created_at: datetime
    updated_at: datetime


class ConfirmedMediaAsset(MediaAsset):
    unchanged: bool = Field(
        description="True when the same content (or the same stock photo) was already an asset: "
        "that asset is returned and nothing new is stored."
    )


class MediaAssetPage(Page[MediaAsset]):
    pass


class MediaDeleted(BaseModel):
    success: bool
    detached_drafts: int = Field(description="Drafts it was detached from.")


class MediaAttachment(BaseModel):
    media_id: uuid.UUID
    draft_id: uuid.UUID
    role: Role
    position: int
    attached_at: datetime
    attribution_text: str | None = Field(
        description="The credit to publish with it, when its licence requires one."
    )


class MediaDetached(BaseModel):
    success: bool
    removed: int = Field(description="Attachments removed.")


class MediaPublication(BaseModel):
    publisher_connection_id: uuid.UUID | None = Field(
        description="Null: the drafts domain keeps where a draft went live, not through which "
        "connection."
    )
    url: str | None
    published_at: datetime | None


class MediaUse(BaseModel):
    draft_id: uuid.UUID
    title: str
    draft_status: str
    role: Role
    attached_at: datetime
    published: list[MediaPublication] = Field(
        description="Where the draft is live: empty unless it was published."
    )


class MediaUsagePage(Page[MediaUse]):
    pass


class StockResult(BaseModel):
    provider: str
    asset_id: str
    thumb_url: str
    preview_url: str
    width: int | None
    height: int | None
    description: str | None
    author_name: str | None
    author_url: str | None = Field(description="The photographer's page, with the referral.")
    source_url: str | None = Field(description="The photo's page, with the referral.")
    license_type: LicenseType
    attribution_text: str
    hotlink_required: bool = Field(
        description="Show it from the provider's URL: never copy it, send it to an AI model or "
        "choose it automatically."
    )


class StockResultPage(Page[StockResult]):
    pass
