"""analytics.aiUsageOverview, aiUsageTimeseries, aiUsageBreakdown and aiUsageEvents over REST and
RPC.

The usage is debit rows written straight into the credit ledger through its repository (each row
its own commit, at an exact instant): March 2025 (UTC, the organization's zone) holds six commits
(chat, two generation runs, an ingest, a site profile, a chat on a model the price table does not
know), February one, April one that March leaves out, and 10 May 2025 52 commits of 52 models
(the 50-group fold). test_real_usage makes real usage through the API (a chat answer of the
offline model) and checks that it adds up to billing.getUsage's."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from contentplatform.analytics.ai_usage import prices
from contentplatform.analytics.ai_usage import service as ai_usage
from contentplatform.analytics.ai_usage.schemas import UsageKind
from contentplatform.config import Settings
from contentplatform.credits import buckets
from contentplatform.credits import repository as ledger
from contentplatform.credits import service as credits
from contentplatform.kit.db import Database
from tests.support.database import run_on
from tests.support.orgs import Org, org_fixture
from tests.support.problems import problem
from tests.workflows.support import steps

pytestmark = pytest.mark.shared_org

usage = org_fixture(Org)
other = org_fixture(Org, second=True)

MARCH = {"dateFrom": "2025-03-01", "dateTo": "2025-03-31"}
USER_1, USER_2 = str(uuid.uuid4()), str(uuid.uuid4())
JOB, WORKFLOW = uuid.uuid4(), uuid.uuid4()
RUN_1, RUN_2, INSTANCE_1, INSTANCE_2 = (uuid.uuid4() for _ in range(4))
_seeded: set[uuid.UUID] = set()


def at(month: int, day: int, hour: int = 12) -> datetime:
    return datetime(2025, month, day, hour, tzinfo=UTC)


def debit(
    when: datetime,
    amount: int,
    kind: str,
    model: str | None,
    tokens: tuple[int, int] | None,
    *,
    user: str | None = None,
    run: uuid.UUID | None = None,
    instance: uuid.UUID | None = None,
) -> dict[str, Any]:
    """A debit row as credits/buckets.py writes one (every row with the same keys)."""
    return {
        "id": uuid.uuid4(),
        "entry_type": "debit",
        "amount": -amount,
        "balance_after": 0,
        "kind": kind,
        "bucket_id": None,
        "reservation_id": None,
        "period": None,
        "actor_type": "user" if user else "system",
        "actor_id": user,
        "resource_type": "job" if run else None,
        "resource_id": str(JOB) if run else None,
        "description": f"{kind} (test)",
        "input_tokens": tokens[0] if tokens else None,
        "output_tokens": tokens[1] if tokens else None,
        "model": model,
        "workflow_id": WORKFLOW if run else None,
        "workflow_run_id": run,
        "job_instance_id": instance,
        "created_at": when,
    }


MARCH_ROWS = [
    debit(at(3, 2, 10), 2, "chat.message", "gpt-4o-mini", (1000, 500), user=USER_1),
    debit(at(3, 2, 11), 4, "generation.blog", "gpt-4o", (3000, 1000), run=RUN_1,
          instance=INSTANCE_1),
    debit(at(3, 5, 9), 4, "generation.blog", "gpt-4o", (2000, 2000), run=RUN_2,
          instance=INSTANCE_2),
    debit(at(3, 10), 1, "documents.ingest", None, None, user=USER_1),
    debit(at(3, 20, 8), 1, "website_scan.profile", "offline-extractive-1", (800, 200)),
    debit(at(3, 31, 23), 1, "chat.message", "unpriced-model", (100, 100), user=USER_2),
]  # fmt: skip
OTHER_ROWS = [
    debit(at(2, 15), 1, "chat.message", "gpt-4o-mini", (500, 500), user=USER_1),
    debit(at(4, 1, 0), 9, "chat.message", "gpt-4o-mini", (9000, 0), user=USER_1),
    *(
        debit(at(5, 10, 12) + timedelta(seconds=index), 1, "chat.message", f"m{index:02}", (1, 1))
        for index in range(52)
    ),
]
# March: gpt-4o-mini 1000/500, gpt-4o 5000/3000, per 1,000,000 tokens.
MARCH_COST = round((1000 * 0.15 + 500 * 0.60 + 5000 * 2.50 + 3000 * 10.00) / 1_000_000, 6)


def insert(settings: Settings, tenant_id: uuid.UUID, rows: list[dict[str, Any]]) -> None:
    async def scenario(db: Database) -> None:
        # A plain session, not a unit of work: its after-commit hooks would reach the service's
        # cache, whose connections belong to the service's loop, not this one.
        async with db.sessionmaker() as session:
            await ledger.add_entries(session, tenant_id, rows)
            await session.commit()

    run_on(settings, scenario)


@pytest.fixture
def seeded(usage: Org, settings: Settings) -> Org:
    """The organization with the module's usage (written once per organization)."""
    if usage.tenant_id not in _seeded:
        insert(settings, usage.tenant_id, MARCH_ROWS + OTHER_ROWS)
        _seeded.add(usage.tenant_id)
    return usage


