"""seo.queryPerformance beyond Search Console: our own content events in a series (a draft
published or updated here, a page a website scan found changed), and whether a page's change
worked, against the rest of the site's trend; over REST and RPC, and never another tenant's."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest

from contentplatform.config import Settings
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database
from contentplatform.publishers.models import PublishAttempt, PublisherConnection
from contentplatform.seo.search_console.repository import Figures
from tests.seo.search_console.support import Day, days, make_property, p, plant
from tests.support.database import run_on
from tests.support.orgs import Org
from tests.support.problems import problem
from tests.website_scan.seed import crawled, seed_snapshot
from tests.website_scan.support import site_url

pytestmark = pytest.mark.shared_org

OP = "seo.queryPerformance"
A = "https://example.com/a"
B = "https://example.com/b"
FIRST = date(2026, 3, 1)
STORED = 59  # 1 March to 28 April
EVENT = date(2026, 3, 30)
WINDOW = {"startDate": "2026-03-01", "endDate": "2026-04-28"}
_planted: set[str] = set()


def one_day(day: date) -> Day:
    """A: 10 clicks a day before EVENT, 20 after it (and on it); B 30; 60 more the site's alone:
    the rest of the site is flat at 90 a day."""
    a = 10 if day < EVENT else 20
    return Day(
        day,
        Figures(a + 30 + 60, (a + 90) * 10, 5.0),
        pages=[p(A, a, a * 10, 3.0), p(B, 30, 300, 6.0)],
    )


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def plant_publications(settings: Settings, tenant_id: uuid.UUID) -> str:
    """A's first publication (30 March), its update (23:00 on 9 April in Pacific Time, the 10th
    in UTC), a publication off the property's site, and a failed attempt. The draft's id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            connection = PublisherConnection(
                tenant_id=tenant_id,
                name="Blog",
                type="webhook",
                config={},
                status="active",
                is_default=True,
                capabilities=[],
            )
            draft, elsewhere = (
                Draft(tenant_id=tenant_id, title=title, content="", status="published")
                for title in ("Raised beds", "Elsewhere")
            )
            session.add_all([connection, draft, elsewhere])
            await session.flush()
            for target, url, status, finished in (
                (draft, A, "succeeded", "2026-03-30T18:00:00"),
                (draft, A, "succeeded", "2026-04-10T06:00:00"),
                (draft, A, "failed", "2026-04-12T06:00:00"),
                (elsewhere, "https://other.example/x", "succeeded", "2026-03-20T12:00:00"),
            ):
                session.add(
                    PublishAttempt(
                        tenant_id=tenant_id,
                        draft_id=target.id,
                        connection_id=connection.id,
                        mode="publish",
                        status=status,
                        tries=1,
                        draft_version=1,
                        external_url=url,
                        triggered_by="user",
                        finished_at=utc(finished),
                    )
                )
            return str(draft.id)

    result: str = run_on(settings, scenario)
    return result


def plant_scans(settings: Settings, org: Org) -> str:
    """Two scans of the site: the second (25 March) finds A's title changed, B unchanged. The
    second snapshot's id."""
    config = org.ok("websiteScan.createConfig", {"name": "Site", "startUrl": site_url()})

    async def scenario(db: Database) -> str:
        tenant, config_id = org.tenant_id, uuid.UUID(config["id"])
        await seed_snapshot(
            db,
            tenant,
            config_id,
            [crawled(A, title="Beds"), crawled(B)],
            created_at=utc("2026-03-10T12:00:00"),
        )
        seeded = await seed_snapshot(
            db,
            tenant,
            config_id,
            [crawled(A, title="Raised beds"), crawled(B)],
            created_at=utc("2026-03-25T12:00:00"),
        )
        return str(seeded.snapshot_id)

    result: str = run_on(settings, scenario)
    return result


@pytest.fixture
def seo(tenant: Org, settings: Settings) -> tuple[Org, dict[str, str]]:
    """The organization with 59 days of its property, its publications and two scans, planted
    once per module; the draft's and the second snapshot's ids."""
    if tenant.org not in _planted:
        property_id = make_property(settings, tenant.tenant_id)
        plant(settings, tenant.tenant_id, property_id, [one_day(d) for d in days(FIRST, STORED)])
        _ids[tenant.org] = {
            "draft": plant_publications(settings, tenant.tenant_id),
            "snapshot": plant_scans(settings, tenant),
        }
        _planted.add(tenant.org)
    return tenant, _ids[tenant.org]


