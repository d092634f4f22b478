"""API keys as credentials: how one is made, recognised and stored.

A key is `cpk_live_` and 43 characters of `secrets.token_urlsafe(32)` (256 random bits). Only its
SHA-256 is stored: with that much randomness a slow password hash adds nothing (GitHub and Stripe
store tokens the same way), and one indexed lookup finds the key. `prefix` (`cpk_live_3f9a`) is
what lists show, so a user can tell keys apart without the secret.
"""

from __future__ import annotations

import hashlib
import secrets

MARKER = "cpk_"
LIVE = "cpk_live_"
PREFIX_LENGTH = len(LIVE) + 4
# What an Authorization header may carry as a key: anything longer is no key of ours.
MAX_LENGTH = 100


def new_key() -> tuple[str, str]:
    """A new key and its display prefix."""
    secret = LIVE + secrets.token_urlsafe(32)
    return secret, secret[:PREFIX_LENGTH]


def is_api_key(token: str) -> bool:
    """Whether a bearer token is meant as an API key (a JWT starts `eyJ`)."""
    return token.startswith(MARKER)


def digest(secret: str) -> str:
    """What is stored of a key, and looked up by."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