# --- overview ----------------------------------------------------------------------------------


def test_overview_adds_up_the_period_beside_the_previous(seeded: Org):
    found = seeded.ok("analytics.aiUsageOverview", MARCH, role="member")
    metrics = found["metrics"]
    assert metrics["input_tokens"] == {"value": 6900, "previous": 500, "change_pct": 1280.0}
    assert metrics["output_tokens"] == {"value": 3800, "previous": 500, "change_pct": 660.0}
    assert metrics["total_tokens"]["value"] == 10700
    assert metrics["requests"] == {"value": 6, "previous": 1, "change_pct": 500.0}
    assert metrics["credits"] == {"value": 13, "previous": 1, "change_pct": 1200.0}
    assert metrics["cost_usd"] == {"value": None, "previous": None, "change_pct": None}
    assert found["by_kind"] == [
        {"kind": "documents.ingest", "credits": 1, "total_tokens": 0},
        {"kind": "generation.blog", "credits": 8, "total_tokens": 8000},
        {"kind": "chat.message", "credits": 3, "total_tokens": 1700},
        {"kind": "website_scan.profile", "credits": 1, "total_tokens": 1000},
        # Every kind the ledger knows, the ones the period did not use at 0.
        {"kind": "seo.checkRankings", "credits": 0, "total_tokens": 0},
        {"kind": "seo.researchKeywords", "credits": 0, "total_tokens": 0},
        {"kind": "seo.runAiVisibility", "credits": 0, "total_tokens": 0},
        {"kind": "seoPlans.generate", "credits": 0, "total_tokens": 0},
    ]
    assert (found["date_from"], found["date_to"]) == ("2025-03-01", "2025-03-31")
    assert found["data_through"].startswith("2025-04-01T00:00:00")
    assert found["price_table_version"] == prices.VERSION
    assert isinstance(found["credits_balance"], int)

    admin = seeded.ok("analytics.aiUsageOverview", {**MARCH, "compare": "none"}, role="admin")
    assert admin["metrics"]["cost_usd"] == {"value": MARCH_COST, "previous": None,
                                            "change_pct": None}  # fmt: skip
    assert admin["metrics"]["credits"] == {"value": 13, "previous": None, "change_pct": None}
    editor = seeded.ok("analytics.aiUsageOverview", MARCH, role="editor")
    assert editor["metrics"]["cost_usd"]["value"] is None  # cost is the admins'


def test_credits_equal_the_ledger_debits_billing_reads(seeded: Org):
    found = seeded.ok("analytics.aiUsageOverview", MARCH, role="member")["metrics"]
    billed = seeded.ok(
        "billing.getUsage",
        {"startDate": "2025-03-01T00:00:00Z", "endDate": "2025-04-01T00:00:00Z",
         "bucketWidth": "1d"},
        role="member",
    )  # fmt: skip
    results = [result for bucket in billed["data"] for result in bucket["results"]]
    assert sum(result["credits"] for result in results) == found["credits"]["value"] == 13
    assert sum(result["input_tokens"] for result in results) == found["input_tokens"]["value"]
    assert sum(result["operations"] for result in results) == found["requests"]["value"]
    series = seeded.ok("analytics.aiUsageTimeseries", {**MARCH, "metrics": "credits"})
    assert sum(r["values"]["credits"] for b in series["data"] for r in b["results"]) == 13
    listed = seeded.ok("analytics.aiUsageEvents", {**MARCH, "limit": 100})
    assert sum(event["credits"] for event in listed["data"]) == 13