_ids: dict[str, dict[str, str]] = {}


def read(org: Org, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = org.ok(OP, {**WINDOW, **fields}, role="member")
    return answer


def test_a_series_carries_our_content_events_on_the_site(
    seo: tuple[Org, dict[str, str]],
) -> None:
    org, ids = seo
    answer = read(org, dimensions=["date"])
    assert len(answer["data"]) == STORED
    assert answer["events_truncated"] is False
    shown = [
        (e["date"], e["kind"], e["page"], e["draft_id"], e["title"], e["fields_changed"])
        for e in answer["events"]
    ]
    assert shown == [
        # 06:00 UTC on the 10th is the 9th in Search Console's (Pacific) days.
        ("2026-04-09", "updated", A, ids["draft"], "Raised beds", []),
        ("2026-03-30", "published", A, ids["draft"], "Raised beds", []),
        ("2026-03-25", "page_changed", A, None, None, ["title"]),
    ]
    assert answer["events"][2]["snapshot_id"] == ids["snapshot"]


def test_events_follow_the_page_filter_and_only_a_series_has_them(
    seo: tuple[Org, dict[str, str]],
) -> None:
    org, _ = seo
    assert read(org, dimensions=["date"], pageFilter=B, pageOperator="equals")["events"] == []
    only_a = read(org, dimensions=["date", "page"], pageFilter="/a")
    assert {e["page"] for e in only_a["events"]} == {A}
    early = read(org, dimensions=["date"], endDate="2026-03-29")
    assert [e["kind"] for e in early["events"]] == ["page_changed"]
    assert read(org, dimensions=["page"])["events"] is None
    assert read(org)["impact"] is None


def test_the_impact_of_a_change_is_held_against_the_rest_of_the_site(
    seo: tuple[Org, dict[str, str]],
) -> None:
    org, _ = seo
    impact = read(org, pageFilter=A, pageOperator="equals", eventDate=EVENT.isoformat())["impact"]
    assert impact["days"] == 28
    assert impact["before"] == {"start": "2026-03-02", "end": "2026-03-29"}
    assert impact["after"] == {"start": "2026-03-31", "end": "2026-04-27"}
    assert (impact["page"]["before"]["clicks"], impact["page"]["after"]["clicks"]) == (280, 560)
    rest = impact["rest_of_site"]
    assert (rest["before"]["clicks"], rest["after"]["clicks"]) == (28 * 90, 28 * 90)
    assert impact["page"]["change"]["clicks_pct"] == 100.0
    assert impact["expected_clicks"] == 280.0
    assert impact["lift_pct"] == 100.0
    assert impact["verdict"] == "improved"


def test_too_few_days_after_the_change_are_insufficient_data(
    seo: tuple[Org, dict[str, str]],
) -> None:
    org, _ = seo
    late = read(org, pageFilter=A, pageOperator="equals", eventDate="2026-04-25")["impact"]
    assert late["days"] == 3
    assert late["verdict"] == "insufficient_data"
    unstored = read(org, pageFilter=A, pageOperator="equals", eventDate="2026-05-20")["impact"]
    assert (unstored["days"], unstored["before"], unstored["verdict"]) == (
        0,
        None,
        "insufficient_data",
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"eventDate": "2026-03-30"}, "eventDate needs pageFilter"),
        ({"eventDate": "2026-03-30", "pageFilter": A, "eventDays": 6}, "eventDays"),
        ({"eventDate": "2026-03-30", "pageFilter": A, "eventDays": 91}, "eventDays"),
    ],
)
def test_a_bad_event_question_is_400(
    seo: tuple[Org, dict[str, str]], fields: dict[str, Any], field: str
) -> None:
    org, _ = seo
    body = problem(org.request(OP, {**WINDOW, **fields}, role="member"), 400, "BAD_REQUEST")
    assert field in str(body)


def test_another_tenant_sees_none_of_the_events(
    seo: tuple[Org, dict[str, str]], other_tenant: Org, settings: Settings
) -> None:
    if other_tenant.org not in _planted:
        property_id = make_property(settings, other_tenant.tenant_id)
        plant(settings, other_tenant.tenant_id, property_id, [one_day(FIRST)])
        _planted.add(other_tenant.org)
    # The same site and URLs as the first organization's, whose events must not show.
    assert read(other_tenant, dimensions=["date"])["events"] == []
