"""An organization's outbound webhooks as a test drives them: its endpoints through the test's
transport (`call`: REST or RPC), events emitted for it as a domain would emit them (in a
transaction of the suite's database; the suite's server dispatches them within a second), and
polls with a deadline for what the deliveries' workflows do."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from contentplatform.events import service as events
from contentplatform.kit.db import Database
from tests.conftest import Run
from tests.support.orgs import Org

# A bound, not a wait: three attempts take a second or two.
DEADLINE = 30.0


class Hooks(Org):
    """One organization's webhook endpoints and deliveries, as its admin."""

    def create(self, url: str, events: list[str] | None = None, **fields: Any) -> dict[str, Any]:
        data = {"url": url, "events": events or ["draft.created"], **fields}
        return self.ok("webhooks.createEndpoint", data)

    def endpoint(self, endpoint_id: str) -> dict[str, Any]:
        return self.ok("webhooks.getEndpoint", {"id": endpoint_id})

    def deliveries(self, endpoint_id: str, **query: Any) -> list[dict[str, Any]]:
        return self.ok("webhooks.listDeliveries", {"id": endpoint_id, **query})["data"]

    def wait_for_delivery(
        self, endpoint_id: str, done: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any]:
        """The newest of the endpoint's deliveries for which `done` holds, polled with a
        deadline; without `done`, its newest delivery once it is no longer pending."""

        def check() -> dict[str, Any] | None:
            found = self.deliveries(endpoint_id)
            if done is None:
                return found[0] if found and found[0]["status"] != "pending" else None
            return next((delivery for delivery in found if done(delivery)), None)

        return poll("the delivery to settle", check)

    def wait_for_endpoint(
        self, endpoint_id: str, done: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            found = self.endpoint(endpoint_id)
            return found if done(found) else None

        return poll("the endpoint to change", check)


def poll(what: str, check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """Poll `check` until it returns something truthy (bounded)."""
    end = time.monotonic() + deadline
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def emit(
    run: Run,
    tenant_id: uuid.UUID,
    event_type: str,
    payload: dict[str, Any] | None = None,
    resource_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Emit one event for the tenant, committed at once, as a domain's change would: its id."""

    async def scenario(db: Database) -> uuid.UUID:
        async with db.unit_of_work() as session:
            event = events.emit(
                session,
                tenant_id,
                event_type,
                resource_id=resource_id or uuid.uuid4(),
                payload=payload if payload is not None else {"title": "Watering succulents"},
            )
        return event.id

    found: uuid.UUID = run(scenario)
    return found


def message_id(event_id: uuid.UUID) -> str:
    """The `webhook-id` every delivery of the event carries."""
    return f"msg_{event_id.hex}"
