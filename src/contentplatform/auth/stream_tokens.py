"""Stream tokens: what a browser's `EventSource` opens one event stream with, as it cannot send
an Authorization header.

A token is `cpst_` and a JWT signed with HS256 by this service (PyJWT): the caller (`sub`), the
organization and its tenant (`org`, `tid`), the one stream it opens (`stm`, e.g.
`chat:<message id>`), `iat` and `exp` (`stream_token_ttl_seconds` later), for the audience
`contentplatform:stream`. It is taken only as the `streamToken` query parameter of an operation
declared to accept it (core/procedures.py), and only for the stream it names; as a bearer token
it is refused everywhere. Its expiry is checked when a stream opens, not while it runs.

Keys (`kid`: the first 16 hex digits of the key's SHA-256): `stream_token_keys` when set; else
derived (HKDF-SHA256) from each of `publisher_credentials_keys`, which every process of a
deployment has already; else, in `local`, a random key in the data directory. The first key
signs, every one verifies, so a key rotates as those do.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from contentplatform.auth import service_keys
from contentplatform.config import Settings
from contentplatform.kit.errors import Unauthorized

MARKER = "cpst_"
# The query parameter a stream URL carries its token in.
PARAMETER = "streamToken"
AUDIENCE = "contentplatform:stream"
ALGORITHM = "HS256"
KEY_FILE = "stream-token.key"
# The longest token taken: a real one is about 350 characters.
MAX_LENGTH = 2048
_DERIVED = b"contentplatform stream tokens"


@dataclass(frozen=True)
class StreamGrant:
    """What a stream token grants: `subject` of organization `org_id` (tenant `tenant_id`) may
    read `stream` until `expires_at`."""

    subject: str
    org_id: str
    tenant_id: uuid.UUID
    stream: str
    expires_at: datetime


def is_stream_token(token: str) -> bool:
    return token.startswith(MARKER)


def _kid(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


class StreamTokens:
    def __init__(self, keys: Sequence[bytes], ttl_seconds: int) -> None:
        if not keys:
            raise ValueError("stream tokens need a key")
        self.ttl_seconds = ttl_seconds
        self._signing = keys[0]
        self._keys = {_kid(key): key for key in keys}

    @classmethod
    def from_settings(cls, settings: Settings) -> StreamTokens:
        return cls(signing_keys(settings), settings.stream_token_ttl_seconds)

    def mint(
        self, *, subject: str, org_id: str, tenant_id: uuid.UUID, stream: str, now: float | None
    ) -> tuple[str, StreamGrant]:
        """A token for `stream`, valid from `now` (unix seconds; None: the present) for the
        configured lifetime, and what it grants."""
        issued = time.time() if now is None else now
        # Whole seconds (a JWT's NumericDate), rounded so that it lasts at least its lifetime.
        expires = math.ceil(issued + self.ttl_seconds)
        claims = {
            "sub": subject,
            "org": org_id,
            "tid": str(tenant_id),
            "stm": stream,
            "aud": AUDIENCE,
            "iat": int(issued),
            "exp": expires,
        }
        token = jwt.encode(claims, self._signing, ALGORITHM, headers={"kid": _kid(self._signing)})
        grant = StreamGrant(
            subject, org_id, tenant_id, stream, datetime.fromtimestamp(expires, tz=UTC)
        )
        return MARKER + token, grant

    def verify(self, token: str) -> StreamGrant:
        """What a genuine, unexpired token grants; Unauthorized (401) otherwise."""
        if not is_stream_token(token) or len(token) > MAX_LENGTH:
            raise Unauthorized("This stream token is not valid; ask for a new stream URL.")
        compact = token[len(MARKER) :]
        invalid = Unauthorized("This stream token is not valid; ask for a new stream URL.")
        try:
            kid = jwt.get_unverified_header(compact).get("kid")
        except jwt.PyJWTError:
            raise invalid from None
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise invalid
        try:
            claims = self._decode(compact, key, verify_exp=True)
        except jwt.ExpiredSignatureError:
            expired = datetime.fromtimestamp(
                self._decode(compact, key, verify_exp=False)["exp"], tz=UTC
            )
            raise Unauthorized(
                f"This stream URL expired at {expired.isoformat().replace('+00:00', 'Z')}; ask "
                "for a new one and open it with ?lastEventId= to resume after the last event "
                "seen."
            ) from None
        except jwt.PyJWTError:
            raise invalid from None
        try:
            return StreamGrant(
                subject=_text(claims["sub"]),
                org_id=_text(claims["org"]),
                tenant_id=uuid.UUID(_text(claims["tid"])),
                stream=_text(claims["stm"]),
                expires_at=datetime.fromtimestamp(claims["exp"], tz=UTC),
            )
        except (KeyError, TypeError, ValueError):
            raise Unauthorized(
                "This stream token is not valid; ask for a new stream URL."
            ) from None

    @staticmethod
    def _decode(compact: str, key: bytes, *, verify_exp: bool) -> dict[str, Any]:
        claims: dict[str, Any] = jwt.decode(
            compact,
            key,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            options={
                "require": ["sub", "org", "tid", "stm", "aud", "iat", "exp"],
                "verify_exp": verify_exp,
            },
        )
        return claims


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("not a string")
    return value


def signing_keys(settings: Settings) -> list[bytes]:
    """The keys stream tokens are signed (the first) and verified (all) with
    (auth/service_keys.py)."""
    return service_keys.keys_of(
        settings, settings.stream_token_keys, label=_DERIVED, key_file=KEY_FILE
    )
