"""The rules of media assets: records, licences, edits and attachments to drafts; uploads made
safe and de-duplicated are in uploads.py, stock search and imports in stock_photos.py. Never
commits.

An upload is checked by its bytes against its declared type, an image loses its location
(images.py) and is stored cleaned in place of what was uploaded, with its web-sized renditions
and thumbnail beside it under `<org>/media/derived/<asset id>/`; what is stored is read back,
hashed and checked again before the asset is made. The same content twice in a tenant is one
asset (`unchanged`), as is the same stock photo twice.

For other domains: `allows_automated_selection(provider)` and `hotlink_required(provider)` say
what a stock provider's terms allow (an AI workflow's images step may only pick photos of
AUTOMATED_SELECTION_PROVIDERS by itself, and never sends hotlinked ones to a model).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.config import Settings
from contentplatform.drafts import service as drafts
from contentplatform.kit import errors
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, Conflict, FieldError
from contentplatform.kit.schemas import offset_of
from contentplatform.media import providers, repository, schemas
from contentplatform.media.errors import (
    FeaturedNeedsImage,
    LicenseForbidsUse,
    MediaFilenameRefused,
    MediaInUse,
    MediaNotFound,
    MediaTooLarge,
    StockLicenseAdminOnly,
)
from contentplatform.media.models import MediaAsset, MediaAttachment
from contentplatform.storage import paths
from contentplatform.storage.store import ObjectStore

# How long a signed URL of a stored file works.
SIGNED_URL_SECONDS = 3600
# The extensions a file of each type may carry; the first is added to a name without one.
EXTENSIONS: dict[str, tuple[str, ...]] = {
    "image/jpeg": (".jpg", ".jpeg"),
    "image/png": (".png",),
    "image/webp": (".webp",),
    "image/gif": (".gif",),
    "image/avif": (".avif",),
    "video/mp4": (".mp4",),
}

# --- what other domains ask ---------------------------------------------------------------------

AUTOMATED_SELECTION_PROVIDERS: frozenset[str] = providers.AUTOMATED_SELECTION_PROVIDERS


def allows_automated_selection(provider: str | None) -> bool:
    """Whether software (an AI workflow's images step) may choose an asset of `provider` by
    itself: an upload or an AI image (no provider) always; a stock photo only when its
    provider's terms allow it (Unsplash's do not: a person chooses)."""
    return provider is None or provider in AUTOMATED_SELECTION_PROVIDERS


async def for_automated_selection(
    session: AsyncSession, tenant_id: uuid.UUID, limit: int = 200
) -> list[dict[str, Any]]:
    """The organization's newest images an AI workflow may choose by itself: live, licence
    usable now, and an upload, an AI image or a photo whose provider's terms allow it
    (`{id, title, alt_text, tags}`)."""
    now = utcnow()
    rows = await repository.images(session, tenant_id, limit)
    return [
        {"id": str(a.id), "title": a.title, "alt_text": a.alt_text, "tags": list(a.tags or [])}
        for a in rows
        if allows_automated_selection(a.provider) and use_refused(a, now) is None
    ]


async def featured_id(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> uuid.UUID | None:
    """The draft's featured image, if it has one."""
    found = await repository.featured_of(session, tenant_id, draft_id)
    return found.id if found is not None else None


def hotlink_required(provider: str | None) -> bool:
    """Whether an asset of `provider` must be shown from the provider's URL: never copied, never
    sent to an AI model (Unsplash)."""
    return provider in providers.HOTLINK_PROVIDERS


# --- licences -----------------------------------------------------------------------------------


def license_status(verified: bool, expires_at: datetime | None, now: datetime) -> str:
    """expired (past expires_at), else unverified (no type, or attribution required without a
    text), else expiring (within 30 days), else valid. The list's filter says the same in SQL
    (repository.license_status_is)."""
    if expires_at is not None and expires_at <= now:
        return "expired"
    if not verified:
        return "unverified"
    if expires_at is not None and expires_at <= now + repository.EXPIRING_WITHIN:
        return "expiring"
    return "valid"


