"""websiteScan.startCrawl, listCrawls, getCrawl and cancelCrawl over REST and RPC, crawling a
shop on loopback through the service's durable workflow: the snapshot a run leaves (pages,
broken links, totals), one active run per config (409) and two per organization (429), the
idempotency key, cancel (queued and running: a partial snapshot), deleting a config mid-crawl,
the schedule's tick, the roles, and a second organization that sees none of it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from dbos import DBOS
from pydantic import SecretStr
from sqlalchemy import select, update

from contentplatform.billing import service as billing
from contentplatform.config import Settings
from contentplatform.events.models import Event
from contentplatform.kit import durable
from contentplatform.kit.db import Database, utcnow
from contentplatform.website_scan.crawls import durable as workflows
from contentplatform.website_scan.crawls import service as crawls
from contentplatform.website_scan.models import CrawlPage, CrawlSchedule, CrawlSnapshot
from tests.conftest import Run
from tests.documents.support import Docs
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.shop import Shop
from tests.website_scan.support import Scanner

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

TERMINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def shop() -> Iterator[Shop]:
    with Shop(pages=4) as running:
        yield running


def shop_config(scanner: Scanner, shop: Shop, path: str = "/", **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "startUrl": shop.url + path,
        "requestsPerSecond": 10,
        "sitemapMode": "skip",
        "maxDepth": 3,
    }
    values.update(fields)
    return scanner.config(**values)


def start(scanner: Scanner, config_id: str, role: str = "editor", **fields: Any):
    return scanner.request("websiteScan.startCrawl", {"configId": config_id, **fields}, role=role)


def wait_for(scanner: Scanner, run_id: str, statuses: set[str], seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        run = scanner.ok("websiteScan.getCrawl", {"id": run_id}, role="member")
        if run["status"] in statuses:
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.05)


def crawled(scanner: Scanner, shop: Shop, **fields: Any) -> dict[str, Any]:
    config = shop_config(scanner, shop, **fields)
    response = start(scanner, config["id"])
    assert response.status_code == 200, response.text
    return wait_for(scanner, response.json()["id"], TERMINAL)


def test_a_crawl_runs_to_a_snapshot_with_its_pages_and_broken_links(
    scanner: Scanner, shop: Shop, run: Run
) -> None:
    config = shop_config(scanner, shop)
    response = start(scanner, config["id"])
    assert response.status_code == 200, response.text
    queued = response.json()
    assert queued["status"] in ("queued", "running")
    assert (queued["trigger"], queued["snapshot_id"]) == ("manual", None)
    assert queued["settings"]["start_url"] == shop.url + "/"
    assert queued["settings"]["user_agent"].startswith("contentplatform-crawler/")
    assert queued["created_by"] == scanner.users["editor"]

    done = wait_for(scanner, queued["id"], TERMINAL)
    assert done["status"] == "completed", done
    assert done["snapshot_id"] and done["finished_at"] and done["error"] is None
    progress = done["progress"]
    # Home, four products, /p/5 (linked by the last one, a 404) and /gone (404).
    assert progress["pages_crawled"] == 7, progress
    assert progress["pages_failed"] == 2
    assert (progress["percent"], progress["queue_size"]) == (100.0, 0)
    assert done["truncated"] is False

    async def stored(db: Database) -> tuple[CrawlSnapshot | None, dict[str, int | None]]:
        async with db.unit_of_work() as session:
            snapshot = await session.get(CrawlSnapshot, uuid.UUID(done["snapshot_id"]))
            pages = await session.execute(
                select(CrawlPage.url, CrawlPage.status_code).where(
                    CrawlPage.snapshot_id == uuid.UUID(done["snapshot_id"])
                )
            )
            return snapshot, {url: status for url, status in pages.all()}

    snapshot, pages = run(stored)
    assert snapshot is not None and snapshot.partial is False
    assert pages[shop.url + "/p/1"] == 200 and pages[shop.url + "/gone"] == 404
    assert snapshot.page_count == 7
    assert snapshot.status_counts == {"2xx": 5, "3xx": 0, "4xx": 2, "5xx": 0, "error": 0}
    # /gone (linked from four pages) and /p/5 (from /p/4).
    assert snapshot.broken_link_count == 2
    # The config shows its last run.
    last = scanner.get(config["id"])["last_run"]
    assert (last["id"], last["status"], last["snapshot_id"]) == (
        done["id"],
        "completed",
        done["snapshot_id"],
    )


def told(run: Run, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The events about a crawl run, oldest first."""

    async def scenario(db: Database) -> list[tuple[str, dict[str, Any]]]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(Event.type, Event.payload)
                .where(Event.resource_id == uuid.UUID(run_id))
                .order_by(Event.created_at)
            )
            return [(kind, payload) for kind, payload in rows.all()]

    return run(scenario)


