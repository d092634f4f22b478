"""Object keys: every shape of key this service makes, and the paths a tenant may use, always
under its own organization's prefix (`<org id>/uploads/...`, `<org id>/derived/...`).

Paths come from clients (e.g. `storagePath` when registering a document), so every rule here
keeps them from reaching outside `<org id>/` on any backend: a local file system resolves `..`,
backslashes and drive letters; proxies and stores may decode `%2e%2e` or `%2f` a second time.
"""

from __future__ import annotations

import re
import unicodedata
import uuid

from contentplatform.kit.errors import BadRequest, FieldError

MAX_PATH_BYTES = 1024  # S3's limit on a key, in UTF-8 bytes
MAX_FILENAME_CHARS = 120

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _reject(reason: str) -> BadRequest:
    return BadRequest(f"Invalid storagePath: {reason}.", errors=[FieldError("storagePath", reason)])


def validate_storage_path(path: str, org_id: str) -> str:
    """Return `path` unchanged when `org_id` may use it; raise BadRequest (400) otherwise."""
    if not org_id or "/" in org_id:
        # Such an id would nest inside another organization's prefix (`a/b/` within `a/`).
        raise _reject("cannot belong to an organization id that is empty or contains '/'")
    if not path:
        raise _reject("must not be empty")
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise _reject(f"must be at most {MAX_PATH_BYTES} bytes")
    if _CONTROL.search(path):
        raise _reject("must not contain control characters")
    if "\\" in path:
        raise _reject("must use '/' as separator, not '\\'")
    if "%" in path:
        # Refused outright rather than decoded: a second decoding elsewhere must find nothing.
        raise _reject("must not contain percent-encoding ('%')")
    if ":" in path:
        raise _reject("must not contain ':' (drive letters and URL schemes)")
    if path.startswith("/"):
        raise _reject("must be relative, not start with '/'")
    for segment in path.split("/"):
        if not segment:
            raise _reject("must not contain empty segments ('//' or a trailing '/')")
        if segment in (".", ".."):
            raise _reject("must not contain '.' or '..' segments")
        if segment != segment.strip():
            raise _reject("segments must not start or end with whitespace")
    if not path.startswith(f"{org_id}/"):
        raise _reject("must start with your organization id and '/'")
    return path


def safe_filename(filename: str) -> str:
    """A basename safe in any store and on any file system: ASCII letters, digits, `._-`."""
    base = re.split(r"[\\/]", filename)[-1]
    ascii_name = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode("ascii")
    stem, dot, extension = ascii_name.rpartition(".")
    if not dot:
        stem, extension = extension, ""
    stem = _UNSAFE_NAME.sub("-", stem).strip(".-") or "file"
    extension = _UNSAFE_NAME.sub("", extension)[:16]
    suffix = f".{extension}" if extension else ""
    return stem[: MAX_FILENAME_CHARS - len(suffix)] + suffix


def new_upload_path(org_id: str, filename: str) -> str:
    """A fresh path for an upload; the random part keeps two uploads of one name apart."""
    path = f"{org_id}/uploads/{uuid.uuid4()}/{safe_filename(filename)}"
    return validate_storage_path(path, org_id)


def organization_of(path: str) -> str:
    """The organization whose prefix a key is under: its first segment."""
    return path.split("/", 1)[0]


def derived_text_path(org_id: str, document_id: uuid.UUID, version: int) -> str:
    """Where the text extracted from a document's version is kept."""
    return f"{org_id}/derived/documents/{document_id}/v{version}.txt"


def export_path(org_id: str, export_id: uuid.UUID, extension: str) -> str:
    """Where the file an analytics export writes is kept (deleted when the export expires)."""
    return f"{org_id}/exports/{export_id}.{extension}"
