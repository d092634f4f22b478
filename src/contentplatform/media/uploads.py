"""Uploads of media: a signed URL to upload to, then the upload confirmed: checked by its bytes
against its declared type, an image cleaned of its location and stored with its renditions,
the same content twice one asset; and the bytes media stores, for the plan's storage limit.
Never commits."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.billing import service as billing
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.runtime import Runtime
from contentplatform.kit.errors import BadRequest, Conflict, FieldError, InternalError
from contentplatform.media import images, repository, schemas, service, stock_photos
from contentplatform.media.errors import (
    ImageRefused,
    MediaPathTaken,
    MediaTypeMismatch,
    NothingUploadedHere,
)
from contentplatform.media.models import MediaAsset
from contentplatform.storage import paths
from contentplatform.storage.store import ObjectStore
from contentplatform.tenants import service as tenants

# Bytes of a file's start that show its type.
HEAD_BYTES = 8192


async def create_upload_url(
    runtime: Runtime, tenant: TenantAccess, data: schemas.CreateMediaUploadUrlInput, base_url: str
) -> schemas.MediaUploadUrl:
    filename = service.guarded_filename(data.filename, data.mime_type)
    limit = service.size_limit(runtime.settings, data.mime_type)
    if data.bytes > limit:
        raise service.too_large(data.bytes, limit, data.mime_type, "bytes")
    storage_path = paths.validate_storage_path(
        f"{service.media_prefix(tenant.org_id)}{uuid.uuid4()}/{paths.safe_filename(filename)}",
        tenant.org_id,
    )
    target = await runtime.store.upload_url(
        storage_path,
        content_type=data.mime_type,
        content_length=data.bytes,
        expires_in=runtime.settings.upload_url_ttl_seconds,
        base_url=base_url,
    )
    return schemas.MediaUploadUrl(
        upload_url=target.url,
        storage_path=storage_path,
        method="PUT",
        headers=target.headers,
        expires_at=target.expires_at,
    )


async def _uploaded(runtime: Runtime, storage_path: str, mime_type: str) -> bytes:
    """The uploaded bytes, when there are some, within the type's size and of that type."""
    info = await runtime.store.head(storage_path)
    if info is None:
        raise NothingUploadedHere(
            "Nothing has been uploaded at this storagePath.",
            errors=[FieldError("storagePath", "nothing uploaded here")],
        )
    limit = service.size_limit(runtime.settings, mime_type)
    if info.size > limit:
        raise service.too_large(info.size, limit, mime_type, "storagePath")
    content = await runtime.store.get(storage_path)
    if len(content) > limit:
        raise service.too_large(len(content), limit, mime_type, "storagePath")
    detected = images.detected_type(content[:HEAD_BYTES])
    if detected != mime_type:
        found = detected or "not an image or video this service takes"
        raise MediaTypeMismatch(
            f"The uploaded file is {found}, not the declared {mime_type} (its bytes were "
            "checked, not its name).",
            errors=[FieldError("mimeType", f"the file is {found}, not {mime_type}")],
        )
    return content


@contextlib.contextmanager
def _image_errors() -> Iterator[None]:
    try:
        yield
    except images.ImageError as error:
        raise ImageRefused(str(error), errors=[FieldError("storagePath", str(error))]) from None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _stored_renditions(
    store: ObjectStore, org_id: str, asset_id: uuid.UUID, prepared: images.Prepared
) -> tuple[dict[str, Any], str]:
    """Store the renditions and the thumbnail; their record, and the thumbnail's path."""
    folder = f"{service.derived_prefix(org_id)}{asset_id}"
    record: dict[str, Any] = {}
    for name, copy in prepared.renditions.items():
        path = f"{folder}/{name}.{copy.extension}"
        await store.put(path, copy.data, content_type=copy.mime_type)
        record[name] = {
            "path": path,
            "width": copy.width,
            "height": copy.height,
            "bytes": len(copy.data),
        }
    thumbnail = prepared.thumbnail
    thumbnail_path = f"{folder}/thumbnail.{thumbnail.extension}"
    await store.put(thumbnail_path, thumbnail.data, content_type=thumbnail.mime_type)
    return record, thumbnail_path


async def _forget(store: ObjectStore, *paths_: str | None) -> None:
    """Remove objects nobody refers to (a duplicate's upload and renditions)."""
    for path in paths_:
        if path is not None:
            await store.delete(path)


async def _duplicate_of_upload(
    session: AsyncSession,
    runtime: Runtime,
    tenant_id: uuid.UUID,
    content_hash: str,
    storage_path: str,
) -> MediaAsset | None:
    """The live asset with this content, if any: the upload then goes (no asset's file is at
    its path). Another asset's file at the path, with other content now, is a 409: its upload
    URL was used twice, and the asset's file is no longer what it was."""
    owner = await repository.by_storage_path(session, tenant_id, storage_path)
    if owner is not None and owner.content_hash != content_hash:
        raise MediaPathTaken(
            f"This storagePath holds the file of the asset {owner.id}; upload to a new URL "
            "(media.createUploadUrl).",
            extensions={"mediaId": str(owner.id)},
        )
    duplicate = await repository.by_content_hash(session, tenant_id, content_hash)
    if duplicate is not None and owner is None:
        await _forget(runtime.store, storage_path)
    return duplicate