def test_the_crawl_is_told_as_events(scanner: Scanner, shop: Shop, run: Run) -> None:
    done = crawled(scanner, shop)
    events = told(run, done["id"])
    assert [kind for kind, _ in events] == ["crawl.started", "crawl.completed"]
    assert events[1][1]["snapshot_id"] == done["snapshot_id"]
    assert events[1][1]["pages_crawled"] == 7


@pytest.mark.own_org
def test_one_active_crawl_per_config_and_two_per_organization(scanner: Scanner, shop: Shop) -> None:
    shop.hold()
    first = shop_config(scanner, shop, "/")
    second = shop_config(scanner, shop, "/p/1")
    third = shop_config(scanner, shop, "/p/2")
    running = start(scanner, first["id"]).json()
    again = start(scanner, first["id"])
    assert problem(again, 409, "CONFLICT")
    assert again.json()["runId"] == running["id"]
    assert start(scanner, second["id"]).status_code == 200
    crowded = start(scanner, third["id"])
    assert problem(crowded, 429, "TOO_MANY_REQUESTS")
    assert crowded.headers["retry-after"] == "60"
    for run in scanner.ok("websiteScan.listCrawls", {"status": "running"})["data"]:
        scanner.ok("websiteScan.cancelCrawl", {"id": run["id"]})
    for run in scanner.ok("websiteScan.listCrawls", {})["data"]:
        if run["status"] not in TERMINAL:
            scanner.ok("websiteScan.cancelCrawl", {"id": run["id"]})
    shop.release()
    for run in scanner.ok("websiteScan.listCrawls", {})["data"]:
        wait_for(scanner, run["id"], TERMINAL)
    # Once they ended, the third may start.
    assert start(scanner, third["id"]).status_code == 200


@pytest.mark.own_org
def test_the_same_idempotency_key_returns_the_same_run(scanner: Scanner, shop: Shop) -> None:
    config = shop_config(scanner, shop)
    first = start(scanner, config["id"], idempotencyKey="nightly-2026-11-28").json()
    second = start(scanner, config["id"], idempotencyKey="nightly-2026-11-28")
    assert second.status_code == 200, second.text
    assert second.json()["id"] == first["id"]
    wait_for(scanner, first["id"], TERMINAL)
    assert len(scanner.ok("websiteScan.listCrawls", {"configId": config["id"]})["data"]) == 1
    short = start(scanner, config["id"], idempotencyKey="short")
    assert problem(short, 400, "BAD_REQUEST")


def test_cancelling_a_running_crawl_keeps_what_it_stored_as_a_partial_snapshot(
    scanner: Scanner, run: Run
) -> None:
    # Thirty products at ten requests a second: the crawl is still going when the cancel is
    # read (within a second).
    with Shop(pages=30) as shop:
        cancel_mid_crawl(scanner, shop, run)


def cancel_mid_crawl(scanner: Scanner, shop: Shop, run: Run) -> None:
    config = shop_config(scanner, shop)
    shop.hold()
    started = start(scanner, config["id"]).json()
    assert shop.waiting.acquire(timeout=10), "the crawl reached a product page"
    cancelling = scanner.ok("websiteScan.cancelCrawl", {"id": started["id"]})
    assert cancelling["status"] == "cancelling"
    shop.release()
    done = wait_for(scanner, started["id"], TERMINAL)
    assert done["status"] == "cancelled"
    assert done["progress"]["pages_crawled"] < 30

    async def snapshot(db: Database) -> CrawlSnapshot | None:
        async with db.unit_of_work() as session:
            return await session.get(CrawlSnapshot, uuid.UUID(done["snapshot_id"]))

    partial = run(snapshot)
    assert partial is not None and partial.partial is True
    events = told(run, started["id"])
    assert [kind for kind, _ in events] == ["crawl.started", "crawl.cancelled"]
    assert events[1][1]["status"] == "cancelled"
    assert partial.page_count == done["progress"]["pages_crawled"] >= 1
    ended = scanner.request("websiteScan.cancelCrawl", {"id": started["id"]})
    assert problem(ended, 409, "CONFLICT")


