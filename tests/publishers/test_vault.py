"""Credentials at rest: sealed with the configured keys, readable after a key rotation, and in
`local` with a key file the service makes in the data directory."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from contentplatform.config import Settings
from contentplatform.kit.errors import InternalError
from contentplatform.publishers.vault import KEY_FILE, Vault, vault

SECRET = {"username": "eda", "applicationPassword": "abcd efgh ijkl mnop"}


def test_sealed_credentials_do_not_show_the_secret_and_open_again() -> None:
    box = Vault([Fernet.generate_key()])
    sealed = box.seal(SECRET)
    assert "abcd" not in sealed and "eda" not in sealed
    assert box.open(sealed) == SECRET


def test_after_a_rotation_old_credentials_still_open_and_new_ones_use_the_new_key() -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed_before = Vault([old]).seal(SECRET)
    rotated = Vault([new, old])

    assert rotated.open(sealed_before) == SECRET
    sealed_after = rotated.seal(SECRET)
    assert Vault([new]).open(sealed_after) == SECRET
    with pytest.raises(InternalError, match="cannot be decrypted"):
        Vault([old]).open(sealed_after)


def test_local_makes_a_private_key_file_once(tmp_path: Path) -> None:
    settings = Settings(env="local", data_dir=tmp_path / "data", _env_file=None)
    sealed = vault(settings).seal(SECRET)
    key_file = tmp_path / "data" / KEY_FILE

    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert Vault([key_file.read_bytes().strip()]).open(sealed) == SECRET


def test_configured_keys_win_over_the_local_key_file(tmp_path: Path) -> None:
    key = Fernet.generate_key()
    settings = Settings(
        env="local",
        data_dir=tmp_path / "data",
        publisher_credentials_keys=key.decode(),
        _env_file=None,
    )
    assert Vault([key]).open(vault(settings).seal(SECRET)) == SECRET
    assert not (tmp_path / "data" / KEY_FILE).exists()
