"""Fixtures of the settings tests: the OpenAI-compatible stand-in a service process writes with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llm import ChatServer


@pytest.fixture
def llm() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server