def test_deleting_a_config_stops_its_crawl(scanner: Scanner, shop: Shop) -> None:
    config = shop_config(scanner, shop)
    shop.hold()
    started = start(scanner, config["id"]).json()
    assert shop.waiting.acquire(timeout=10)
    scanner.ok("websiteScan.deleteConfig", {"id": config["id"]}, role="admin")
    shop.release()
    done = wait_for(scanner, started["id"], TERMINAL)
    assert done["status"] == "cancelled"
    # The run stays listed (its snapshot is kept).
    assert scanner.ok("websiteScan.getCrawl", {"id": started["id"]})["id"] == started["id"]


def test_overrides_apply_to_the_run_only(scanner: Scanner, shop: Shop) -> None:
    config = shop_config(scanner, shop)
    response = start(scanner, config["id"], overrides={"maxPages": 2})
    done = wait_for(scanner, response.json()["id"], TERMINAL)
    assert done["settings"]["max_pages"] == 2
    assert done["progress"]["pages_crawled"] == 2 and done["truncated"] is True
    assert scanner.get(config["id"])["max_pages"] == 200
    refused = start(scanner, config["id"], overrides={"respectRobotsTxt": False})
    assert problem(refused, 403, "FORBIDDEN")
    bad = start(scanner, config["id"], overrides={"maxPages": 5001})
    assert problem(bad, 400, "BAD_REQUEST")


@pytest.mark.own_org
def test_runs_are_listed_newest_first_and_filtered(scanner: Scanner, shop: Shop) -> None:
    first = crawled(scanner, shop)
    second = crawled(scanner, shop, maxDepth=0, name="Product 1 only", startUrl=shop.url + "/p/1")
    listed = scanner.ok("websiteScan.listCrawls", {}, role="member")
    assert [run["id"] for run in listed["data"]] == [second["id"], first["id"]]
    assert (listed["total"], listed["page"], listed["limit"]) == (2, 1, 20)
    only = scanner.ok("websiteScan.listCrawls", {"configId": first["config_id"]})
    assert [run["id"] for run in only["data"]] == [first["id"]]
    assert scanner.ok("websiteScan.listCrawls", {"status": "failed"})["data"] == []
    assert second["progress"]["pages_crawled"] == 1


def test_members_read_crawls_and_editors_start_and_cancel_them(
    scanner: Scanner, shop: Shop
) -> None:
    config = shop_config(scanner, shop)
    assert problem(start(scanner, config["id"], role="member"), 403, "FORBIDDEN")
    started = start(scanner, config["id"]).json()
    cancel = scanner.request("websiteScan.cancelCrawl", {"id": started["id"]}, role="member")
    assert problem(cancel, 403, "FORBIDDEN")
    assert scanner.ok("websiteScan.getCrawl", {"id": started["id"]}, role="member")
    wait_for(scanner, started["id"], TERMINAL)


def test_another_organization_sees_none_of_it(scanner: Scanner, other: Scanner, shop: Shop) -> None:
    done = crawled(scanner, shop)
    assert problem(other.request("websiteScan.getCrawl", {"id": done["id"]}), 404, "NOT_FOUND")
    cancel = other.request("websiteScan.cancelCrawl", {"id": done["id"]})
    assert problem(cancel, 404, "NOT_FOUND")
    assert problem(start(other, done["config_id"]), 404, "NOT_FOUND")
    assert other.ok("websiteScan.listCrawls", {})["data"] == []
    absent = scanner.request("websiteScan.getCrawl", {"id": str(uuid.uuid4())})
    assert problem(absent, 404, "NOT_FOUND")