# --- timeseries --------------------------------------------------------------------------------


def test_timeseries_buckets_by_day_grouped(seeded: Org):
    found = seeded.ok(
        "analytics.aiUsageTimeseries",
        {**MARCH, "groupBy": "kind", "metrics": "credits,total_tokens,requests,cost_usd"},
        role="member",
    )
    assert (found["granularity"], found["date_from"], found["date_to"]) == (
        "day",
        "2025-03-01",
        "2025-03-31",
    )
    assert found["price_table_version"] == prices.VERSION
    assert len(found["data"]) == 31
    assert found["data"][0]["start"].startswith("2025-03-01T00:00:00")
    assert found["data"][0]["results"] == []
    second = found["data"][1]
    assert [(r["kind"], r["values"]) for r in second["results"]] == [
        ("generation.blog", {"credits": 4, "total_tokens": 4000, "requests": 1, "cost_usd": None}),
        ("chat.message", {"credits": 2, "total_tokens": 1500, "requests": 1, "cost_usd": None}),
    ]
    assert second["results"][0]["model"] is None  # not grouped by model

    weeks = seeded.ok(
        "analytics.aiUsageTimeseries",
        {**MARCH, "granularity": "week", "groupBy": "kind,model", "kind": "generation.blog"},
        role="admin",
    )
    assert weeks["data"][0]["start"].startswith("2025-02-24")  # the ISO week holding 1 March
    cells = [(r["kind"], r["model"], r["values"]) for b in weeks["data"] for r in b["results"]]
    assert cells == [
        ("generation.blog", "gpt-4o", {"total_tokens": 4000, "credits": 4}),
        ("generation.blog", "gpt-4o", {"total_tokens": 4000, "credits": 4}),
    ]
    models = seeded.ok(
        "analytics.aiUsageTimeseries",
        {**MARCH, "granularity": "month", "model": "gpt-4o", "metrics": "cost_usd,requests"},
        role="admin",
    )
    empty = seeded.ok("analytics.aiUsageTimeseries", {**MARCH, "metrics": "credits,cost_usd"})
    assert empty["data"][0]["results"] == [
        {
            "kind": None,
            "model": None,
            "workflow_id": None,
            "job_id": None,
            "user_id": None,
            "values": {"credits": 0, "cost_usd": 0.0},
        }
    ]  # fmt: skip  (ungrouped: a zero where nothing was used; the default role is admin)
    [month] = models["data"]
    assert month["results"] == [
        {"kind": None, "model": None, "workflow_id": None, "job_id": None, "user_id": None,
         "values": {"requests": 2, "cost_usd": round((5000 * 2.5 + 3000 * 10) / 1e6, 6)}}
    ]  # fmt: skip


def test_timeseries_folds_past_50_groups_into_other(seeded: Org):
    day = {"dateFrom": "2025-05-10", "dateTo": "2025-05-10"}
    found = seeded.ok(
        "analytics.aiUsageTimeseries", {**day, "groupBy": "model", "metrics": "credits,requests"}
    )
    [bucket] = found["data"]
    results = bucket["results"]
    assert len(results) == 51
    assert [r["model"] for r in results[:50]] == [f"m{index:02}" for index in range(50)]
    assert results[50] == {
        "kind": None, "model": "other", "workflow_id": None, "job_id": None, "user_id": None,
        "values": {"credits": 2, "requests": 2},
    }  # fmt: skip
    by_two = seeded.ok("analytics.aiUsageTimeseries", {**day, "groupBy": "user,kind"})
    assert by_two["data"][0]["results"] == [
        {"kind": "chat.message", "model": None, "workflow_id": None, "job_id": None,
         "user_id": None, "values": {"total_tokens": 104, "credits": 52}}
    ]  # fmt: skip


