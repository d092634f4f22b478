"""What PageSpeed feeds: the audit's Core Web Vitals checks (lcp_poor, inp_poor, cls_poor) read
each page's newest result, the page inventory shows each measured page's performance score and
LCP category, and seo.getPage its newest result per strategy."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from contentplatform.kit.db import Database
from contentplatform.seo.pages import inventory
from tests.conftest import Run
from tests.seo.audits.support import Auditor
from tests.seo.pagespeed.standin import PageSpeedStandIn
from tests.seo.pagespeed.support import PageSpeed
from tests.support.orgs import org_fixture
from tests.website_scan.seed import crawled

measured = org_fixture(PageSpeed)


@pytest.fixture(autouse=True)
def _standin(pagespeed: PageSpeedStandIn) -> PageSpeedStandIn:
    return pagespeed


def test_pagespeed_feeds_the_vitals_checks_and_the_page_inventory(
    measured: PageSpeed, pagespeed: PageSpeedStandIn, run: Run
) -> None:
    auditor = Auditor.of(measured)
    home, slow, unmeasured = measured.url("/"), measured.url("/slow"), measured.url("/later")
    pages = [
        crawled(home, title="Home", depth=0, links=[(slow, "Slow", True)]),
        crawled(slow, title="Slow", links=[(home, "Home", True)]),
        crawled(unmeasured, title="Later", links=[(home, "Home", True)]),
    ]
    # The scan's configuration starts on loopback (one to a host that does not resolve is
    # refused); its pages are planted at the organization's https host, which PageSpeed takes.
    _, snapshot = auditor.plant(run, pages, config_id=auditor.config())

    async def scan_completed(db: Database) -> None:
        # What the crawl.completed listener does for a crawled scan (a planted one fires none).
        async with db.unit_of_work() as session:
            await inventory.scan_completed(session, measured.tenant_id, uuid.UUID(snapshot))

    run(scan_completed)
    # The fixture's field LCP is 2,764 ms (AVERAGE); twice as slow is past 4 s (poor).
    pagespeed.slow[slow] = 2.0
    ended = measured.measured({"urls": [home, slow], "runs": 1})
    assert ended["status"] == "succeeded", ended

    listed = measured.ok("seo.listPages", {"search": measured.host, "sortBy": "url"})
    rows: dict[str, dict[str, Any]] = {row["url"]: row for row in listed["data"]}
    assert rows[slow]["lcp_category"] == "SLOW" and rows[home]["lcp_category"] == "AVERAGE"
    assert 0 <= rows[slow]["performance_score"] <= 100
    assert (rows[unmeasured]["performance_score"], rows[unmeasured]["lcp_category"]) == (None, None)
    seen = measured.ok("seo.getPage", {"id": rows[slow]["id"]})
    assert seen["pagespeed"]["desktop"] is None
    mobile = seen["pagespeed"]["mobile"]
    assert (mobile["url"], mobile["page_id"]) == (slow, rows[slow]["id"])
    assert mobile["field"]["lcp_ms"] == 2 * 2764
    by_page = measured.results(pageId=rows[slow]["id"])["data"]
    assert [result["url"] for result in by_page] == [slow]

    audit = auditor.audit(snapshot)
    found = auditor.found(audit["id"])
    assert found.get("lcp_poor") == {slow}
    assert "inp_poor" not in found and "cls_poor" not in found
    evidence = auditor.urls(audit["id"], "lcp_poor")["data"][0]["evidence"]
    assert evidence == {"lcp_ms": 2 * 2764, "source": "field"}
    # Only the page never measured is left not evaluated (INP: also not by the lab).
    assert audit["not_evaluated"]["lcp_poor"] == 1
    assert audit["not_evaluated"]["inp_poor"] == 1
