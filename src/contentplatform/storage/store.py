"""Object storage through obstore: local files (the default) or an S3-compatible bucket.

Callers see bytes, `ObjectInfo`, `UploadTarget` and two errors: `ObjectMissing` and
`StorageError`, whose messages are safe to show. The backend's own message (which can name
file system paths, endpoints or buckets) goes to the log only.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import obstore
from obstore.store import LocalStore, S3Store

from contentplatform.config import Settings
from contentplatform.kit import health
from contentplatform.kit.errors import InternalError
from contentplatform.storage.signing import UploadSigner

log = logging.getLogger(__name__)

# Where obstore (like the AWS SDKs) reads a custom endpoint from, most specific first.
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


class StorageError(InternalError):
    """The store failed. A 500 problem if nobody handles it; the detail names no secrets."""


class ObjectMissing(StorageError):
    """There is no object at the path."""


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    last_modified: datetime


@dataclass(frozen=True, kw_only=True)
class UploadTarget:
    """Where and how a client uploads one object: `method url` with `headers`."""

    url: str
    method: str = "PUT"
    headers: dict[str, str]
    expires_at: datetime


@contextlib.contextmanager
def _failures(operation: str, path: str, *, missing: bool = True) -> Iterator[None]:
    """Turn the backend's errors into ours. `missing`: a FileNotFoundError means the object is
    absent (for a write it means the bucket is, which is a failure like any other)."""
    try:
        yield
    except FileNotFoundError as error:
        if not missing:
            health.record("storage", False)
            log.warning("storage %s %s failed: %s", operation, path, error)
            raise StorageError(f"Object storage could not {operation} {path}.") from error
        health.record("storage", True)  # it answered: the object is not there
        raise ObjectMissing(f"There is no object at {path}.") from error
    except Exception as error:  # every failure of one backend call, whatever obstore raised
        health.record("storage", False)
        log.warning("storage %s %s failed: %s", operation, path, error)
        raise StorageError(f"Object storage could not {operation} {path}.") from error
    health.record("storage", True)  # for system.status (kit/health.py)


class ObjectStore:
    def __init__(self, backend: LocalStore | S3Store, *, root: Path | None, data_dir: Path) -> None:
        self.backend = backend
        self.root = root  # the directory of a local store; None for S3
        self._data_dir = data_dir
        self._signer: UploadSigner | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ObjectStore:
        return cls.from_url(settings.resolved_storage_url, settings.data_dir)

    @classmethod
    def from_url(cls, url: str, data_dir: Path) -> ObjectStore:
        """The store at `url` (Settings.resolved_storage_url), for a process that has no
        settings of its own (an ingestion worker)."""
        parts = urlsplit(url)
        if parts.scheme == "file":
            # `file://name/x` names a host, not a folder: refuse it rather than write to /x.
            root = Path(url2pathname(parts.path))
            if parts.netloc not in ("", "localhost") or not root.is_absolute():
                raise ValueError(f"a file:// storage URL needs file:///absolute/path, not {url!r}")
            return cls(LocalStore(root, mkdir=True), root=root, data_dir=data_dir)
        if parts.scheme in ("s3", "s3a"):
            endpoint = next((os.environ[v] for v in ENDPOINT_VARIABLES if v in os.environ), "")
            # A plain-http endpoint is a local S3-compatible server (MinIO, moto); asking for
            # it explicitly is consent enough. AWS itself is always https.
            allow_http = endpoint.startswith("http://")
            backend = S3Store.from_url(url, client_options={"allow_http": allow_http})
            return cls(backend, root=None, data_dir=data_dir)
        raise ValueError(f"unsupported storage URL {url!r} (use file:///path or s3://bucket)")

    @property
    def is_local(self) -> bool:
        return self.root is not None

    @property
    def signer(self) -> UploadSigner:
        """Signs and verifies this service's own upload URLs (local storage only)."""
        if self._signer is None:
            self._signer = UploadSigner.from_data_dir(self._data_dir)
        return self._signer

    async def put(self, path: str, data: bytes, content_type: str | None = None) -> None:
        # Local files keep no attributes (obstore refuses them), so the type is S3's only.
        attributes = {"Content-Type": content_type} if content_type and not self.is_local else None
        with _failures("write", path, missing=False):
            await obstore.put_async(self.backend, path, data, attributes=attributes)

    async def put_file(self, path: str, file: Path, content_type: str | None = None) -> None:
        """Write the object from a local file, read in parts (a multipart upload to S3): memory
        holds one part, never the whole object (an export of a million rows)."""
        attributes = {"Content-Type": content_type} if content_type and not self.is_local else None
        with _failures("write", path, missing=False):
            await obstore.put_async(self.backend, path, file, attributes=attributes)

    async def get(self, path: str) -> bytes:
        with _failures("read", path):
            result = await obstore.get_async(self.backend, path)
            return bytes(await result.bytes_async())

    async def get_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes [start, end), cut short at the end of the object. A range starting at or past
        the end is a StorageError, as it is for obstore."""
        if not 0 <= start < end:
            raise ValueError(f"bad range {start}..{end}")
        with _failures("read", path):
            return bytes(await obstore.get_range_async(self.backend, path, start=start, end=end))

    async def head(self, path: str) -> ObjectInfo | None:
        try:
            with _failures("inspect", path):
                meta = await obstore.head_async(self.backend, path)
        except ObjectMissing:
            return None
        return ObjectInfo(size=meta["size"], last_modified=meta["last_modified"])

    async def delete(self, path: str) -> None:
        """Remove the object; nothing to remove is fine (S3 behaves so, local files do not)."""
        with contextlib.suppress(ObjectMissing), _failures("delete", path):
            await obstore.delete_async(self.backend, path)

    async def ping(self) -> None:
        """A cheap check that the store is reachable and usable (for readiness)."""
        if self.root is not None:
            if not (self.root.is_dir() and os.access(self.root, os.W_OK)):
                raise StorageError("The local storage directory is missing or not writable.")
            return
        # Listing a prefix that holds nothing fails when the bucket or credentials are wrong.
        with _failures("list", ".readyz/"):
            await obstore.list_with_delimiter_async(self.backend, ".readyz")

    async def upload_url(
        self,
        path: str,
        *,
        content_type: str,
        content_length: int,
        expires_in: int,
        base_url: str | None = None,
    ) -> UploadTarget:
        """Where a client PUTs `content_length` bytes to `path` within `expires_in` seconds.

        S3: a presigned URL (it binds path and expiry only; confirm size and type after the
        upload). Local: a URL on this service (`base_url`, this request's) whose signature also
        binds the most bytes it accepts and the Content-Type.
        """
        if content_length < 0 or expires_in <= 0:
            raise ValueError("content_length must be >= 0 and expires_in > 0")
        headers = {"Content-Type": content_type}
        if isinstance(self.backend, S3Store):
            expires_at = datetime.now(UTC) + timedelta(seconds=expires_in)
            with _failures("sign an upload to", path):
                url = await obstore.sign_async(
                    self.backend, "PUT", path, timedelta(seconds=expires_in)
                )
            return UploadTarget(url=url, headers=headers, expires_at=expires_at)
        if not base_url:
            raise ValueError("local storage needs the service's base_url for upload URLs")
        expires = math.ceil(time.time()) + expires_in
        url = self.signer.url(
            base_url, path, expires=expires, length=content_length, content_type=content_type
        )
        return UploadTarget(
            url=url, headers=headers, expires_at=datetime.fromtimestamp(expires, UTC)
        )

    async def download_url(self, path: str, *, expires_in: int, base_url: str | None = None) -> str:
        """A URL that GETs the object at `path` for `expires_in` seconds, with no other
        credential: S3's presigned GET, or with local storage a URL on this service
        (`base_url`, this request's) signed as upload URLs are. The expiry is rounded up to a
        whole minute, so URLs handed out within one minute are the same URL (a browser's cache
        keeps the image)."""
        if expires_in <= 0:
            raise ValueError("expires_in must be > 0")
        expires = math.ceil((time.time() + expires_in) / 60) * 60
        if isinstance(self.backend, S3Store):
            with _failures("sign a download of", path):
                return str(
                    await obstore.sign_async(
                        self.backend, "GET", path, timedelta(seconds=expires - time.time())
                    )
                )
        if not base_url:
            raise ValueError("local storage needs the service's base_url for download URLs")
        return self.signer.download_url(base_url, path, expires=expires)
