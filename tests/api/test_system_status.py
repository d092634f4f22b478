"""system.status: public (no token), over REST and RPC; every component with a state and when
its signal was seen; a recorded failure of a provider degrades it (and the whole), a long
failure is an outage; the answer is cached 15 s; mail with nowhere to go is an outage; nothing
in it names a host, a version, a secret or an error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from contentplatform import __version__
from contentplatform.config import Environment
from contentplatform.core import runtime
from contentplatform.kit import health
from contentplatform.system import service
from contentplatform.system.schemas import ComponentStatus
from tests.support.servers import AppServer

NAMES = [
    "api",
    "database",
    "workers",
    "search",
    "storage",
    "llm",
    "identity_provider",
    "payments",
    "mail",
]


def fresh(server: AppServer) -> None:
    """Forget the cached answer, so the next call computes it."""
    assert server.loop is not None
    asyncio.run_coroutine_threadsafe(
        runtime.current().cache.invalidate(service.CACHE_SCOPE), server.loop
    ).result(10)


def status_of(call, server: AppServer, *, cached: bool = False) -> dict:
    if not cached:
        fresh(server)
    response = call("system.status")
    assert response.status_code == 200, response.text
    return response.json()


def by_name(body: dict) -> dict[str, dict]:
    return {component["name"]: component for component in body["components"]}


@pytest.fixture
def payments_restored() -> Iterator[None]:
    yield
    health.record("payments", True)  # later tests see payments working again


def test_the_status_needs_no_token_and_lists_every_component(call, server):
    body = status_of(call, server)
    assert set(body) == {"status", "components", "updated_at"}
    assert [component["name"] for component in body["components"]] == NAMES
    for component in body["components"]:
        assert set(component) == {"name", "status", "checked_at"}
        assert component["status"] in ("operational", "degraded", "outage")
    components = by_name(body)
    # Checked for this answer: the API answers, the database read, the queues' lag.
    for name in ("api", "database", "workers"):
        assert components[name]["status"] == "operational"
        assert components[name]["checked_at"] is not None
    assert datetime.fromisoformat(body["updated_at"]) <= datetime.now(UTC)


def test_a_recorded_failure_degrades_the_component_and_the_whole(call, server, payments_restored):
    health.record("payments", True)
    assert by_name(status_of(call, server))["payments"]["status"] == "operational"
    health.record("payments", False)
    body = status_of(call, server)
    assert by_name(body)["payments"]["status"] == "degraded"
    assert body["status"] == "degraded"
    health.record("payments", True)  # a success after it: working again
    assert by_name(status_of(call, server))["payments"]["status"] == "operational"


def test_the_answer_is_cached(call, server, payments_restored):
    health.record("payments", True)
    first = status_of(call, server)
    health.record("payments", False)
    again = status_of(call, server, cached=True)
    assert again == first  # the same answer within the 15 s
    assert by_name(status_of(call, server))["payments"]["status"] == "degraded"


def test_mail_with_nowhere_to_go_is_an_outage_of_mail_only(call, server, monkeypatch):
    current = runtime.current()
    unconfigured = current.settings.model_copy(
        update={"smtp_host": None, "env": Environment.production}
    )
    monkeypatch.setattr(current, "settings", unconfigured)
    body = status_of(call, server)
    assert by_name(body)["mail"]["status"] == "outage"
    assert body["status"] == "degraded"  # the service answers; mail waits
    monkeypatch.undo()
    fresh(server)


def test_nothing_secret_in_the_answer(call, server, settings, mailbox, payments_restored):
    health.record("payments", False)
    text = status_of(call, server)
    raw = call("system.status").text
    assert by_name(text)["payments"]["status"] == "degraded"
    for secret in (
        "127.0.0.1",
        "localhost",
        str(mailbox.port),
        __version__,
        settings.database_url or "sqlite",
        settings.redis_url or "redis://",
        settings.mail_from,
        "error",
        "Error",
    ):
        assert secret not in raw


def at(minutes: float) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)


def test_how_outcomes_are_judged():
    now = at(60)
    judged = service._judged
    assert judged("llm", health.Outcomes(), now) == ComponentStatus(
        name="llm", status="operational", checked_at=None
    )
    assert judged("llm", health.Outcomes(last_ok=at(59)), now).status == "operational"
    failing = health.Outcomes(last_ok=at(50), last_failure=at(59), failing_since=at(58))
    assert judged("llm", failing, now).status == "degraded"
    assert judged("llm", failing, now).checked_at == at(59)
    long_failing = health.Outcomes(last_ok=at(40), last_failure=at(59), failing_since=at(41))
    assert judged("llm", long_failing, now).status == "outage"
    recovered = health.Outcomes(last_ok=at(59.5), last_failure=at(59), failing_since=None)
    assert judged("llm", recovered, now).status == "operational"


def test_the_queues_lag_is_how_long_the_longest_waiting_due_workflow_has_waited():
    now = at(60)

    def ms(when: datetime) -> int:
        return int(when.timestamp() * 1000)

    level = service.lag_level
    assert level(now, []) == "operational"
    assert level(now, [(ms(at(59.1)), None), (ms(at(59.9)), None)]) == "operational"
    # The oldest decides: a minute waiting is degraded, fifteen an outage.
    assert level(now, [(ms(at(59.9)), None), (ms(at(59)), None)]) == "degraded"
    assert level(now, [(ms(at(45.5)), None)]) == "degraded"
    assert level(now, [(ms(at(45)), None)]) == "outage"
    # A retry delayed until later is not late, however long ago it was enqueued; once due, it is.
    assert level(now, [(ms(at(10)), ms(at(61)))]) == "operational"
    assert level(now, [(ms(at(10)), ms(at(58)))]) == "degraded"


def test_the_whole_is_as_bad_as_its_worst_part_but_a_providers_outage_only_degrades_it():
    def whole(**levels: str) -> str:
        return service._overall(
            [ComponentStatus(name=n, status=s, checked_at=None) for n, s in levels.items()]
        )

    assert whole(api="operational", llm="operational") == "operational"
    assert whole(api="operational", llm="outage") == "degraded"
    assert whole(database="outage", llm="operational") == "outage"
    assert whole(workers="degraded", mail="operational") == "degraded"


def test_outcomes_merge_across_processes():
    ok_here = health.Outcomes(last_ok=at(10))
    failing_there = health.Outcomes(last_ok=at(5), last_failure=at(12), failing_since=at(6))
    merged = health._merged(ok_here, failing_there)
    assert merged.last_ok == at(10) and merged.last_failure == at(12)
    assert merged.failing_since == at(12)  # the failures before the success here do not count
    assert health._merged(health.Outcomes(last_ok=at(13)), failing_there).failing_since is None
