"""seo.listSitemaps from a real scan, over REST and RPC: a website scan of a loopback shop keeps
its robots.txt, llms.txt and the sitemaps it read in the snapshot; the sitemaps robots.txt
declares become `robots_txt` rows, each sitemap the scan read is cross-checked against its
pages, a sitemap no longer declared goes, and another organization sees none of it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.website_scan.models import CrawlSnapshot
from tests.conftest import Run
from tests.seo.support import select_property
from tests.support.orgs import Org
from tests.website_scan.shop import Shop
from tests.website_scan.support import Scanner

TERMINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def shop() -> Iterator[Shop]:
    with Shop(pages=4, sitemaps=True) as running:
        yield running


def crawl(scanner: Scanner, config_id: str) -> dict[str, Any]:
    started = scanner.ok("websiteScan.startCrawl", {"configId": config_id})
    deadline = time.monotonic() + 30
    while True:
        run = scanner.ok("websiteScan.getCrawl", {"id": started["id"]}, role="member")
        if run["status"] in TERMINAL:
            assert run["status"] == "completed", run
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.05)


def robots_rows(org: Org, expected: int) -> list[dict[str, Any]]:
    """The robots_txt rows once there are `expected` of them: the scan's event is heard after
    the run ends, by the events' dispatcher."""
    deadline = time.monotonic() + 15
    while True:
        rows: list[dict[str, Any]] = org.ok(
            "seo.listSitemaps", {"source": "robots_txt"}, role="member"
        )["data"]
        if len(rows) == expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_a_scan_declares_robots_sitemaps_and_checks_them_against_its_pages(
    tenant: Org, other_tenant: Org, shop: Shop, settings: Settings, run: Run
) -> None:
    scanner = Scanner.of(tenant)
    select_property(settings, tenant.tenant_id, shop.url + "/")
    config = scanner.config(
        startUrl=shop.url + "/", requestsPerSecond=10, sitemapMode="include", maxDepth=3
    )
    done = crawl(scanner, config["id"])

    async def kept(db: Database) -> CrawlSnapshot | None:
        async with db.unit_of_work() as session:
            return await session.get(CrawlSnapshot, uuid.UUID(done["snapshot_id"]))

    snapshot = run(kept)
    assert snapshot is not None and snapshot.robots_txt is not None
    assert snapshot.robots_txt["status"] == 200
    assert snapshot.robots_txt["declared_sitemaps"] == [shop.url + "/sitemap_index.xml"]
    assert "Sitemap:" in snapshot.robots_txt["body"]
    assert snapshot.llms_txt is not None and snapshot.llms_txt["body"].startswith("# Garden")
    assert snapshot.sitemaps is not None
    assert snapshot.sitemaps["listed"][shop.url + "/p/1"] == [
        shop.url + "/sitemaps/products.xml",
        shop.url + "/sitemap_index.xml",
    ]

    listed = scanner.ok(
        "websiteScan.listPages", {"id": done["snapshot_id"], "search": "/p/1"}, role="member"
    )
    page = scanner.ok("websiteScan.getPage", {"id": listed["data"][0]["id"]}, role="member")
    assert page["sitemaps"] == [
        shop.url + "/sitemaps/products.xml",
        shop.url + "/sitemap_index.xml",
    ]
    assert isinstance(page["ttfb_ms"], int) and page["ttfb_ms"] <= page["load_ms"]
    assert page["audit"]["images"] == [] and page["audit"]["mixed_content"] == []

    [row] = robots_rows(tenant, 1)
    assert (row["url"], row["source"], row["is_index"]) == (
        shop.url + "/sitemap_index.xml",
        "robots_txt",
        True,
    )
    # The index lists (through its child) the four products and /gone, a 404; the home page,
    # indexable, is in no sitemap.
    assert row["snapshot"] == {
        "snapshot_id": done["snapshot_id"],
        "urls": 5,
        "non_200": 1,
        "non_indexable": 0,
        "not_listed_indexable_pages": 1,
    }
    assert other_tenant.ok("seo.listSitemaps", {}, role="member")["total"] == 0

    # robots.txt stops declaring it: the next scan takes the row away.
    shop.sitemaps = False
    crawl(scanner, config["id"])
    assert robots_rows(tenant, 0) == []
