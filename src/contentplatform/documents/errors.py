"""What the documents domain refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict, RecordNotFound


class DocumentNotFound(RecordNotFound):
    """There is no such document in this organization (deleted, or another organization's)."""

    record = "document"


class StoragePathTaken(Conflict):
    """A live document of the organization already uses this storagePath."""


class SecondPrimaryDocument(Conflict):
    """Another document is already the organization's primary knowledge document; only one may
    be (the detail names it)."""


class DocumentNotRetryable(Conflict):
    """Only a document in `error` whose upload was confirmed can be ingested again."""


class UploadExpired(Conflict):
    """The document registered at this storagePath failed as `upload_missing`: no upload was
    confirmed within the upload URL's lifetime. Delete it, then confirm a new upload."""


class NothingUploaded(BadRequest):
    """Nothing has been uploaded at the storagePath yet."""


class FileTooLarge(BadRequest):
    """The file is larger than this service accepts (MAX_UPLOAD_BYTES)."""


class FileTypeMismatch(BadRequest):
    """The uploaded bytes are not a file of the declared fileType (checked by content)."""


class FilenameRefused(BadRequest):
    """The filename is empty, has slashes or control characters, is too long, or has another
    type's extension."""


class DocumentNotReady(BadRequest):
    """A document named to ground an article is not ready (pending, processing, in error or
    archived)."""