# --- breakdown ---------------------------------------------------------------------------------


def test_breakdown_groups_sorts_and_pages(seeded: Org):
    first = seeded.ok(
        "analytics.aiUsageBreakdown", {**MARCH, "groupBy": "model", "limit": 2}, role="member"
    )
    assert (first["total"], first["page"], first["limit"]) == (5, 1, 2)
    assert first["price_table_version"] == prices.VERSION
    assert first["data"][0] == {
        "group": {"key": "gpt-4o", "label": "gpt-4o"},
        "values": {"input_tokens": 5000, "output_tokens": 3000, "total_tokens": 8000,
                   "requests": 2, "credits": 8, "cost_usd": None},
    }  # fmt: skip
    pages = [first] + [
        seeded.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": "model", "limit": 2,
                                                 "page": page})
        for page in (2, 3)
    ]  # fmt: skip
    keys = [row["group"]["key"] for page in pages for row in page["data"]]
    # Credits descending; ties by key, in the same direction (no model last).
    assert keys == ["gpt-4o", "gpt-4o-mini", "unpriced-model", "offline-extractive-1", None]
    assert pages[2]["data"][0]["group"] == {"key": None, "label": "No model"}
    ascending = seeded.ok(
        "analytics.aiUsageBreakdown",
        {**MARCH, "groupBy": "model", "sortBy": "total_tokens", "sortOrder": "asc"},
    )
    assert [row["group"]["key"] for row in ascending["data"]] == [
        None, "unpriced-model", "offline-extractive-1", "gpt-4o-mini", "gpt-4o"
    ]  # fmt: skip

    by_cost = seeded.ok(
        "analytics.aiUsageBreakdown", {**MARCH, "groupBy": "kind", "sortBy": "cost_usd"},
        role="admin",
    )  # fmt: skip
    assert by_cost["data"][0]["group"] == {"key": "generation.blog", "label": "Article generation"}
    assert by_cost["data"][0]["values"]["cost_usd"] == round(42500 / 1e6, 6)
    assert sum(row["values"]["cost_usd"] for row in by_cost["data"]) == pytest.approx(MARCH_COST)
    refused = seeded.request(
        "analytics.aiUsageBreakdown", {**MARCH, "groupBy": "kind", "sortBy": "cost_usd"},
        role="editor",
    )  # fmt: skip
    problem(refused, 403, "FORBIDDEN")

    users = seeded.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": "user"})
    assert {row["group"]["key"]: row["values"]["credits"] for row in users["data"]} == {
        USER_1: 3, USER_2: 1, None: 9
    }  # fmt: skip
    jobs = seeded.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": "job"})
    assert {row["group"]["key"]: row["values"]["requests"] for row in jobs["data"]} == {
        str(JOB): 2, None: 4
    }  # fmt: skip
    flows = seeded.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": "workflow"})
    assert [row["group"]["key"] for row in flows["data"]] == [str(WORKFLOW), None]


# --- events ------------------------------------------------------------------------------------


