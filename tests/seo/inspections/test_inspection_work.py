"""The inspections' background work: paced per property, the quota held under racing calls,
and the reconciler (work whose workflow never started is made; work left waiting too long is
given up, visibly)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest

from contentplatform.seo.inspections import durable
from tests.seo.inspections.support import (
    Inspections,
    inspections_sent,
    new_site,
    plant_inspections,
    plant_pending,
    run_of,
    selected_property,
)
from tests.support.google import GoogleStandIn
from tests.support.orgs import org_fixture
from tests.support.servers import AppServer

seo = org_fixture(Inspections)


@pytest.fixture
def site(seo: Inspections, google: GoogleStandIn) -> str:
    host = new_site()
    seo.connect(google, f"sc-domain:{host}")
    return host


def test_inspections_of_a_property_are_paced(seo, google, site, settings, monkeypatch):
    # 600 a minute in production; one a second here. The limiter's sliding window counter
    # weighs the last window's hits, so two may pass across a window's edge, never three:
    # three inspections take a second or more.
    monkeypatch.setattr(durable, "PACE_RULE", "1/second")
    sent = inspections_sent(google)
    started = time.monotonic()
    # A domain property holds its subdomains too.
    urls = [f"https://{site}/1", f"https://blog.{site}/2", f"https://{site}/3"]
    body = seo.inspect(urls).json()
    run = seo.wait_run(run_of(settings, seo.tenant_id, body["data"][0]["id"]))
    assert run["status"] == "succeeded", run
    assert time.monotonic() - started >= 0.9
    assert inspections_sent(google) == sent + 3


def test_two_racing_calls_cannot_both_pass_the_quota(
    seo, google, site, settings, server: AppServer
):
    plant_inspections(settings, seo.tenant_id, selected_property(settings, seo.tenant_id), 1999)
    barrier = threading.Barrier(2)
    headers = {"Authorization": f"Bearer {seo.tokens['editor']}", "x-idp-org-id": seo.org}

    def inspect(n: int) -> int:
        with server.client() as client:
            barrier.wait()
            response: httpx.Response = client.post(
                "/v1/seo/url-inspections",
                json={"urls": [f"https://{site}/race{n}"]},
                headers=headers,
            )
            return response.status_code

    with ThreadPoolExecutor(2) as pool:
        codes = sorted(pool.map(inspect, [1, 2]))
    assert codes == [200, 429]
    made = seo.ok("seo.listUrlInspections", {"search": "/race"})
    assert made["total"] == 1
    seo.wait_run(run_of(settings, seo.tenant_id, made["data"][0]["id"]))


def test_inspections_whose_workflow_never_started_are_made_by_the_reconciler(
    seo, google, site, settings
):
    property_id = selected_property(settings, seo.tenant_id)
    sent = inspections_sent(google)
    run_id = plant_pending(
        settings, seo.tenant_id, property_id, f"https://{site}/lost", timedelta()
    )
    run = seo.wait_run(run_id, timeout=30)
    assert run["status"] == "succeeded", run
    found = seo.ok("seo.listUrlInspections", {"search": "/lost"})["data"]
    assert [row["status"] for row in found] == ["completed"]
    assert inspections_sent(google) == sent + 1


def test_inspections_waiting_too_long_are_given_up_visibly(seo, google, site, settings):
    property_id = selected_property(settings, seo.tenant_id)
    sent = inspections_sent(google)
    age = timedelta(seconds=durable.STALL_SECONDS + 60)
    run_id = plant_pending(settings, seo.tenant_id, property_id, f"https://{site}/stuck", age)
    run = seo.wait_run(run_id, timeout=30)
    assert run["status"] == "failed", run
    found = seo.ok("seo.listUrlInspections", {"search": "/stuck"})["data"][0]
    assert found["status"] == "failed" and found["error"]["code"] == "stalled"
    assert inspections_sent(google) == sent
