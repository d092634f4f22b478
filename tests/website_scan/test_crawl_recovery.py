"""A crawl survives `kill -9` of the service mid-crawl, on a real `contentplatform serve` process
(tests.support.processes): restarted, it resumes from the frontier it stored, never fetches a
page it had stored again, and ends with one row per page."""

from __future__ import annotations

import uuid
from collections import Counter

from sqlalchemy import select

from contentplatform.website_scan.models import CrawlPage, CrawlSnapshot
from tests.support.processes import ServiceClient, Services, Stack, wait_for
from tests.website_scan.shop import Shop

PRODUCTS = 40


def test_a_crawl_killed_mid_way_resumes_without_fetching_a_stored_page_again(
    services: Services, stack: Stack
) -> None:
    loopback = {"outbound_allow_http": "true", "outbound_allow_loopback": "true"}
    service = services.start(**loopback)
    client = ServiceClient.of_new_org(services, service, "crawler")
    with Shop(pages=PRODUCTS) as shop:
        config = client.request(
            "POST",
            "/v1/website-scan/configs",
            json={
                "name": "Shop",
                "startUrl": shop.url + "/",
                "requestsPerSecond": 10,
                "sitemapMode": "skip",
            },
        )
        run = client.request("POST", "/v1/website-scan/crawls", json={"configId": config["id"]})

        def progress() -> int:
            found = client.request("GET", f"/v1/website-scan/crawls/{run['id']}")
            return int(found["progress"]["pages_crawled"])

        wait_for("a first batch of pages to be stored", lambda: progress() >= 5, service)
        service.kill()
        snapshot_id = stack.one(
            select(CrawlSnapshot.id).where(CrawlSnapshot.crawl_run_id == uuid.UUID(run["id"]))
        )[0]
        stored = {
            url
            for (url,) in stack.rows(
                select(CrawlPage.url).where(CrawlPage.snapshot_id == snapshot_id)
            )
        }
        assert 5 <= len(stored) < PRODUCTS, stored

        service = services.start(**loopback)
        client = ServiceClient(service, client.headers["Authorization"][7:], client.org)
        done = wait_for(
            "the crawl to end",
            lambda: (
                (found := client.request("GET", f"/v1/website-scan/crawls/{run['id']}"))["status"]
                in ("completed", "failed", "cancelled")
                and found
            ),
            service,
        )
        assert done["status"] == "completed", done
        # Home, the products, /p/41 (a 404 linked by the last one) and /gone.
        assert done["progress"]["pages_crawled"] == PRODUCTS + 3
        urls = [
            url
            for (url,) in stack.rows(
                select(CrawlPage.url).where(CrawlPage.snapshot_id == snapshot_id)
            )
        ]
        assert len(urls) == len(set(urls)) == PRODUCTS + 3
        fetched = Counter(shop.paths)
        for url in stored:
            path = url.removeprefix(shop.url)
            assert fetched[path] == 1, (path, fetched[path])
