"""The media operations: declarations only; the rules live in service.py, uploads.py and
stock_photos.py.

Every member reads assets and searches stock; editors upload, import, describe and attach them;
admins delete them (and alone change a stock photo's licence).
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts.errors import DraftNotFound
from contentplatform.media import schemas, service, stock_photos, uploads
from contentplatform.media.errors import (
    FeaturedNeedsImage,
    ImageRefused,
    LicenseForbidsUse,
    MediaFilenameRefused,
    MediaInUse,
    MediaNotFound,
    MediaPathTaken,
    MediaTooLarge,
    MediaTypeMismatch,
    NothingUploadedHere,
    StockAssetNotFound,
    StockLicenseAdminOnly,
    StockProviderRefused,
    StockProviderUnavailable,
)

router = ProcedureRouter("media", tag="Media")

_LICENSE = (
    "`license_status` is computed: `expired` once `expires_at` has passed, else `unverified` "
    "without a licence type or with attribution required but no attribution text, else "
    "`expiring` within 30 days of `expires_at`, else `valid`."
)
_URLS = (
    "`url`, `thumbnail_url` and each rendition's `url` of an uploaded file are signed URLs, "
    "valid for an hour; a stock photo's are its provider's (show it from there, never copy it)."
)


@router.post(
    "createUploadUrl",
    "/v1/media/upload-url",
    access=Access.editor,
    errors=[MediaTooLarge, MediaFilenameRefused],
)
async def create_upload_url(
    ctx: Context, data: schemas.CreateMediaUploadUrlInput
) -> schemas.MediaUploadUrl:
    """Get a signed URL to upload a file directly to storage.

    PUT the bytes to `upload_url` with the returned `headers` before `expires_at` (the upload
    URL lifetime, 15 minutes by default), then call media.confirmUpload with `storage_path`
    (`<org_id>/media/<uuid>/<filename>`). `bytes` is at most 20 MiB for an image and 100 MiB
    for video/mp4, and never more than the service's MAX_UPLOAD_BYTES (400 naming `bytes`). The
    filename keeps its type's extension (`.jpg`/`.jpeg`, `.png`, `.webp`, `.gif`, `.avif`,
    `.mp4`): a name without one gets it, another type's is 400."""
    return await uploads.create_upload_url(ctx.runtime, ctx.tenant, data, ctx.base_url)


@router.post(
    "confirmUpload",
    "/v1/media/confirm-upload",
    access=Access.editor,
    errors=[
        NothingUploadedHere,
        MediaPathTaken,
        MediaTooLarge,
        MediaTypeMismatch,
        ImageRefused,
        MediaFilenameRefused,
        StockProviderRefused,
        StockAssetNotFound,
        StockLicenseAdminOnly,
        StockProviderUnavailable,
        PlanLimitReached,
    ],
)
async def confirm_upload(
    ctx: Context, data: schemas.ConfirmMediaUploadInput
) -> schemas.ConfirmedMediaAsset:
    """Register an uploaded file, or import a stock result, as a media asset.

    An upload (`storagePath` under `<org_id>/media/`, `filename`, `mimeType`): 404 when nothing
    was uploaded there; its bytes must be a file of `mimeType` (a PNG declared image/jpeg is a
    400 naming both). An image loses the place it was taken (its EXIF GPS data, and XMP
    coordinates; the orientation and other tags stay) and is stored so, in place of what was
    uploaded, with web-sized renditions (1600 and 800 px wide, never larger than the original)
    and a thumbnail; an image of more than 50 megapixels is refused (400). A video is checked by
    its bytes alone. The same content already in a live asset of the organization returns that
    asset with `unchanged: true`, storing nothing new. A storagePath that holds another asset's
    file (its upload URL used twice, with other content) is 409. A file that would take the
    organization past its plan's `storage_bytes` (its documents' and media's bytes together)
    is 403 naming the limit; no asset is made, and the upload stays to be confirmed again once
    there is room.

    A stock photo (`stock: {provider, assetId}` from media.searchStock): the provider is told of
    the download (Unsplash requires it) and the asset keeps the provider's URL (`storage`
    hotlink, never copied) and its licence (only an admin may give another: 403). The same
    photo imported again returns its asset with `unchanged: true`. 400 naming `stock.provider`
    when the provider is unknown or not configured here; 404 when it has no such photo; 503
    when it is down, rate limiting or refusing the service's key (`retryable` says whether to
    try again)."""
    return await uploads.confirm_upload(
        ctx.session, ctx.runtime, ctx.tenant, ctx.identity.subject, data, ctx.base_url
    )


