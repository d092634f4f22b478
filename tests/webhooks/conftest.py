"""The webhooks tests' organizations (`hooks`, and `other_hooks` for cross-tenant checks) and a
loopback receiver per test (tests/support/webhook_receiver.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.orgs import org_fixture
from tests.support.webhook_receiver import WebhookReceiver
from tests.webhooks.support import Hooks

hooks = org_fixture(Hooks)
other_hooks = org_fixture(Hooks, second=True)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running
