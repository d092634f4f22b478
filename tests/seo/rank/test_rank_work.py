"""Rank tracking's work besides a check asked for, over REST and RPC against the DataForSEO
stand-in: the first check queued when keywords are added (and why none, when none is); the
scheduled checks, once per organization and period in its zone, charged as a manual one, and
one its credits cannot pay for kept as a failed run, not retried; seo.getPage and listPages
showing the keywords ranking a page; a check whose workflow was lost mid-way resumed by the
reconciler without asking again what it stored, its credits committed once; and the labelled,
deterministic offline SERP provider."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.core import runtime
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.models import SeoKeywordPosition, SeoSettings
from contentplatform.seo.pages import repository as pages
from contentplatform.seo.rank import durable, offline, provider, reading, schedule, service
from contentplatform.seo.sync_runs import service as sync_runs
from contentplatform.website_scan.crawling.urls import normalize, url_hash
from tests.conftest import Run
from tests.seo.rank.standin import SerpStandIn
from tests.seo.rank.test_rank import Rank
from tests.support.orgs import org_fixture

rank = org_fixture(Rank)


@pytest.fixture(autouse=True)
def _standin(serp: SerpStandIn) -> SerpStandIn:
    return serp


def _clock(run: Run, org: Rank) -> datetime | None:
    async def scenario(db: Database) -> datetime | None:
        async with db.unit_of_work() as session:
            row = await seo_repository.stored_settings(session, org.tenant_id)
            return None if row is None else row.next_rank_check_at

    found: datetime | None = run(scenario)
    return found


def _due(run: Run, org: Rank, at: datetime) -> None:
    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SeoSettings)
                .where(SeoSettings.tenant_id == org.tenant_id)
                .values(next_rank_check_at=at)
            )

    run(scenario)


def _tick(run: Run) -> dict[str, int]:
    async def scenario(db: Database) -> dict[str, int]:
        return await schedule.tick(db, utcnow())

    found: dict[str, int] = run(scenario)
    return found


def _scheduled(org: Rank) -> list[dict[str, Any]]:
    runs = org.ok("seo.listSyncRuns", {"kind": "rank_check"}, role="member")["data"]
    return [found for found in runs if found["trigger"] == "schedule"]


def test_scheduled_checks_run_once_a_period_and_skip_what_credits_cannot_pay(
    rank: Rank, run: Run
) -> None:
    rank.connect()
    words = [f"{rank.org} sched {n}" for n in range(2)]
    added = rank.add(words, devices=["desktop"], checkNow=False)
    assert added["check"] is None and added["check_skipped"] == "not_requested"
    # The default schedule: weekly, Mondays at 05:00 of the organization's zone (UTC here).
    weekly = _clock(run, rank)
    assert weekly is not None and weekly > utcnow() and weekly - utcnow() <= timedelta(days=7)
    assert (weekly.weekday(), weekly.hour, weekly.minute) == (0, 5, 0)
    rank.ok("seo.updateSettings", {"rank": {"frequency": "daily"}}, role="admin")
    daily = _clock(run, rank)
    assert daily is not None and daily.hour == 5 and daily - utcnow() <= timedelta(days=1)

    due = utcnow() - timedelta(minutes=1)
    _due(run, rank, due)
    assert _tick(run)["started"] >= 1
    (first,) = _scheduled(rank)
    done = rank.wait(first["id"])
    assert done["status"] == "succeeded" and done["created_by"] is None
    assert done["credits_reserved"] == done["credits_used"] == 4  # 2 keywords x 2 pages
    moved = _clock(run, rank)
    assert moved is not None and moved > utcnow()
    # Due again within the same day: that day's check exists, none starts.
    _due(run, rank, due)
    _tick(run)
    assert [found["id"] for found in _scheduled(rank)] == [first["id"]]

    # A day the credits cannot pay for: a failed run for the day, and no retry of it.
    available = rank.ok("credits.getBalance", {}, role="admin")["available"]
    rank.ok(
        "credits.reserve",
        {"kind": "generation.blog", "idempotencyKey": "eat-it-all", "amount": available},
        role="admin",
    )
    for _ in range(2):
        _due(run, rank, due - timedelta(days=1))
        _tick(run)
    refused = [found for found in _scheduled(rank) if found["id"] != first["id"]]
    assert [(found["status"], found["error"]["code"]) for found in refused] == [
        ("failed", "insufficient_credits")
    ]
    rank.ok("seo.updateSettings", {"rank": {"frequency": "off"}}, role="admin")
    assert _clock(run, rank) is None


def test_the_first_check_is_queued_on_add_and_pages_show_their_keywords(
    rank: Rank, serp: SerpStandIn, run: Run
) -> None:
    # No SERP provider yet: tracked, not checked.
    first_word = f"{rank.org} first"
    assert rank.add([first_word], devices=["desktop"], checkNow=True)["check_skipped"] == (
        "no_provider"
    )
    rank.connect()
    word = f"{rank.org} page"
    serp.place(word, rank.host, 2)
    url = normalize(f"https://{rank.host}/{word.replace(' ', '-')}")
    assert url is not None

    async def plant_page(db: Database) -> None:
        async with db.unit_of_work() as session:
            await pages.upsert(
                session,
                rank.tenant_id,
                [{"url": url, "url_hash": url_hash(url), "in_snapshot": True}],
            )

    run(plant_page)
    added = rank.add([word], devices=["desktop", "mobile"], checkNow=True)
    check = added["check"]
    assert check is not None and added["check_skipped"] is None
    assert (check["trigger"], check["params"]["tasks"]) == ("manual", 2)  # only those added
    assert rank.wait(check["id"])["status"] == "succeeded"
    # The page shows the keywords ranking it, in the list and in its 360 view.
    (page,) = [
        row for row in rank.ok("seo.listPages", {}, role="member")["data"] if row["url"] == url
    ]
    assert page["tracked_keywords"] == 2
    detail = rank.ok("seo.getPage", {"id": page["id"]}, role="member")
    assert sorted(
        (k["keyword"], k["device"], k["position"]) for k in detail["tracked_keywords"]
    ) == [
        (word, "desktop", 2),
        (word, "mobile", 2),
    ]
    assert detail["tracked_keywords"][0]["market"] == {"location_code": 2840, "language_code": "en"}
    # Nothing new to add: no check.
    assert rank.add([word], devices=["desktop"], checkNow=True)["check_skipped"] == (
        "nothing_added"
    )


def test_a_check_whose_workflow_was_lost_mid_way_resumes_and_commits_once(
    rank: Rank, serp: SerpStandIn, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    rank.connect()
    words = [f"{rank.org} crash {n}" for n in range(6)]
    rank.add(words, devices=["desktop"], checkNow=False)
    # Opened as seo.checkRankings opens it, but its workflow never queued (a kill -9 took it).
    monkeypatch.setattr(durable, "enqueue_after_commit", lambda *args: None)

    async def open_and_read_half(db: Database) -> str:
        async with db.unit_of_work() as session:
            keywords = await service.repository.to_check(session, rank.tenant_id, None)
            opened, started = await service.start_check(
                session,
                runtime.current().settings,
                rank.tenant_id,
                keywords,
                provider="dataforseo",
                keys=service.manual_keys(f"crash-{rank.org}"),
                trigger="manual",
                created_by=None,
            )
            assert started
            run_id = opened.id
        # The workflow's first half: three SERPs read and stored, then the process died.
        async with db.unit_of_work() as session:
            await sync_runs.mark_running(session, rank.tenant_id, run_id)
            context = await durable._context(session, rank.tenant_id, dict(opened.params))
            assert context is not None
            tasks = await durable._tasks(session, rank.tenant_id, run_id, "pending", context)
        for row_id, _, task in tasks[:3]:
            answer = await durable._serp(context, task)
            await durable._store(db, rank.tenant_id, run_id, row_id, answer, context)
        return str(run_id)

    run_id = run(open_and_read_half)
    monkeypatch.undo()
    # The reconciler finds the check with open tasks and no workflow, and restarts it.
    done = rank.wait(run_id)
    assert done["status"] == "succeeded" and done["progress"] == {"done": 6, "total": 6}
    assert done["credits_reserved"] == done["credits_used"] == 12
    # Each SERP read once: the three stored before the crash not again.
    assert sorted(task["keyword"] for task in serp.live if task["keyword"] in words) == words

    # Settling again (a replayed step) charges nothing more.
    async def settle_again(db: Database) -> None:
        async with db.unit_of_work() as session:
            await durable.settle(session, rank.tenant_id, uuid.UUID(run_id))

    balance = rank.ok("credits.getBalance", {}, role="admin")["available"]
    run(settle_again)
    assert rank.ok("credits.getBalance", {}, role="admin")["available"] == balance
    holds = rank.ok("credits.listReservations", {"kind": "seo.checkRankings"}, role="admin")
    assert [(h["amount_held"], h["amount_committed"]) for h in holds["data"]] == [(12, 12)]

    async def statuses(db: Database) -> list[str]:
        async with db.unit_of_work() as session:
            statement = select(SeoKeywordPosition.status).where(
                SeoKeywordPosition.tenant_id == rank.tenant_id,
                SeoKeywordPosition.sync_run_id == uuid.UUID(run_id),
            )
            return list((await session.execute(statement)).scalars())

    assert run(statuses) == ["completed"] * 6


def test_the_offline_serp_provider_is_labelled_and_deterministic() -> None:
    task = provider.Task(
        tag="t",
        keyword="garden soil",
        location_code=2840,
        language_code="en",
        device="mobile",
        depth=30,
    )
    day = date(2026, 12, 1)
    first = offline.serp(task, "shop.example", ["rival.example"], day)
    assert first == offline.serp(task, "shop.example", ["rival.example"], day)
    assert offline.serp(task, "shop.example", ["rival.example"], day + timedelta(days=1)) != first
    organic = [item for item in first.items if item["type"] == "organic"]
    assert [item["rank_group"] for item in organic] == list(range(1, 31))
    assert all(item["title"].startswith(offline.LABEL) for item in first.items)
    assert all(
        item["domain"] in ("shop.example", "rival.example")
        or item["domain"].endswith(offline.OFFLINE_SITE)
        for item in organic
    )
    # Over many keywords, our site ranks for about two in three, within the first 30.
    found = [
        reading.read(
            offline.serp(
                provider.Task(f"{n}", f"kw {n}", 2840, "en", "desktop", 30), "shop.example", [], day
            ),
            reading.Owners("shop.example", {}),
            30,
            False,
        ).position
        for n in range(300)
    ]
    ranking = [position for position in found if position is not None]
    assert 0.55 < len(ranking) / 300 < 0.77 and max(ranking) <= 30
    # Stopping at our domain ends the read at the end of the page we show on.
    deep = next(
        (n, position) for n, position in enumerate(found) if position is not None and position > 10
    )
    stop = provider.Task("s", f"kw {deep[0]}", 2840, "en", "desktop", 100, stop_at="shop.example")
    stopped = offline.serp(stop, "shop.example", [], day)
    assert stopped.pages_count == (deep[1] + 9) // 10 < 10
    assert reading.read(stopped, reading.Owners("shop.example", {}), 100, True).stopped
