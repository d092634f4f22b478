"""PageSpeed's background work and what the audit reads: a run whose workflow was lost (a crash
after some runs were stored) is resumed by the reconciler without measuring again what is
stored; a run that stopped moving is given up visibly; field data falls back from the URL to
its origin; latest_vitals answers the newest completed result of each URL, mobile first."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.models import SeoPageSpeedResult
from contentplatform.seo.pagespeed import durable, provider, repository
from contentplatform.seo.pagespeed import service as pagespeed_service
from contentplatform.seo.sync_runs import service as sync_runs
from tests.seo.pagespeed.standin import FIXTURES, PageSpeedStandIn
from tests.seo.pagespeed.support import PageSpeed, expected_runs
from tests.support.database import run_on
from tests.support.orgs import org_fixture

speed = org_fixture(PageSpeed)

STORED_RUN = {
    "scores": {"performance": 10, "seo": 91, "accessibility": 77, "best_practices": 96},
    "lab": {"lcp_ms": 9000, "cls": 0.5, "tbt_ms": 900, "fcp_ms": 5000, "speed_index_ms": 9000},
    "field": provider.none_field(),
    "failed_audits": [],
    "lighthouse_version": "12.8.2",
    "fetched_at": "2026-12-07T10:00:00.000Z",
}


def plant_pending(
    settings: Settings, tenant_id: uuid.UUID, url: str, age: timedelta, stored: list[Any]
) -> str:
    """A run and its pending result with `stored` runs already measured, as runPageSpeed and
    its workflow leave them, with no workflow running (a kill -9): the run's id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            run, _ = await sync_runs.open_run(
                session,
                tenant_id,
                kind="pagespeed",
                provider="pagespeed_insights",
                run_key=f"pagespeed:{uuid.uuid4()}",
                trigger="manual",
                params={},
            )
            at = utcnow() - age
            session.add(
                SeoPageSpeedResult(
                    tenant_id=tenant_id,
                    sync_run_id=run.id,
                    url=url,
                    url_hash=repository.url_hash(url),
                    strategy="mobile",
                    status="pending",
                    categories=["performance", "seo", "accessibility", "best-practices"],
                    runs_wanted=3,
                    runs=stored,
                    failed_audits=[],
                    created_at=at,
                    updated_at=at,
                )
            )
            return str(run.id)

    return str(run_on(settings, scenario))


def test_a_lost_run_is_resumed_without_measuring_again_what_is_stored(
    speed: PageSpeed, settings: Settings, pagespeed: PageSpeedStandIn
) -> None:
    url = speed.url("/resumed")
    run_id = plant_pending(settings, speed.tenant_id, url, timedelta(), [STORED_RUN])
    run = speed.wait(run_id, timeout=30)
    assert run["status"] == "succeeded", run
    # Two runs were missing: two calls.
    assert len(pagespeed.sent_for(url)) == 2
    result = speed.results(url=url)["data"][0]
    performance = [each["scores"]["performance"] for each in result["runs"]]
    assert performance == [10] + [each["performance"] for each in expected_runs("mobile", 2)]
    assert result["spread"]["performance"]["min"] == 10
    assert result["scores"]["performance"] == sorted(performance)[1]


def test_a_run_that_stopped_moving_is_given_up_visibly(
    speed: PageSpeed, settings: Settings, pagespeed: PageSpeedStandIn
) -> None:
    url = speed.url("/stuck")
    age = timedelta(seconds=durable.STALL_SECONDS + 60)
    run_id = plant_pending(settings, speed.tenant_id, url, age, [])
    run = speed.wait(run_id, timeout=30)
    assert run["status"] == "failed", run
    found = speed.results(url=url)["data"][0]
    assert found["error"]["code"] == "stalled"
    assert pagespeed.sent_for(url) == []


@pytest.mark.parametrize(
    ("mode", "scope", "lcp"),
    [("url", "url", 2764), ("origin_fallback", "origin", 2210), ("origin", "origin", 2210)],
)
def test_field_data_falls_back_to_the_origin(
    speed: PageSpeed, pagespeed: PageSpeedStandIn, mode: str, scope: str, lcp: int
) -> None:
    url = speed.url(f"/field-{mode}")
    pagespeed.field[url] = mode
    speed.measured({"urls": [url], "runs": 1})
    field = speed.results(url=url)["data"][0]["field"]
    assert field["scope"] == scope and field["lcp_ms"] == lcp