def make_due(config_id: str) -> Callable[[Database], Awaitable[None]]:
    """A scenario making the config's schedule due a minute ago."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(CrawlSchedule)
                .where(CrawlSchedule.config_id == uuid.UUID(config_id))
                .values(next_run_at=utcnow() - timedelta(minutes=1))
            )

    return scenario


async def tick(db: Database) -> dict[str, int]:
    """One scheduler tick of crawls, now."""
    return await crawls.tick(db, utcnow())


def test_a_due_schedule_starts_a_crawl_and_a_busy_config_skips_its_turn(
    scanner: Scanner, shop: Shop, run: Run
) -> None:
    config = shop_config(scanner, shop)
    scanner.schedule(config["id"])

    run(make_due(config["id"]))
    shop.hold()
    report = run(tick)
    assert report["started"] >= 1
    runs = scanner.ok("websiteScan.listCrawls", {"configId": config["id"]})["data"]
    assert [(one["trigger"], one["created_by"]) for one in runs] == [("schedule", None)]
    schedule = scanner.get(config["id"])["schedule"]
    assert schedule["last_run_id"] == runs[0]["id"]
    assert schedule["next_run_at"] > schedule["last_run_at"]

    # Due again while it still runs: skipped, not queued, and moved to its next turn.
    run(make_due(config["id"]))
    run(tick)
    assert len(scanner.ok("websiteScan.listCrawls", {"configId": config["id"]})["data"]) == 1
    assert scanner.get(config["id"])["schedule"]["next_run_at"] > utcnow().isoformat()
    shop.release()
    wait_for(scanner, runs[0]["id"], TERMINAL)


@pytest.mark.own_org
def test_two_organizations_crawling_one_site_see_only_their_own_runs(
    scanner: Scanner, other: Scanner, shop: Shop
) -> None:
    mine = crawled(scanner, shop)
    theirs = crawled(other, shop)
    assert mine["snapshot_id"] != theirs["snapshot_id"]
    assert [run["id"] for run in scanner.ok("websiteScan.listCrawls", {})["data"]] == [mine["id"]]
    assert [run["id"] for run in other.ok("websiteScan.listCrawls", {})["data"]] == [theirs["id"]]
    assert theirs["progress"]["pages_crawled"] == mine["progress"]["pages_crawled"] == 7


def test_a_site_whose_robots_txt_fails_is_not_crawled_and_is_told(
    scanner: Scanner, run: Run
) -> None:
    # robots.txt answering 5xx means "crawl nothing" (RFC 9309): the run fails, saying why.
    with Shop(pages=2, robots_status=503) as shop:
        done = crawled(scanner, shop)
        assert [path for path in shop.paths if path != "/robots.txt"] == []
    assert done["status"] == "failed"
    assert done["error"]["code"] == "robots_unavailable"
    assert done["progress"]["pages_crawled"] == 0
    events = told(run, done["id"])
    assert [kind for kind, _ in events] == ["crawl.started", "crawl.failed"]
    assert events[1][1]["error"]["code"] == "robots_unavailable"


@pytest.mark.own_org
def test_the_plan_caps_the_pages_of_a_crawl(
    scanner: Scanner, shop: Shop, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = shop_config(scanner, shop, maxPages=200)
    limited = settings.model_copy(
        update={"stripe_secret_key": SecretStr("sk_test_x"), "free_plan_limits": {"crawl_pages": 3}}
    )
    monkeypatch.setattr(billing, "_settings", lambda: limited)
    refused = scanner.request(
        "websiteScan.createConfig", {"name": "Big", "startUrl": shop.url + "/p/1", "maxPages": 4}
    )
    body = problem(refused, 403, "FORBIDDEN")
    assert (body["limit_key"], body["limit"]) == ("crawl_pages", 3)
    update = scanner.request("websiteScan.updateConfig", {"id": saved["id"], "maxPages": 300})
    assert problem(update, 403, "FORBIDDEN")
    override = start(scanner, saved["id"], overrides={"maxPages": 10})
    assert problem(override, 403, "FORBIDDEN")
    # Saved under a larger plan: the run crawls as many pages as the plan allows now.
    done = wait_for(scanner, start(scanner, saved["id"]).json()["id"], TERMINAL)
    assert done["settings"]["max_pages"] == 3
    assert done["progress"]["pages_crawled"] == 3 and done["truncated"] is True


def imported_product(scanner: Scanner, shop: Shop) -> tuple[dict[str, Any], dict[str, Any]]:
    """A crawl of the shop and its page /p/1 imported (ready at version 1), then that page's
    text changed on the site: the crawl and the import."""
    first = crawled(scanner, shop)
    pages = scanner.ok(
        "websiteScan.listPages", {"id": first["snapshot_id"], "search": "/p/1", "limit": 100}
    )["data"]
    product = next(page for page in pages if page["url"] == shop.url + "/p/1")
    made = scanner.ok(
        "websiteScan.importPages", {"id": first["snapshot_id"], "pageIds": [product["id"]]}
    )["imported"][0]
    assert Docs.of(scanner).wait(made["document_id"])["document_version"] == 1
    shop.texts[1] = "Product 1 is now a lighter trowel with a beech handle and a steel blade."
    return first, made


def scheduled_crawl(scanner: Scanner, run: Run, config_id: str, *, auto_import: bool) -> dict:
    """The config's schedule (re-importing changed pages or not) made due and ticked: its
    run, completed."""
    scanner.schedule(config_id, autoImportChanged=auto_import)
    run(make_due(config_id))
    run(tick)
    scheduled: dict = scanner.ok("websiteScan.listCrawls", {"configId": config_id})["data"][0]
    assert wait_for(scanner, scheduled["id"], TERMINAL)["status"] == "completed"
    return scheduled


def test_a_scheduled_crawl_reimports_the_imported_pages_that_changed(
    scanner: Scanner, shop: Shop, run: Run
) -> None:
    first, made = imported_product(scanner, shop)
    docs = Docs.of(scanner)
    scheduled = scheduled_crawl(scanner, run, first["config_id"], auto_import=True)
    assert scheduled["trigger"] == "schedule"
    deadline = time.monotonic() + 20
    while (document := docs.wait(made["document_id"]))["document_version"] != 2:
        assert time.monotonic() < deadline, document
        time.sleep(0.05)
    assert document["status"] == "ready"
    content = docs.ok("documents.getContent", {"id": made["document_id"]}, role="member")
    assert "beech handle" in content["content"]


def test_a_crawl_recovered_after_it_completed_still_reimports_the_changed_pages(
    scanner: Scanner, shop: Shop, run: Run
) -> None:
    """A crash after the run's end committed and before its re-import: DBOS runs the workflow
    again, which finds the run ended. Made deterministic by running the workflow again for a
    completed run whose re-import did not happen (the schedule asked for it only afterwards).

    Was: the recovered workflow settled at once and the changed pages stayed out of date."""
    first, made = imported_product(scanner, shop)
    docs = Docs.of(scanner)
    scheduled = scheduled_crawl(scanner, run, first["config_id"], auto_import=False)
    assert docs.wait(made["document_id"])["document_version"] == 1

    scanner.schedule(first["config_id"], autoImportChanged=True)

    def run_again() -> str:
        async def again(db: Database) -> str:
            again_id = f"crawl-again:{uuid.uuid4()}"
            tenant_id = str(scanner.tenant_id)
            await durable.start(
                workflows.crawl, again_id, tenant_id, scheduled["id"], queue=workflows.QUEUE
            )
            return str(await (await DBOS.retrieve_workflow_async(again_id)).get_result())

        return str(run(again))

    assert run_again() == "settled"
    document = docs.wait(made["document_id"])
    assert (document["document_version"], document["status"]) == (2, "ready")
    assert run_again() == "settled"  # once more: nothing is out of date, nothing imported
    assert docs.wait(made["document_id"])["document_version"] == 2


def test_external_links_are_checked_when_asked_and_only_the_broken_are_reported(
    scanner: Scanner,
) -> None:
    with Shop(pages=1) as partner, Shop(pages=1, external=partner.url) as shop:
        done = crawled(scanner, shop, checkExternalLinks=True)
        # Checked once each, with HEAD.
        assert sorted(partner.paths) == ["/p/1", "/p/999"]
    report = scanner.ok(
        "websiteScan.getBrokenLinks", {"id": done["snapshot_id"], "scope": "external"}
    )
    assert [(link["target_url"], link["status_code"]) for link in report["data"]] == [
        (partner.url + "/p/999", 404)
    ]
    assert report["data"][0]["occurrences"][0]["source_url"] == shop.url + "/"
    assert report["summary"]["external"] == 1
