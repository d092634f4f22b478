"""Impersonation tokens: what a superadmin acts inside a tenant with (admin.startImpersonation).

The identity provider cannot mint a token for someone else here, so this service does: a JWT
signed with HS256 by a key of its own (PyJWT), issuer `contentplatform:impersonation`, audience
`contentplatform`, carrying `sub` (the impersonated user's subject), `act: {sub}` (the
superadmin, as Clerk's actor tokens name the actor), `org_id` (the tenant's organization),
`jti` (the session's id), `iat`, `nbf` and `exp` (at most an hour: sessions last 5 to 60
minutes). There is no refresh: a new session is a new token.

A valid signature is not enough: the guard (tenants/guard.py) also asks whether the session
`jti` names is still open, and `admin.endImpersonation` retires its answer in every process at
once by publishing `scope(session id)` through the runtime's invalidations.

Keys (`kid`: the first 16 hex digits of the key's SHA-256): `impersonation_token_keys` when set;
else derived (HKDF-SHA256) from each of `publisher_credentials_keys` (required outside `local`,
so every process of a deployment has them); else, in `local`, a random key in the data
directory. The first key signs, every one verifies, so a key rotates as those do.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import jwt

from contentplatform.auth import service_keys
from contentplatform.config import Settings
from contentplatform.kit.errors import Unauthorized

ISSUER = "contentplatform:impersonation"
AUDIENCE = "contentplatform"
ALGORITHM = "HS256"
KEY_FILE = "impersonation-token.key"
# The longest session, and so the longest lifetime of a token.
MAX_SECONDS = 3600
_DERIVED = b"contentplatform impersonation tokens"
# The invalidation scope of one session (kit/invalidation.py): the guard forgets it at once.
SCOPE_PREFIX = "impersonation"


def scope(session_id: uuid.UUID) -> str:
    return f"{SCOPE_PREFIX}:{session_id}"


def _kid(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


class ImpersonationTokens:
    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("impersonation tokens need a key")
        self._signing = keys[0]
        self._keys = {_kid(key): key for key in keys}

    @classmethod
    def from_settings(cls, settings: Settings) -> ImpersonationTokens:
        return cls(signing_keys(settings))

    def mint(
        self,
        *,
        session_id: uuid.UUID,
        subject: str,
        actor: str,
        org_id: str,
        issued_at: datetime,
        expires_at: datetime,
    ) -> str:
        """The session's token: `subject` of `org_id` as acted by `actor` until `expires_at`."""
        issued, expires = int(issued_at.timestamp()), int(expires_at.timestamp())
        if expires - issued > MAX_SECONDS:
            raise ValueError("an impersonation token lasts an hour at most")
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": subject,
            "act": {"sub": actor},
            "org_id": org_id,
            "jti": str(session_id),
            "iat": issued,
            "nbf": issued,
            "exp": expires,
        }
        return jwt.encode(claims, self._signing, ALGORITHM, headers={"kid": _kid(self._signing)})

    def verify(self, token: str, *, leeway: float) -> dict[str, Any]:
        """The claims of a genuine, unexpired token of ours (every one checked for its shape);
        Unauthorized (401) otherwise. Whether its session is still open is the guard's question."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise Unauthorized("The impersonation token is malformed.") from None
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise Unauthorized("The impersonation token is signed by a key this service lacks.")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                issuer=ISSUER,
                audience=AUDIENCE,
                leeway=leeway,
                options={"require": ["iss", "aud", "sub", "act", "org_id", "jti", "iat", "exp"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("The impersonation session has expired.") from None
        except jwt.PyJWTError:
            raise Unauthorized("The impersonation token could not be verified.") from None
        act, subject, org = claims.get("act"), claims.get("sub"), claims.get("org_id")
        if not (
            isinstance(act, dict)
            and isinstance(act.get("sub"), str)
            and act["sub"]
            and isinstance(subject, str)
            and subject
            and isinstance(org, str)
            and org
            and int(claims["exp"]) - int(claims["iat"]) <= MAX_SECONDS
        ):
            raise Unauthorized("The impersonation token could not be verified.")
        session_id(claims)  # a jti that is no session id is no token of ours
        return claims


def session_id(claims: dict[str, Any]) -> uuid.UUID:
    """The session a verified token's `jti` names."""
    try:
        return uuid.UUID(str(claims["jti"]))
    except (KeyError, ValueError):
        raise Unauthorized("The impersonation token could not be verified.") from None


def signing_keys(settings: Settings) -> list[bytes]:
    """The keys impersonation tokens are signed (the first) and verified (all) with
    (auth/service_keys.py)."""
    return service_keys.keys_of(
        settings, settings.impersonation_token_keys, label=_DERIVED, key_file=KEY_FILE
    )
