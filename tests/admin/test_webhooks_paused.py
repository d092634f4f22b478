"""A suspended tenant's outbound webhook deliveries wait (admin.setTenantStatus), never fail:
an event of the tenant's while it is suspended is not sent (its delivery workflow finds the
tenant suspended and waits); reactivated, it is delivered once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from dbos import DBOS

from contentplatform.webhooks import durable
from contentplatform.webhooks.deliveries import event_workflow_id
from tests.admin.support import Operator
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.webhook_receiver import WebhookReceiver
from tests.webhooks.support import Hooks, emit

DEADLINE = 30.0


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


def checks_of(workflow_id: str) -> list[object]:
    """What each of the workflow's `webhooks.tenant_active` steps answered."""
    return [
        step["output"]
        for step in DBOS.list_workflow_steps(workflow_id)
        if step["function_name"] == "webhooks.tenant_active"
    ]


@pytest.mark.parametrize("call", ["rpc"], indirect=True)
def test_a_suspended_tenants_deliveries_wait_and_go_once_reactivated(
    operator: Operator, tenant: Org, receiver: WebhookReceiver, run: Run, monkeypatch
) -> None:
    monkeypatch.setattr(durable, "SUSPENDED_RECHECK_SECONDS", 0.2)
    hooks = Hooks.of(tenant)
    endpoint = hooks.create(receiver.url, events=["draft.created"])
    receiver.trust(endpoint["secret"])
    status = {"id": str(tenant.tenant_id), "reason": "Payment dispute open"}
    operator.ok("admin.setTenantStatus", {**status, "status": "suspended"})

    event_id = emit(run, tenant.tenant_id, "draft.created", {"title": "Pruning roses"})
    workflow = event_workflow_id(event_id)
    deadline = time.monotonic() + DEADLINE
    while checks_of(workflow).count(False) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert checks_of(workflow).count(False) >= 2  # looked, found it suspended, waited, again
    assert receiver.ids() == []

    operator.ok("admin.setTenantStatus", {**status, "status": "active"})
    (request,) = receiver.wait_for(1)
    assert request.verified
    delivery = hooks.wait_for_delivery(endpoint["id"])
    assert delivery["status"] == "succeeded" and len(delivery["attempts"]) == 1