@router.get(
    "list",
    "/v1/media",
    access=Access.member,
    description="Newest first unless `sortBy`/`sortOrder` say otherwise (`bytes`: a stock "
    "photo's size is unknown and sorts last). `search` matches part of the title, alt text, "
    "caption, filename or a tag, ignoring case; `tags` keeps assets carrying every tag named; "
    "`unused` those attached to no draft (true) or to some (false). " + _LICENSE + " " + _URLS,
)
async def list_media(ctx: Context, data: schemas.ListMediaInput) -> schemas.MediaAssetPage:
    """List and search media assets."""
    return await service.page(
        ctx.session, ctx.runtime.store, ctx.tenant.tenant_id, data, ctx.base_url
    )


@router.get(
    "searchStock",
    "/v1/media/stock-search",
    access=Access.member,
    errors=[StockProviderRefused, StockProviderUnavailable],
)
async def search_stock(ctx: Context, data: schemas.SearchStockInput) -> schemas.StockResultPage:
    """Search stock photos through a configured provider.

    `provider` defaults to the first configured one (`unsplash`). Results are kept for 10
    minutes and shared by everyone asking the same. Nothing is stored until media.confirmUpload
    imports a result. A `hotlink_required` result (Unsplash) keeps the provider's URL: it must
    not be copied, sent to an AI model or chosen automatically. 400 naming `provider` when the
    provider is unknown or not configured here (no access key); 503 when it is down, rate
    limiting or refusing the service's key (`retryable` says whether to try again)."""
    return await stock_photos.search_stock(ctx.runtime, data)


@router.get("getById", "/v1/media/{id}", access=Access.member, errors=[MediaNotFound])
async def get_by_id(ctx: Context, data: schemas.MediaIdInput) -> schemas.MediaAsset:
    """Get one media asset.

    The URLs of an uploaded file are signed for an hour; a stock photo's are its provider's."""
    return await service.get(
        ctx.session, ctx.runtime.store, ctx.tenant.tenant_id, data.id, ctx.base_url
    )


@router.patch(
    "update",
    "/v1/media/{id}",
    access=Access.editor,
    errors=[MediaNotFound, StockLicenseAdminOnly],
    description="Fields given change (null clears a text; `tags` replaces the list); the "
    "others stay. `license` is merged into the licence field by field (in `attribution` and "
    "`usageRights` too) and its status recomputed. " + _LICENSE + " Changing a stock asset's "
    "licence is for admins only (403).",
)
async def update(ctx: Context, data: schemas.UpdateMediaInput) -> schemas.MediaAsset:
    """Update metadata and licensing fields."""
    return await service.update(ctx.session, ctx.runtime.store, ctx.tenant, data, ctx.base_url)


@router.delete("delete", "/v1/media/{id}", access=Access.admin, errors=[MediaNotFound, MediaInUse])
async def delete(ctx: Context, data: schemas.DeleteMediaInput) -> schemas.MediaDeleted:
    """Soft-delete an asset.

    It is detached from every draft it was attached to (`detached_drafts`). While a published
    draft uses it, 409 (`draftIds` names them) unless `force`: the posts already published keep
    the image. Its files stay in storage."""
    return await service.delete(ctx.session, ctx.tenant.tenant_id, data.id, force=data.force)


@router.post(
    "attach",
    "/v1/media/{id}/attachments",
    access=Access.editor,
    errors=[MediaNotFound, DraftNotFound, LicenseForbidsUse, FeaturedNeedsImage],
)
async def attach(ctx: Context, data: schemas.AttachMediaInput) -> schemas.MediaAttachment:
    """Attach an asset to a draft.

    A draft has one featured image: attaching another as `featured` replaces it. Attaching the
    same asset to the same draft in the same role again moves it to `position`. 409 when the
    licence has expired or its usage rights rule out commercial use (`reason`
    `license_expired` or `not_commercial`). `attribution_text` is the credit to publish with
    the image when its licence requires one. 404 for a draft or an asset of another
    organization."""
    return await service.attach(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "detach",
    "/v1/media/{id}/attachments/{draftId}",
    access=Access.editor,
    errors=[MediaNotFound, DraftNotFound],
)
async def detach(ctx: Context, data: schemas.DetachMediaInput) -> schemas.MediaDetached:
    """Detach an asset from a draft.

    Every role, or only `role`; `removed` counts the attachments removed (0 when there was
    none). Posts already published keep the image."""
    return await service.detach(ctx.session, ctx.tenant.tenant_id, data)


@router.get("getUsage", "/v1/media/{id}/usage", access=Access.member, errors=[MediaNotFound])
async def get_usage(ctx: Context, data: schemas.MediaUsageInput) -> schemas.MediaUsagePage:
    """Where an asset is used.

    The drafts it is attached to (deleted drafts left out), newest attachment first, each with
    its title and status. `published` lists where a published draft is live as the drafts
    domain knows it (the address of its first publication and when); which connection
    published it is not known here (`publisher_connection_id` null)."""
    return await service.usage(ctx.session, ctx.tenant.tenant_id, data)
