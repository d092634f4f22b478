"""The outbox below the API: an event exists only if its change committed, and every listener
takes each event exactly once, however many dispatchers race (the suite's own server runs one
beside these tests the whole time)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core import actors
from contentplatform.events import catalog
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import Database, after_commit
from tests.support.orgs import new_tenant


class Recorder:
    """A listener of the test's own tenant, registered beside the real ones."""

    def __init__(self, tenant_id: uuid.UUID, fail_on: set[str] | None = None) -> None:
        self.tenant_id = tenant_id
        self.fail_on = fail_on or set()
        self.seen: Counter[uuid.UUID] = Counter()
        self.lock = threading.Lock()

    async def __call__(self, session: AsyncSession, taken: Sequence[Event]) -> None:
        mine = [event for event in taken if event.tenant_id == self.tenant_id]
        if any(event.payload.get("name") in self.fail_on for event in mine):
            raise RuntimeError("this listener cannot take that event yet")
        # Counted only once the dispatcher's transaction commits.
        ids = [event.id for event in mine]

        async def count() -> None:
            with self.lock:
                self.seen.update(ids)

        after_commit(session, count)


@pytest.fixture
def recorder(request: pytest.FixtureRequest, run) -> Recorder:
    tenant_id = run(new_tenant)
    listening = Recorder(tenant_id)
    name = f"test-{uuid.uuid4().hex}"
    events.listener(name)(listening)
    request.addfinalizer(lambda: events._listeners.pop(name, None))
    return listening


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def emit_many(db: Database, tenant_id: uuid.UUID, names: list[str]):
    async def scenario() -> list[uuid.UUID]:
        async with db.unit_of_work() as session:
            return [
                events.emit(
                    session, tenant_id, "webhook.test", resource_id=None, payload={"name": name}
                ).id
                for name in names
            ]

    return scenario()


def test_an_event_of_a_rolled_back_change_never_exists(run, recorder: Recorder) -> None:
    async def scenario(db: Database) -> list[Event]:
        with pytest.raises(RuntimeError):
            async with db.unit_of_work() as session:
                events.emit(session, recorder.tenant_id, "webhook.test", resource_id=None)
                raise RuntimeError("the change failed")
        async with db.unit_of_work() as session:
            rows = await session.execute(select(Event).where(Event.tenant_id == recorder.tenant_id))
            return list(rows.scalars())

    assert run(scenario) == []


def test_racing_dispatchers_hand_each_event_to_a_listener_once(run, recorder: Recorder) -> None:
    names = [f"e{i}" for i in range(60)]

    async def scenario(db: Database) -> list[uuid.UUID]:
        emitted = await emit_many(db, recorder.tenant_id, names)
        # Three more dispatchers beside the server's own.
        await asyncio.gather(*(events.dispatch_once(db, batch=7) for _ in range(3)))
        return emitted

    emitted = run(scenario)
    wait_for(lambda: len(recorder.seen) == len(emitted))
    time.sleep(0.2)
    assert set(recorder.seen) == set(emitted)
    assert set(recorder.seen.values()) == {1}


def test_an_event_a_listener_refuses_holds_back_only_itself(run, recorder: Recorder) -> None:
    recorder.fail_on = {"bad"}
    emitted = run(lambda db: emit_many(db, recorder.tenant_id, ["good1", "bad", "good2"]))
    good = {emitted[0], emitted[2]}
    wait_for(lambda: set(recorder.seen) == good)

    async def pending(db: Database) -> Event | None:
        async with db.unit_of_work() as session:
            return await session.get(Event, emitted[1])

    assert run(pending).dispatched_at is None  # type: ignore[union-attr]
    recorder.fail_on = set()  # the listener is fixed: the event is taken on a later pass
    wait_for(lambda: set(recorder.seen) == set(emitted))
    assert set(recorder.seen.values()) == {1}


def test_an_event_names_who_acted_and_the_type_decides_its_scope(run) -> None:
    actor = actors.Actor(
        type="user",
        id="user_1",
        display_name="Ada",
        impersonated_by="admin_9",
        ip="10.0.0.1",
        user_agent="tests",
        request_id="req_1",
    )

    async def scenario(db: Database) -> tuple[Event, Event]:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            with actors.acting(actor):
                by_user = events.emit(
                    session,
                    tenant_id,
                    "settings.updated",
                    resource_id=None,
                    changes=events.changes_between({"a": 1, "b": 2}, {"a": 1, "b": 3}),
                )
            by_system = events.emit(session, tenant_id, "document.ready", resource_id=uuid.uuid4())
        return by_user, by_system

    by_user, by_system = run(scenario)
    assert (by_user.actor_type, by_user.actor_id, by_user.actor_name) == ("user", "user_1", "Ada")
    assert (by_user.impersonated_by, by_user.ip, by_user.request_id) == (
        "admin_9",
        "10.0.0.1",
        "req_1",
    )
    assert (by_user.scope, by_user.resource_type) == ("audit", "settings")
    assert by_user.changes == {"b": {"from": 2, "to": 3}}
    assert (by_system.actor_type, by_system.actor_id, by_system.scope) == (
        "system",
        None,
        "activity",
    )


def test_an_undeclared_type_is_refused_before_it_is_written() -> None:
    with pytest.raises(KeyError):
        catalog.get("draft.exploded")
