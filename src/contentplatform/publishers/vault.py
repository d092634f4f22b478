"""Credentials at rest: Fernet (AES-128-CBC + HMAC, from `cryptography`) with rotatable keys."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from contentplatform.config import Settings
from contentplatform.kit import secretfiles
from contentplatform.kit.errors import InternalError

KEY_FILE = "publisher-credentials.key"


class Vault:
    def __init__(self, keys: list[bytes]) -> None:
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    def seal(self, secret: dict[str, Any] | str) -> str:
        return self._fernet.encrypt(json.dumps(secret).encode()).decode()

    def open(self, sealed: str) -> Any:
        try:
            return json.loads(self._fernet.decrypt(sealed.encode()))
        except InvalidToken:
            raise InternalError(
                "Stored publisher credentials cannot be decrypted with the configured keys."
            ) from None


def vault(settings: Settings) -> Vault:
    if settings.publisher_credentials_keys is not None:
        keys = settings.publisher_credentials_keys.get_secret_value()
        return _vault(tuple(key.strip() for key in keys.split(",") if key.strip()))
    # Outside `local` the keys are required by the settings themselves.
    return _local_vault(settings.data_dir.resolve())


@cache
def _vault(keys: tuple[str, ...]) -> Vault:
    return Vault([key.encode() for key in keys])


@cache
def _local_vault(data_dir: Path) -> Vault:
    key = secretfiles.read_or_create(data_dir / KEY_FILE, Fernet.generate_key)
    return Vault([key.strip()])