async def confirm_upload(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    created_by: str,
    data: schemas.ConfirmMediaUploadInput,
    base_url: str,
) -> schemas.ConfirmedMediaAsset:
    if data.stock is not None:
        if data.storage_path is not None:
            raise BadRequest(
                "Give storagePath (an upload) or stock (a stock photo), not both.",
                errors=[
                    FieldError("storagePath", "not with stock"),
                    FieldError("stock", "not with storagePath"),
                ],
            )
        return await stock_photos.import_stock(session, runtime, tenant, created_by, data, base_url)
    missing = [
        FieldError(name, "required with storagePath")
        for name, value in (
            ("storagePath", data.storage_path),
            ("filename", data.filename),
            ("mimeType", data.mime_type),
        )
        if value is None
    ]
    if missing or data.storage_path is None or data.filename is None or data.mime_type is None:
        names = ", ".join(error.path for error in missing)
        raise BadRequest(
            f"An upload is confirmed with storagePath, filename and mimeType ({names} missing); "
            "a stock photo with stock.",
            errors=missing,
        )
    mime_type = data.mime_type
    filename = service.guarded_filename(data.filename, mime_type)
    storage_path = service.upload_path(tenant.org_id, data.storage_path)
    store = runtime.store
    links = service.Links(store, base_url)
    uploaded = await _uploaded(runtime, storage_path, mime_type)
    is_image = mime_type in schemas.IMAGE_TYPES
    content = uploaded
    if is_image:
        with _image_errors():
            content = await images.off_loop(images.without_location, uploaded, mime_type)
    content_hash = _sha256(content)
    duplicate = await _duplicate_of_upload(
        session, runtime, tenant.tenant_id, content_hash, storage_path
    )
    if duplicate is not None:
        return await service.confirmed(session, tenant.tenant_id, duplicate, links, unchanged=True)

    asset_id = uuid.uuid4()
    prepared: images.Prepared | None = None
    renditions: dict[str, Any] = {}
    thumbnail_path: str | None = None
    if is_image:
        with _image_errors():
            prepared = await images.off_loop(images.renditions, content)
        renditions, thumbnail_path = await _stored_renditions(
            store, tenant.org_id, asset_id, prepared
        )
    if content is not uploaded:
        # The cleaned image replaces the upload, and is read back: what is stored must be what
        # was hashed, and say nowhere where it was taken. (Kept as uploaded, the file is what
        # was read, hashed and checked already.)
        await store.put(storage_path, content, content_type=mime_type)
        stored = await store.get(storage_path)
        if _sha256(stored) != content_hash or await images.off_loop(
            images.has_location, stored, mime_type
        ):
            raise InternalError("The stored file differs from the one checked; confirm it again.")

    # One confirmation per tenant at a time from here, so racing confirms of the same content
    # agree on one asset (the unique index would refuse the second anyway).
    await tenants.lock_tenant(session, tenant.tenant_id)
    duplicate = await _duplicate_of_upload(
        session, runtime, tenant.tenant_id, content_hash, storage_path
    )
    if duplicate is not None:
        await _forget(store, thumbnail_path, *(r["path"] for r in renditions.values()))
        return await service.confirmed(session, tenant.tenant_id, duplicate, links, unchanged=True)
    try:
        await billing.check_storage(session, tenant.tenant_id, len(content))
    except PlanLimitReached:
        await _forget(store, thumbnail_path, *(r["path"] for r in renditions.values()))
        raise
    asset = MediaAsset(
        id=asset_id,
        tenant_id=tenant.tenant_id,
        kind="image" if is_image else "video",
        filename=filename,
        mime_type=mime_type,
        storage="internal",
        storage_path=storage_path,
        renditions=renditions,
        thumbnail_path=thumbnail_path,
        width=prepared.width if prepared else None,
        height=prepared.height if prepared else None,
        size_bytes=len(content),
        content_hash=content_hash,
        alt_text=data.alt_text,
        caption=data.caption,
        source="upload",
        created_by=created_by,
    )
    service.set_tags(asset, data.tags or [])
    service.apply_license(asset, service.merged_license({}, service.license_given(data.license)))
    session.add(asset)
    await service.flush_or_conflict(
        session, Conflict("The same file was just confirmed; confirm it again.")
    )
    return await service.confirmed(session, tenant.tenant_id, asset, links, unchanged=False)


@billing.counts_storage("media")
async def stored_bytes(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    """The bytes of the tenant's live uploaded files (as stored, without their renditions,
    which are ours to make again), for `storage_bytes`; hotlinked stock photos store nothing."""
    return await repository.stored_bytes(session, tenant_id)