def test_events_are_line_items_newest_first_filtered(seeded: Org):
    page = seeded.ok("analytics.aiUsageEvents", {**MARCH, "limit": 2}, role="member")
    assert (page["total"], page["page"], page["limit"]) == (6, 1, 2)
    assert [event["model"] for event in page["data"]] == ["unpriced-model", "offline-extractive-1"]
    last = seeded.ok("analytics.aiUsageEvents", {**MARCH, "limit": 2, "page": 3})
    assert [event["kind"] for event in last["data"]] == ["generation.blog", "chat.message"]

    runs = seeded.ok(
        "analytics.aiUsageEvents", {**MARCH, "workflowRunId": str(RUN_1)}, role="member"
    )
    [run] = runs["data"]
    assert run == {
        "id": run["id"],
        "at": run["at"],
        "kind": "generation.blog",
        "model": "gpt-4o",
        "operation_id": None,
        "workflow_id": str(WORKFLOW),
        "workflow_run_id": str(RUN_1),
        "step_key": None,
        "job_instance_id": str(INSTANCE_1),
        "user_id": None,
        "resource_type": "job",
        "resource_id": str(JOB),
        "input_tokens": 3000,
        "output_tokens": 1000,
        "credits": 4,
        "cost_usd": None,
        "reservation_id": None,
    }
    assert run["at"].startswith("2025-03-02T11:00:00")
    priced = seeded.ok(
        "analytics.aiUsageEvents", {**MARCH, "jobInstanceId": str(INSTANCE_2)}, role="admin"
    )
    assert [(e["workflow_run_id"], e["cost_usd"]) for e in priced["data"]] == [
        (str(RUN_2), round((2000 * 2.5 + 2000 * 10) / 1e6, 6))
    ]
    kinds = seeded.ok("analytics.aiUsageEvents", {**MARCH, "kind": "generation.blog"})
    assert kinds["total"] == 2
    models = seeded.ok("analytics.aiUsageEvents", {**MARCH, "model": "gpt-4o-mini"})
    assert [(e["user_id"], e["credits"]) for e in models["data"]] == [(USER_1, 2)]
    nothing = seeded.ok("analytics.aiUsageEvents", {**MARCH, "workflowRunId": str(uuid.uuid4())})
    assert (nothing["total"], nothing["data"]) == (0, [])


def test_event_rows_stream_oldest_first_in_batches(seeded: Org, settings: Settings):
    async def scenario(db: Database) -> list[dict[str, Any]]:
        async with db.unit_of_work() as session:
            start, end = at(3, 1, 0), at(5, 11, 0)
            return [row async for row in ai_usage.event_rows(session, seeded.tenant_id, start,
                                                              end, batch=4)]  # fmt: skip

    rows = run_on(settings, scenario)
    assert len(rows) == 6 + 1 + 52  # March, 1 April, 10 May
    assert rows == sorted(rows, key=lambda row: (row["at"], row["id"]))
    assert len({row["id"] for row in rows}) == len(rows)
    assert rows[0]["model"] == "gpt-4o-mini" and rows[0]["cost_usd"] == 0.00045


# --- refusals, roles, tenants ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "data", "field"),
    [
        ("analytics.aiUsageOverview", {"dateFrom": "2025-03-02", "dateTo": "2025-03-01"}, "before"),
        (
            "analytics.aiUsageEvents",
            {"dateFrom": "2023-01-01", "dateTo": "2025-01-01"},
            "24 months",
        ),
        (
            "analytics.aiUsageOverview",
            {"dateFrom": "0001-01-01", "dateTo": "0001-01-02"},
            "dateFrom",
        ),
        (
            "analytics.aiUsageTimeseries",
            {"dateFrom": "2024-01-01", "dateTo": "2025-03-01"},
            "400 days",
        ),
        ("analytics.aiUsageTimeseries", {"metrics": "credits,tokens"}, "metrics"),
        ("analytics.aiUsageTimeseries", {"groupBy": "kind,model,user"}, "groupBy"),
        ("analytics.aiUsageTimeseries", {"kind": "media.image_generation"}, "kind"),
        ("analytics.aiUsageBreakdown", {"groupBy": "step_type"}, "groupBy"),
        ("analytics.aiUsageBreakdown", {"groupBy": "kind", "limit": 101}, "limit"),
        ("analytics.aiUsageEvents", {"workflowRunId": "not-an-id"}, "workflowRunId"),
    ],
)
def test_bad_input_is_400(usage: Org, operation: str, data: dict[str, Any], field: str):
    """`field`: the field named, or the limit the range passes."""
    body = problem(usage.request(operation, data, role="member"), 400, "BAD_REQUEST")
    assert field in str(body.get("errors")), body


def test_a_caller_needs_the_organization(usage: Org, other: Org):
    for operation in ("aiUsageOverview", "aiUsageTimeseries", "aiUsageEvents"):
        response = usage.call(f"analytics.{operation}", {})
        assert response.status_code == 401
    outsider = other.tokens["member"]
    response = usage.call("analytics.aiUsageOverview", {}, token=outsider, org=usage.org)
    assert response.status_code == 403


