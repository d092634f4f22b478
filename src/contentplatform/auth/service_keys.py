"""The keys of the tokens this service signs for itself (stream tokens, impersonation tokens).

Each kind has a setting of its own (comma-separated: the first signs, every one verifies, so a
key rotates by being put second); without it, keys are derived (HKDF-SHA256, with the kind's
own label) from each of `publisher_credentials_keys`, which every process of a deployment
shares; without those (only `local` allows it), a random key kept in the data directory.
Knowing one kind's key tells nothing of another's, nor of the publishers' key.
"""

from __future__ import annotations

import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pydantic import SecretStr

from contentplatform.config import Settings
from contentplatform.kit import secretfiles


def keys_of(
    settings: Settings, own: SecretStr | None, *, label: bytes, key_file: str
) -> list[bytes]:
    """The signing (first) and verifying keys of one kind of token."""
    if own is not None:
        return _listed(own)
    if settings.publisher_credentials_keys is not None:
        return [derived(key, label) for key in _listed(settings.publisher_credentials_keys)]
    stored = secretfiles.read_or_create(
        settings.data_dir / key_file, lambda: secrets.token_hex(32).encode()
    )
    return [stored.strip()]


def derived(key: bytes, label: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label).derive(key)


def _listed(value: SecretStr) -> list[bytes]:
    return [key.strip().encode() for key in value.get_secret_value().split(",") if key.strip()]
