"""What the media domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    RecordNotFound,
    ServiceUnavailable,
)


class MediaNotFound(RecordNotFound):
    """There is no such media asset in this organization (deleted, or another
    organization's)."""

    record = "media asset"


class NothingUploadedHere(NotFound):
    """Nothing has been uploaded at the storagePath (or it was removed)."""


class MediaPathTaken(Conflict):
    """The storagePath holds the file of another asset of the organization (`mediaId` names it):
    upload to a new URL (media.createUploadUrl)."""


class MediaTooLarge(BadRequest):
    """The file is larger than its type allows (images 20 MiB, video/mp4 100 MiB) or than this
    service accepts at all (MAX_UPLOAD_BYTES); the detail names the limit."""


class MediaTypeMismatch(BadRequest):
    """The uploaded bytes are not a file of the declared mimeType (checked by their content,
    not the name); the detail names both types."""


class ImageRefused(BadRequest):
    """The image cannot be taken: more pixels than the service decodes (a decompression bomb),
    or bytes no image reader can read."""


class MediaFilenameRefused(BadRequest):
    """The filename is empty, has slashes or control characters, or has another type's
    extension."""


class StockProviderRefused(BadRequest):
    """The stock provider is unknown, or not configured on this service (no access key): the
    detail says which, and `errors` names `provider`."""


class StockProviderUnavailable(ServiceUnavailable):
    """The stock provider could not be reached, failed, is rate-limiting us or refused our key
    (503; `retryable` says whether trying again may help); nothing was stored."""


class StockAssetNotFound(NotFound):
    """The stock provider has no photo with that id."""


class StockLicenseAdminOnly(Forbidden):
    """A stock asset's licence comes from its provider: only an admin may change it."""


class MediaInUse(Conflict):
    """The asset is attached to published drafts (`draftIds` names them): delete it with
    `force` to detach it from every draft anyway (the published posts keep it)."""


class LicenseForbidsUse(Conflict):
    """The asset's licence does not allow the use: it has expired, or its usage rights rule
    out commercial use (the detail says which)."""


class FeaturedNeedsImage(BadRequest):
    """A draft's featured media must be an image, not a video."""
