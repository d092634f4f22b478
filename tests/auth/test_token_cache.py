"""Verified tokens are remembered, and never longer than verifying them again would allow.

TokenVerifier keeps a token it verified until the token expires (with the same leeway) or the
signing keys would be fetched again, whichever comes first; any other token text, a byte
changed included, is verified from scratch. Every attack of tests/auth/test_jwt.py runs against
the same, caching, verifier.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from contentplatform.auth import devkeys
from contentplatform.auth.tokens import TokenVerifier
from contentplatform.config import Settings
from contentplatform.kit.errors import Unauthorized


def verifier(data_dir: Path, **settings: object) -> TokenVerifier:
    values: dict[str, object] = {"data_dir": data_dir, "jwt_leeway_seconds": 0, **settings}
    return TokenVerifier(Settings(_env_file=None, **values))  # type: ignore[arg-type]


def mint(data_dir: Path, ttl_seconds: int = 3600, user: str = "u1") -> str:
    return devkeys.mint_token(data_dir, org="org_a", user=user, ttl_seconds=ttl_seconds)


def verify(checker: TokenVerifier, token: str) -> str:
    return asyncio.run(checker.verify(token)).subject


def test_a_remembered_token_is_refused_once_it_expires(tmp_path):
    checker = verifier(tmp_path)
    token = mint(tmp_path, ttl_seconds=2)
    assert verify(checker, token) == "u1"
    assert verify(checker, token) == "u1"  # from the cache
    time.sleep(2.2)
    with pytest.raises(Unauthorized, match="expired"):
        verify(checker, token)


def test_a_remembered_token_needs_no_key_but_another_token_does(tmp_path):
    checker = verifier(tmp_path)
    token = mint(tmp_path)
    verify(checker, token)
    # The key the token was signed with is no longer trusted: the remembered token still
    # passes (until the keys would be refetched), a new one signed by it does not.
    checker.dev_key = jwt.PyJWK(devkeys.public_jwk(Ed25519PrivateKey.generate()))
    assert verify(checker, token) == "u1"
    with pytest.raises(Unauthorized):
        verify(checker, mint(tmp_path, user="u2"))


def test_a_token_is_remembered_no_longer_than_the_keys_are_cached(tmp_path):
    checker = verifier(tmp_path, jwks_cache_seconds=1)
    token = mint(tmp_path)
    verify(checker, token)
    checker.dev_key = jwt.PyJWK(devkeys.public_jwk(Ed25519PrivateKey.generate()))
    time.sleep(1.2)
    with pytest.raises(Unauthorized):
        verify(checker, token)


def test_a_changed_byte_is_another_token_and_is_verified(tmp_path):
    checker = verifier(tmp_path)
    token = mint(tmp_path)
    verify(checker, token)
    header, payload, signature = token.split(".")
    flipped = ("A" if signature[5] != "A" else "B").join((signature[:5], signature[6:]))
    with pytest.raises(Unauthorized):
        verify(checker, f"{header}.{payload}.{flipped}")


def test_the_cache_is_bounded_and_can_be_turned_off(tmp_path):
    checker = verifier(tmp_path, token_cache_size=2)
    tokens = [mint(tmp_path, user=f"u{n}") for n in range(5)]
    assert [verify(checker, token) for token in tokens] == [f"u{n}" for n in range(5)]
    assert checker.verified is not None and len(checker.verified) == 2

    uncached = verifier(tmp_path, token_cache_size=0)
    assert uncached.verified is None
    assert verify(uncached, tokens[0]) == "u0"
    uncached.dev_key = jwt.PyJWK(devkeys.public_jwk(Ed25519PrivateKey.generate()))
    with pytest.raises(Unauthorized):  # verified again, against the key it has now
        verify(uncached, tokens[0])