def test_no_field_data_is_scope_none(speed: PageSpeed, pagespeed: PageSpeedStandIn) -> None:
    url = speed.url("/quiet")
    pagespeed.field[url] = "none"
    speed.measured({"urls": [url], "runs": 1})
    assert speed.results(url=url)["data"][0]["field"] == provider.none_field()


def test_latest_vitals_feed_the_audit(
    speed: PageSpeed, settings: Settings, pagespeed: PageSpeedStandIn
) -> None:
    fast, slow, desktop_only, never = (
        speed.url(f"/{name}") for name in ("fast", "slow", "desktop", "never")
    )
    pagespeed.slow[slow] = 2.0
    speed.measured({"urls": [fast, slow], "strategy": "both", "runs": 1})
    speed.measured({"urls": [desktop_only], "strategy": "desktop", "runs": 1})
    broken = speed.url("/broken")
    pagespeed.fail(broken, "FAILED_DOCUMENT_REQUEST")
    speed.measured({"urls": [broken], "runs": 1})
    asked = [fast, f"https://{speed.host.upper()}/slow", desktop_only, never, broken]

    async def scenario(db: Database) -> dict[str, pagespeed_service.Vitals]:
        async with db.unit_of_work() as session:
            return await pagespeed_service.latest_vitals(session, speed.tenant_id, asked)

    vitals = run_on(settings, scenario)
    assert set(vitals) == {fast, asked[1], desktop_only}
    assert vitals[fast].strategy == "mobile" and vitals[desktop_only].strategy == "desktop"
    assert vitals[fast].field_scope == "url"
    assert (vitals[fast].field_lcp_ms, vitals[fast].field_inp_ms, vitals[fast].field_cls) == (
        2764,
        231,
        0.12,
    )
    assert vitals[fast].lab_lcp_ms == expected_runs("mobile", 1)[0]["lcp_ms"]
    slowed = vitals[asked[1]]
    assert slowed.url == slow and slowed.field_lcp_ms == 5528 and slowed.field_inp_ms == 462
    rating = pagespeed_service.rating
    assert rating("lcp_ms", vitals[fast].field_lcp_ms) == "needs_improvement"
    assert rating("lcp_ms", slowed.field_lcp_ms) == "poor"
    assert rating("inp_ms", slowed.field_inp_ms) == "needs_improvement"
    assert rating("cls", vitals[fast].field_cls) == "needs_improvement"
    assert rating("cls", 0.1) == "good" and rating("cls", 0.26) == "poor"
    assert rating("inp_ms", 200) == "good" and rating("inp_ms", 501) == "poor"
    assert rating("lcp_ms", 2500) == "good" and rating("lcp_ms", 4001) == "poor"
    assert rating("lcp_ms", None) is None


# --- reading Google's answers ---------------------------------------------------------------


def test_a_lighthouse_runtime_error_is_a_failure() -> None:
    body = json.loads((FIXTURES / "psi-lighthouse-12.8.2-mobile.json").read_text())
    body["lighthouseResult"]["runtimeError"] = {"code": "NO_FCP", "message": "No content."}
    with pytest.raises(provider.MeasureFailed) as failed:
        provider.parse(body)
    assert failed.value.code == "NO_FCP" and not failed.value.retryable


@pytest.mark.parametrize(
    ("status", "message", "code", "retryable"),
    [
        (
            400,
            "Lighthouse returned error: FAILED_DOCUMENT_REQUEST. Unable to load.",
            "FAILED_DOCUMENT_REQUEST",
            False,
        ),
        (500, "Lighthouse returned error: NO_FCP. The page did not paint.", "NO_FCP", True),
        (400, "Invalid value 'ftp://x' for url", "invalid_request", False),
        (429, "Quota exceeded", "quota_exceeded", True),
        (503, "Backend Error", "provider_error", True),
    ],
)
def test_google_refusals_are_named(status: int, message: str, code: str, retryable: bool) -> None:
    failed = provider.refusal(status, {"error": {"code": status, "message": message}}, 3.0)
    assert (failed.code, failed.retryable) == (code, retryable)
    assert failed.message == message
    assert provider.refusal(502, "<html>", None).code == "provider_error"
