"""Signed upload URLs for local storage, served by this service (`PUT /v1/uploads/{path}`), and
signed download URLs of stored objects (`GET /v1/downloads/{path}`, for media).

The URL carries `expires` (unix seconds), `length` (the most bytes it accepts) and `signature`,
an HMAC-SHA256 over method, path, expiry, length and the Content-Type the upload must send.
The key is a random secret in the data directory, so every process sharing that directory
(and so that storage) verifies what any of them signed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, urlencode

from contentplatform.kit import secretfiles
from contentplatform.kit.errors import Forbidden

KEY_FILE = "upload-signing.key"
KEY_BYTES = 32
_NUMBER = re.compile(r"[0-9]{1,15}")  # bounded: int() of thousands of digits would raise


def load_or_create_key(data_dir: Path) -> bytes:
    path = data_dir / KEY_FILE
    stored = secretfiles.read_or_create(path, lambda: secrets.token_hex(KEY_BYTES).encode())
    key = bytes.fromhex(stored.decode().strip())
    if len(key) < KEY_BYTES:
        raise RuntimeError(f"{path} must hold at least {KEY_BYTES} random bytes, hex-encoded")
    return key


def normalize_content_type(value: str) -> str:
    """`Text/Plain; charset=UTF-8` and `text/plain;charset=utf-8` are the same type."""
    return "".join(value.lower().split())


class UploadSigner:
    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def from_data_dir(cls, data_dir: Path) -> UploadSigner:
        return cls(load_or_create_key(data_dir))

    def signature(
        self, path: str, *, expires: int, length: int, content_type: str, method: str = "PUT"
    ) -> str:
        # Newlines cannot occur in a valid path, an integer or a normalized type, so no two
        # different uploads share one message; the method keeps a download's signature from
        # ever serving as an upload's, and the other way round.
        message = "\n".join(
            [method, path, str(expires), str(length), normalize_content_type(content_type)]
        )
        return hmac.new(self._key, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def url(self, base_url: str, path: str, *, expires: int, length: int, content_type: str) -> str:
        query = urlencode(
            {
                "expires": expires,
                "length": length,
                "signature": self.signature(
                    path, expires=expires, length=length, content_type=content_type
                ),
            }
        )
        return f"{base_url.rstrip('/')}/v1/uploads/{quote(path, safe='/')}?{query}"

    def verify(self, path: str, query: Mapping[str, str], content_type: str, *, now: float) -> int:
        """The most bytes this upload may carry; Forbidden (403) unless the URL is genuine,
        unexpired and the request sends the Content-Type that was signed."""
        expires, length = query.get("expires", ""), query.get("length", "")
        if not (_NUMBER.fullmatch(expires) and _NUMBER.fullmatch(length)):
            raise Forbidden("This upload URL is incomplete; ask for a new one.")
        expected = self.signature(
            path, expires=int(expires), length=int(length), content_type=content_type
        )
        # As bytes: compare_digest refuses (TypeError) a str with non-ASCII characters.
        given = query.get("signature", "").encode("utf-8")
        if not hmac.compare_digest(expected.encode("ascii"), given):
            raise Forbidden(
                "The upload URL's signature does not match this request: the path, expiry, "
                "size and Content-Type are signed, so send the headers you were given."
            )
        if now >= int(expires):
            raise Forbidden("This upload URL has expired; ask for a new one.")
        return int(length)

    # Downloads: a GET of one object until `expires` (media's signed URLs). The message is the
    # upload's with method GET, length 0 and no type.

    def download_url(self, base_url: str, path: str, *, expires: int) -> str:
        signature = self.signature(path, expires=expires, length=0, content_type="", method="GET")
        query = urlencode({"expires": expires, "signature": signature})
        return f"{base_url.rstrip('/')}/v1/downloads/{quote(path, safe='/')}?{query}"

    def verify_download(self, path: str, query: Mapping[str, str], *, now: float) -> None:
        """Forbidden (403) unless the URL is a genuine, unexpired download URL of `path`."""
        expires = query.get("expires", "")
        if not _NUMBER.fullmatch(expires):
            raise Forbidden("This download URL is incomplete; ask for a new one.")
        expected = self.signature(
            path, expires=int(expires), length=0, content_type="", method="GET"
        )
        given = query.get("signature", "").encode("utf-8")
        if not hmac.compare_digest(expected.encode("ascii"), given):
            raise Forbidden("The download URL's signature does not match this path.")
        if now >= int(expires):
            raise Forbidden("This download URL has expired; ask for a new one.")
