"""Stream tokens' keys (auth/stream_tokens.py): every process of a deployment verifies what any
of them signed (shared keys, or keys derived from the publisher credentials keys every process
has), a key rotates (the first signs, all verify), and a bad key is refused at start."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from contentplatform.auth.stream_tokens import StreamTokens, signing_keys
from contentplatform.config import Settings
from contentplatform.kit.errors import Unauthorized

OLD, NEW = "o" * 32, "n" * 40


def settings(data_dir: Path, **values: Any) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, **values)  # type: ignore[call-arg]


def minted(tokens: StreamTokens) -> str:
    token, _ = tokens.mint(
        subject="u1", org_id="org_a", tenant_id=uuid.uuid4(), stream="chat:x", now=time.time()
    )
    return token


def test_processes_on_other_machines_verify_each_others_tokens(tmp_path: Path):
    fernet = Fernet.generate_key().decode()
    # Two processes with data directories of their own, the same publisher keys: the same key.
    one = StreamTokens.from_settings(settings(tmp_path / "a", publisher_credentials_keys=fernet))
    two = StreamTokens.from_settings(settings(tmp_path / "b", publisher_credentials_keys=fernet))
    assert two.verify(minted(one)).stream == "chat:x"
    # The key is derived, not the publisher key itself.
    assert signing_keys(settings(tmp_path, publisher_credentials_keys=fernet)) != [fernet.encode()]
    # Without either setting (local), each data directory has a key of its own.
    alone = StreamTokens.from_settings(settings(tmp_path / "c"))
    with pytest.raises(Unauthorized):
        alone.verify(minted(one))
    same_dir = StreamTokens.from_settings(settings(tmp_path / "c"))
    assert same_dir.verify(minted(alone)).subject == "u1"


def test_keys_rotate_the_first_signing_every_one_verifying(tmp_path: Path):
    before = StreamTokens.from_settings(settings(tmp_path, stream_token_keys=OLD))
    during = StreamTokens.from_settings(settings(tmp_path, stream_token_keys=f"{NEW}, {OLD}"))
    after = StreamTokens.from_settings(settings(tmp_path, stream_token_keys=NEW))
    issued_before = minted(before)
    assert during.verify(issued_before).org_id == "org_a"
    assert after.verify(minted(during)).org_id == "org_a"
    with pytest.raises(Unauthorized):
        after.verify(issued_before)


@pytest.mark.parametrize("keys", ["short", f"{OLD},short", " , "])
def test_a_key_shorter_than_32_characters_is_refused_at_start(tmp_path: Path, keys: str):
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_STREAM_TOKEN_KEYS"):
        settings(tmp_path, stream_token_keys=keys)