def test_another_organization_sees_none_of_it(seeded: Org, other: Org):
    found = other.ok("analytics.aiUsageOverview", MARCH, role="admin")
    assert found["metrics"]["credits"]["value"] == 0
    assert found["metrics"]["cost_usd"]["value"] == 0
    assert other.ok("analytics.aiUsageEvents", MARCH)["total"] == 0
    assert other.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": "model"})["total"] == 0
    series = other.ok("analytics.aiUsageTimeseries", {**MARCH, "groupBy": "model"})
    assert all(bucket["results"] == [] for bucket in series["data"])
    totals = other.ok("analytics.aiUsageTimeseries", MARCH)
    assert {r["values"]["credits"] for b in totals["data"] for r in b["results"]} == {0}
    runs = other.ok("analytics.aiUsageEvents", {**MARCH, "workflowRunId": str(RUN_1)})
    assert runs["total"] == 0


# --- the organization's time zone --------------------------------------------------------------


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("zone", "spring", "autumn"),
    [
        ("Europe/Berlin", date(2025, 3, 30), date(2025, 10, 26)),
        ("America/New_York", date(2025, 3, 9), date(2025, 11, 2)),
    ],
)
def test_days_follow_the_zone_across_clock_changes(
    usage: Org, settings: Settings, zone: str, spring: date, autumn: date
):
    usage.ok("jobs.updateTimezone", {"timezone": zone}, role="admin")
    local = ZoneInfo(zone)
    days = [spring + timedelta(days=n) for n in range(-2, 3)]
    days += [autumn + timedelta(days=n) for n in range(-2, 3)]
    rows = [
        debit(datetime(d.year, d.month, d.day, hour, 30, tzinfo=local).astimezone(UTC), 1,
              "chat.message", "gpt-4o-mini", (10, 10))
        for d in days
        for hour in (0, 23)
    ]  # fmt: skip
    insert(settings, usage.tenant_id, rows)
    for first in (spring, autumn):
        found = usage.ok(
            "analytics.aiUsageTimeseries",
            {
                "dateFrom": str(first - timedelta(days=2)),
                "dateTo": str(first + timedelta(days=2)),
                "metrics": "requests",
            },
        )
        buckets = found["data"]
        assert len(buckets) == 5  # no day missing, none doubled
        starts = [datetime.fromisoformat(bucket["start"]) for bucket in buckets]
        assert [s.astimezone(local).date() for s in starts] == [
            first + timedelta(days=n) for n in range(-2, 3)
        ]
        assert all(s.astimezone(local).hour == 0 for s in starts)
        hours = [
            (datetime.fromisoformat(b["end"]) - datetime.fromisoformat(b["start"])).total_seconds()
            / 3600
            for b in buckets
        ]
        assert hours[2] == (23 if first == spring else 25)
        assert [bucket["results"][0]["values"] for bucket in buckets] == [{"requests": 2}] * 5


# --- a commit drawing on several buckets ------------------------------------------------------


