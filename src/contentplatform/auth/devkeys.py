"""The local development identity provider: a signing key in the data directory.

Only ever trusted when CONTENTPLATFORM_ENV=local.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from contentplatform.auth.context import Role
from contentplatform.kit import secretfiles

DEV_ISSUER = "contentplatform-local"
DEV_AUDIENCE = "contentplatform"
DEV_ALGORITHM = "EdDSA"
KEY_FILE = "dev-signing-key.pem"


def load_or_create_key(data_dir: Path) -> Ed25519PrivateKey:
    pem = secretfiles.read_or_create(
        data_dir / KEY_FILE,
        lambda: Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise RuntimeError(f"{data_dir / KEY_FILE} is not an Ed25519 private key")
    return key


def public_jwk(key: Ed25519PrivateKey) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(key.public_key()))
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwk.update(kid=hashlib.sha256(raw).hexdigest()[:16], alg=DEV_ALGORITHM, use="sig")
    return jwk


def jwks_document(data_dir: Path) -> dict[str, Any]:
    return {"keys": [public_jwk(load_or_create_key(data_dir))]}


def mint_token(
    data_dir: Path,
    *,
    org: str | None,
    user: str,
    role: Role = Role.member,
    superadmin: bool = False,
    ttl_seconds: int = 8 * 3600,
    email: str | None = None,
    name: str | None = None,
    org_name: str | None = None,
) -> str:
    key = load_or_create_key(data_dir)
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": DEV_ISSUER,
        "aud": DEV_AUDIENCE,
        "sub": user,
        "iat": now,
        "nbf": now,
        "exp": now + ttl_seconds,
        "jti": str(uuid.uuid4()),
        "email": email or f"{user}@example.test",
        "name": name or user,
    }
    if org:
        claims.update(org_id=org, org_role=f"org:{role.value}", org_name=org_name or org)
    if superadmin:
        claims["superadmin"] = True
    return jwt.encode(claims, key, algorithm=DEV_ALGORITHM, headers={"kid": public_jwk(key)["kid"]})
