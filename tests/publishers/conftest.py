"""The stand-in WordPress site most publishers tests publish to (loopback only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.targets.wordpress import WordPressServer


@pytest.fixture
def wp() -> Iterator[WordPressServer]:
    with WordPressServer() as server:
        yield server