@pytest.mark.own_org
def test_a_commit_drawing_on_two_buckets_is_one_request(usage: Org, settings: Settings):
    """Its two debit rows (one per bucket) are one request, its tokens counted once, in every
    report and in billing.getUsage."""
    june = datetime(2025, 6, 15, 12, tzinfo=UTC)
    job = uuid.uuid4()

    async def scenario(db: Database) -> int:
        async with db.sessionmaker() as session:  # as `insert`: no after-commit hooks
            for days in (1, 2):  # two packs expiring before any monthly grant: drawn first
                await buckets.grant(
                    session,
                    usage.tenant_id,
                    source="top_up",
                    amount=5,
                    expires_at=june + timedelta(days=days),
                    reference=f"pack-{days}",
                    description="test",
                    now=june,
                )
            held = await credits.reserve(
                session,
                usage.tenant_id,
                kind="generation.blog",
                idempotency_key="run-1",
                amount=8,
                now=june,
            )
            spent = credits.Spent(5_000, 2_100, "job", str(job), model="gpt-4o")
            await credits.commit(session, usage.tenant_id, held.id, now=june, spent=spent)
            rows = await ledger.entries_of_reservation(session, usage.tenant_id, held.id)
            await session.commit()
        return len([row for row in rows if row.entry_type == "debit"])

    assert run_on(settings, scenario) == 2
    day = {"dateFrom": "2025-06-15", "dateTo": "2025-06-15"}
    metrics = usage.ok("analytics.aiUsageOverview", day)["metrics"]
    assert (metrics["requests"]["value"], metrics["credits"]["value"]) == (1, 8)
    assert metrics["input_tokens"]["value"] == 5_000
    [row] = usage.ok("analytics.aiUsageBreakdown", {**day, "groupBy": "job"})["data"]
    assert (row["group"]["key"], row["values"]["requests"]) == (str(job), 1)
    series = usage.ok(
        "analytics.aiUsageTimeseries", {**day, "groupBy": "model,user", "metrics": "requests"}
    )
    [[result]] = [bucket["results"] for bucket in series["data"]]
    assert (result["model"], result["values"]["requests"]) == ("gpt-4o", 1)
    billed = usage.ok(
        "billing.getUsage",
        {"startDate": "2025-06-15T00:00:00Z", "endDate": "2025-06-16T00:00:00Z",
         "bucketWidth": "1h", "groupBy": "job"},
    )  # fmt: skip
    found = [
        (r["job_id"], r["operations"], r["input_tokens"])
        for b in billed["data"]
        for r in b["results"]
    ]
    assert found == [(str(job), 1, 5_000)]

    async def stream(db: Database) -> list[tuple[int, str | None]]:
        async with db.sessionmaker() as session:
            later = june + timedelta(hours=1)
            held = await credits.reserve(
                session,
                usage.tenant_id,
                kind="chat.message",
                idempotency_key="run-2",
                amount=1,
                now=later,
            )
            await credits.commit(session, usage.tenant_id, held.id, now=later)
            await session.commit()
            end = june + timedelta(days=1)
            # One commit a batch: the first commit's two rows are one line, and the walk goes on.
            return [
                (row["credits"], row["kind"])
                async for row in ai_usage.event_rows(session, usage.tenant_id, june, end, batch=1)
            ]

    assert run_on(settings, stream) == [(8, "generation.blog"), (1, "chat.message")]


# --- labels ---------------------------------------------------------------------------------


@pytest.mark.own_org
def test_a_breakdown_names_its_jobs_workflows_and_members(usage: Org, settings: Settings):
    """By their names now, not their ids; one gone (or never known) says so."""
    job = usage.ok("jobs.create", {"name": "Spring guides", "topics": ["Soil"]}, role="editor")
    workflow = usage.ok(
        "workflows.create", {"name": "Long-form guide", "steps": steps()}, role="editor"
    )
    me = usage.whoami("editor")["user"]
    gone = uuid.uuid4()
    rows = [
        debit(at(3, 2), 2, "generation.blog", "gpt-4o", (10, 10), user=me["id"], run=RUN_1),
        debit(at(3, 3), 1, "generation.blog", "gpt-4o", (10, 10), user=str(gone), run=RUN_2),
    ]
    rows[0] |= {"resource_id": job["id"], "workflow_id": uuid.UUID(workflow["id"])}
    rows[1] |= {"resource_id": str(gone), "workflow_id": gone}
    insert(settings, usage.tenant_id, rows)

    def labels(group_by: str) -> list[tuple[str | None, str]]:
        found = usage.ok("analytics.aiUsageBreakdown", {**MARCH, "groupBy": group_by})["data"]
        return [(row["group"]["key"], row["group"]["label"]) for row in found]

    assert labels("job") == [(job["id"], "Spring guides"), (str(gone), "Deleted job")]
    assert labels("workflow") == [
        (workflow["id"], "Long-form guide"),
        (str(gone), "Deleted workflow"),
    ]
    name = me["name"] or me["email"] or me["id"]
    assert labels("user") == [(me["id"], name), (str(gone), "Unknown member")]


# --- the kinds ----------------------------------------------------------------------------------


def test_the_kinds_are_those_the_ledger_records():
    assert UsageKind.__args__ == credits.KINDS  # type: ignore[attr-defined]
    assert "media.image_generation" not in credits.KINDS