async def licence_figures(
    session: AsyncSession, tenant_id: uuid.UUID, now: datetime, limit: int
) -> tuple[int, int, list[MediaAsset]]:
    """(live assets, those whose licence needs attention, up to `limit` assets in use whose
    licence has ended or ends within 30 days): the dashboard's media figures and alerts."""
    return await repository.licence_figures(session, tenant_id, now, limit)


def _verified(license: schemas.MediaLicense) -> bool:
    attribution = license.attribution
    return license.type is not None and (not attribution.required or bool(attribution.text))


def _aware(moment: datetime | None) -> datetime | None:
    """An instant given without a zone is read as UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def apply_license(asset: MediaAsset, license: schemas.MediaLicense) -> None:
    license = license.model_copy(update={"expires_at": _aware(license.expires_at)})
    asset.license = license.model_dump(mode="json")
    asset.license_verified = _verified(license)
    asset.license_expires_at = license.expires_at


def merged_license(current: dict[str, Any], patch: dict[str, Any]) -> schemas.MediaLicense:
    """`patch` (the fields given, by name) over the licence `current`: attribution and usage
    rights field by field, null resetting either whole."""
    merged = dict(current)
    for key, value in patch.items():
        if key in ("attribution", "usage_rights") and isinstance(value, dict):
            base = merged.get(key)
            merged[key] = {**(base if isinstance(base, dict) else {}), **value}
        elif key in ("attribution", "usage_rights") and value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return schemas.MediaLicense.model_validate(merged)


def license_given(data: schemas.LicenseInput | None) -> dict[str, Any]:
    return {} if data is None else data.model_dump(exclude_unset=True)


def use_refused(asset: MediaAsset, now: datetime) -> tuple[str, str] | None:
    """Why the asset's licence forbids using it (attaching it, publishing a draft that shows
    it): `(reason, what the licence does)`, or None. Expired, or no commercial use."""
    if license_status(asset.license_verified, asset.license_expires_at, now) == "expired":
        expired = asset.license_expires_at.isoformat() if asset.license_expires_at else "?"
        return "license_expired", f"expired at {expired}"
    license = schemas.MediaLicense.model_validate(asset.license or {})
    if license.usage_rights.commercial is False:
        return "not_commercial", "does not allow commercial use"
    return None


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Links:
    """Signed URLs of stored files, for one request (its base URL, for local storage)."""

    store: ObjectStore
    base_url: str

    async def of(self, path: str | None) -> str | None:
        if path is None:
            return None
        return await self.store.download_url(
            path, expires_in=SIGNED_URL_SECONDS, base_url=self.base_url
        )


async def _record(
    asset: MediaAsset, usage_count: int, links: Links, now: datetime
) -> schemas.MediaAsset:
    internal = asset.storage == "internal"
    renditions = {
        name: schemas.Rendition(
            url=await links.of(rendition["path"]) or "",
            width=rendition["width"],
            height=rendition["height"],
            bytes=rendition["bytes"],
        )
        for name, rendition in (asset.renditions or {}).items()
        if isinstance(rendition, dict) and rendition.get("path")
    }
    return schemas.MediaAsset(
        id=asset.id,
        tenant_id=asset.tenant_id,
        kind=asset.kind,
        filename=asset.filename,
        mime_type=asset.mime_type,
        storage=asset.storage,
        url=await links.of(asset.storage_path) if internal else asset.hotlink_url,
        thumbnail_url=await links.of(asset.thumbnail_path)
        if internal
        else asset.hotlink_thumbnail_url,
        renditions=renditions,
        width=asset.width,
        height=asset.height,
        bytes=asset.size_bytes,
        content_hash=asset.content_hash,
        title=asset.title,
        alt_text=asset.alt_text,
        caption=asset.caption,
        tags=list(asset.tags or []),
        source=asset.source,
        provider=asset.provider,
        provider_asset_id=asset.provider_asset_id,
        license=schemas.MediaLicense.model_validate(asset.license or {}),
        license_status=license_status(asset.license_verified, asset.license_expires_at, now),
        usage_count=usage_count,
        created_at=asset.created_at,
        updated_at=asset.updated_at,
    )


async def _one(
    session: AsyncSession, tenant_id: uuid.UUID, asset: MediaAsset, links: Links
) -> schemas.MediaAsset:
    counts = await repository.usage_counts(session, tenant_id, [asset.id])
    return await _record(asset, counts.get(asset.id, 0), links, utcnow())


async def confirmed(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    asset: MediaAsset,
    links: Links,
    *,
    unchanged: bool,
) -> schemas.ConfirmedMediaAsset:
    record = await _one(session, tenant_id, asset, links)
    return schemas.ConfirmedMediaAsset(**record.model_dump(), unchanged=unchanged)


async def require(
    session: AsyncSession, tenant_id: uuid.UUID, media_id: uuid.UUID, *, for_update: bool = False
) -> MediaAsset:
    asset = await repository.get(session, tenant_id, media_id, for_update=for_update)
    return errors.require(asset, MediaNotFound, media_id)


# --- names and paths ----------------------------------------------------------------------------


def guarded_filename(name: str, mime_type: str) -> str:
    """The filename, as documents guard theirs: not empty, no slashes or control characters;
    it keeps the extension of its type (a name without one gets it; another type's is 400)."""
    name = name.strip()
    if not name or any(c in name for c in "/\\\0") or any(ord(c) < 32 for c in name):
        raise MediaFilenameRefused(
            "A filename cannot be empty or contain slashes or control characters.",
            errors=[FieldError("filename", "invalid characters")],
        )
    allowed = EXTENSIONS[mime_type]
    extension = os.path.splitext(name)[1].lower()
    if extension in allowed:
        return name
    if extension and extension[1:].isalnum() and len(extension) <= 6:
        raise MediaFilenameRefused(
            f"A {mime_type} file keeps the extension {allowed[0]}; {extension} is not allowed.",
            errors=[FieldError("filename", f"must end with {' or '.join(allowed)}")],
        )
    candidate = name + allowed[0]
    if len(candidate) > 255:
        raise MediaFilenameRefused(
            "The filename is too long once its extension is added.",
            errors=[FieldError("filename", "too long")],
        )
    return candidate


def media_prefix(org_id: str) -> str:
    return f"{org_id}/media/"


def derived_prefix(org_id: str) -> str:
    return f"{org_id}/media/derived/"


def upload_path(org_id: str, storage_path: str) -> str:
    """`storage_path` when the organization may confirm it: under `<org>/media/` (where
    media.createUploadUrl puts uploads), not among the files the service derives."""
    path = paths.validate_storage_path(storage_path, org_id)
    if not path.startswith(media_prefix(org_id)) or path.startswith(derived_prefix(org_id)):
        message = f"must be an upload path under {media_prefix(org_id)} (media.createUploadUrl)"
        raise BadRequest(
            f"Invalid storagePath: {message}.", errors=[FieldError("storagePath", message)]
        )
    return path


def size_limit(settings: Settings, mime_type: str) -> int:
    return min(schemas.MAX_BYTES[mime_type], settings.max_upload_bytes)


def too_large(size: int, limit: int, mime_type: str, field: str) -> MediaTooLarge:
    return MediaTooLarge(
        f"The file is {size} bytes; a {mime_type} file may have at most {limit}.",
        errors=[FieldError(field, f"must be at most {limit} for {mime_type}")],
    )


def _tag_keys(tags: list[str]) -> str:
    return "\n" + "".join(f"{tag.lower()}\n" for tag in tags)


def set_tags(asset: MediaAsset, tags: list[str]) -> None:
    asset.tags = list(tags)
    asset.tag_keys = _tag_keys(asset.tags)


async def flush_or_conflict(session: AsyncSession, conflict: Conflict) -> None:
    """Flush, a unique index refusing the row as `conflict` (a racing request won)."""
    try:
        await session.flush()
    except IntegrityError:
        raise conflict from None


# --- reading ------------------------------------------------------------------------------------


async def get(
    session: AsyncSession,
    store: ObjectStore,
    tenant_id: uuid.UUID,
    media_id: uuid.UUID,
    base_url: str,
) -> schemas.MediaAsset:
    asset = await require(session, tenant_id, media_id)
    return await _one(session, tenant_id, asset, Links(store, base_url))


async def page(
    session: AsyncSession,
    store: ObjectStore,
    tenant_id: uuid.UUID,
    data: schemas.ListMediaInput,
    base_url: str,
) -> schemas.MediaAssetPage:
    now = utcnow()
    filters = repository.Filters(
        search=data.search.strip() if data.search and data.search.strip() else None,
        kind=None if data.kind == "all" else data.kind,
        tags=data.tag_list,
        source=None if data.source == "all" else data.source,
        license_status=None if data.license_status == "all" else data.license_status,
        unused=data.unused,
        now=now,
    )
    rows, total = await repository.page(
        session,
        tenant_id,
        filters,
        sort_by=data.sort_by,
        descending=data.sort_order == "desc",
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    counts = await repository.usage_counts(session, tenant_id, [row.id for row in rows])
    links = Links(store, base_url)
    return schemas.MediaAssetPage(
        data=[await _record(row, counts.get(row.id, 0), links, now) for row in rows],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- writing ------------------------------------------------------------------------------------


async def update(
    session: AsyncSession,
    store: ObjectStore,
    tenant: TenantAccess,
    data: schemas.UpdateMediaInput,
    base_url: str,
) -> schemas.MediaAsset:
    """Change what `data` gives (null clears a text); merge the licence and recompute its
    status. A stock asset's licence changes only by an admin's hand."""
    asset = await require(session, tenant.tenant_id, data.id, for_update=True)
    given = data.model_fields_set
    if data.license is not None:
        current = schemas.MediaLicense.model_validate(asset.license or {})
        license = merged_license(current.model_dump(mode="json"), license_given(data.license))
        license = license.model_copy(update={"expires_at": _aware(license.expires_at)})
        if license != current and asset.source == "stock" and not tenant.role.includes(Role.admin):
            raise StockLicenseAdminOnly(
                "A stock asset's licence comes from its provider: only an admin may change it."
            )
        apply_license(asset, license)
    if "title" in given:
        asset.title = data.title
    if "alt_text" in given:
        asset.alt_text = data.alt_text
    if "caption" in given:
        asset.caption = data.caption
    if "tags" in given:
        set_tags(asset, data.tags or [])
    asset.updated_at = utcnow()
    await session.flush()
    return await _one(session, tenant.tenant_id, asset, Links(store, base_url))


async def delete(
    session: AsyncSession, tenant_id: uuid.UUID, media_id: uuid.UUID, *, force: bool
) -> schemas.MediaDeleted:
    """Soft-delete the asset and detach it from every draft; while a published draft uses it,
    only with `force`. Its files stay in storage (a published post may still show them)."""
    asset = await require(session, tenant_id, media_id, for_update=True)
    used_by = await repository.drafts_of(session, tenant_id, asset.id)
    published = sorted(str(draft_id) for draft_id, status in used_by if status == "published")
    if published and not force:
        raise MediaInUse(
            f"The asset is attached to {len(published)} published draft(s); delete it with "
            "force=true to detach it from them anyway (their published posts keep it).",
            extensions={"draftIds": published},
        )
    await repository.remove_attachments(session, tenant_id, asset.id)
    asset.deleted_at = utcnow()
    detached = sum(1 for _, status in used_by if status != "deleted")
    return schemas.MediaDeleted(success=True, detached_drafts=detached)


async def attach(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.AttachMediaInput
) -> schemas.MediaAttachment:
    """Attach the asset to the tenant's draft; a featured one replaces the draft's featured
    media. Refused while the licence has expired or rules out commercial use."""
    asset = await require(session, tenant_id, data.id)
    draft = await drafts.require(session, tenant_id, data.draft_id)
    license = schemas.MediaLicense.model_validate(asset.license or {})
    refused = use_refused(asset, utcnow())
    if refused is not None:
        reason, why = refused
        raise LicenseForbidsUse(
            f"The asset's licence {why}: it cannot be attached.", extensions={"reason": reason}
        )
    if data.role == "featured" and asset.kind != "image":
        raise FeaturedNeedsImage(
            "A draft's featured media must be an image.",
            errors=[FieldError("role", "featured needs an image")],
        )
    if data.role == "featured":
        await repository.remove_featured(session, tenant_id, draft.id, keep=asset.id)
    found = await repository.attachment(session, tenant_id, asset.id, draft.id, data.role)
    if data.position is not None:
        position = data.position
    elif found is not None:
        position = found.position
    else:
        position = await repository.next_position(session, tenant_id, draft.id, data.role)
    if found is None:
        found = MediaAttachment(
            tenant_id=tenant_id,
            media_id=asset.id,
            draft_id=draft.id,
            role=data.role,
            position=position,
            attached_at=utcnow(),
        )
        session.add(found)
    else:
        found.position = position
    await flush_or_conflict(
        session,
        Conflict("Another attachment of this draft was just made; attach it again."),
    )
    attribution = license.attribution
    return schemas.MediaAttachment(
        media_id=asset.id,
        draft_id=draft.id,
        role=data.role,
        position=found.position,
        attached_at=found.attached_at,
        attribution_text=attribution.text if attribution.required else None,
    )


async def detach(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.DetachMediaInput
) -> schemas.MediaDetached:
    asset = await require(session, tenant_id, data.id)
    draft = await drafts.require(session, tenant_id, data.draft_id)
    removed = await repository.remove_attachments(
        session, tenant_id, asset.id, draft_id=draft.id, role=data.role
    )
    return schemas.MediaDetached(success=True, removed=removed)


async def usage(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.MediaUsageInput
) -> schemas.MediaUsagePage:
    """The live drafts using the asset, newest attachment first. `published` is what the drafts
    domain keeps: where a published draft went live first, and when (not which connection)."""
    asset = await require(session, tenant_id, data.id)
    rows, total = await repository.usage_page(
        session, tenant_id, asset.id, limit=data.limit, offset=offset_of(data.page, data.limit)
    )
    return schemas.MediaUsagePage(
        data=[
            schemas.MediaUse(
                draft_id=row["draft_id"],
                title=row["title"],
                draft_status=row["status"],
                role=row["role"],
                attached_at=row["attached_at"],
                published=[
                    schemas.MediaPublication(
                        publisher_connection_id=None,
                        url=row["published_url"],
                        published_at=row["published_at"],
                    )
                ]
                if row["status"] == "published"
                else [],
            )
            for row in rows
        ],
        total=total,
        page=data.page,
        limit=data.limit,
    )


# --- publishing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeaturedImage:
    """A draft's featured image as publishing sends it: where its file is (`storage_path`, or
    the provider's `hotlink_url`, never copied) and what goes with it."""

    storage_path: str | None
    hotlink_url: str | None
    filename: str
    mime_type: str
    content_hash: str
    alt_text: str
    caption: str | None
    license: schemas.MediaLicense
    # Why its licence forbids publishing it now (use_refused), or None.
    refused: str | None


@dataclass(frozen=True)
class DraftImages:
    """The images publishing sends with a draft: its featured one and those of its body."""

    featured: FeaturedImage | None
    inline: tuple[FeaturedImage, ...]

    @property
    def refused(self) -> str | None:
        """Why one of them may not be published now, if one may not."""
        for image in (self.featured, *self.inline):
            if image is not None and image.refused is not None:
                return image.refused
        return None


async def draft_images(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> DraftImages:
    """The draft's featured image (if any) and its inline images, in order."""
    featured = await featured_image(session, tenant_id, draft_id)
    inline = await repository.inline_of(session, tenant_id, draft_id)
    return DraftImages(featured, tuple(_published_image(asset, "inline") for asset in inline))


async def featured_image(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID
) -> FeaturedImage | None:
    """The draft's featured image, if it has one."""
    asset = await repository.featured_of(session, tenant_id, draft_id)
    if asset is None:
        return None
    return _published_image(asset, "featured")


def _published_image(asset: MediaAsset, role: str) -> FeaturedImage:
    refused = use_refused(asset, utcnow())
    return FeaturedImage(
        storage_path=asset.storage_path if asset.storage == "internal" else None,
        hotlink_url=asset.hotlink_url if asset.storage == "hotlink" else None,
        filename=asset.filename,
        mime_type=asset.mime_type,
        content_hash=asset.content_hash or hashlib.sha256(asset.id.bytes).hexdigest(),
        alt_text=asset.alt_text or asset.title or "",
        caption=asset.caption,
        license=schemas.MediaLicense.model_validate(asset.license or {}),
        refused=(
            f"The {role} image's licence {refused[1]} ({asset.filename}): replace or "
            "detach it before publishing."
            if refused is not None
            else None
        ),
    )
