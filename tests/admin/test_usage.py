"""admin.usageOverview over REST and RPC: every tenant's debits added up per UTC day or month,
grouped by kind, tenant or plan, the top groups per bucket, the provider cost from the AI-usage
price table, the totals; bounds refused. The debits are written straight to the ledger in
March 2023, where no other test writes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import delete

from contentplatform.analytics.ai_usage import prices
from contentplatform.credits.models import CreditLedgerEntry
from contentplatform.kit.db import Database
from tests.admin.support import Operator
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.problems import problem

DAY1 = datetime(2023, 3, 1, 10, tzinfo=UTC)
DAY2 = datetime(2023, 3, 2, 10, tzinfo=UTC)
PERIOD = {"startDate": "2023-03-01T00:00:00Z", "endDate": "2023-03-03T00:00:00Z"}


def debit(tenant_id: uuid.UUID, at: datetime, credits: int, kind: str, model: str, tokens: int):
    return CreditLedgerEntry(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        entry_type="debit",
        amount=-credits,
        balance_after=0,
        kind=kind,
        model=model,
        input_tokens=tokens,
        output_tokens=tokens // 2,
        description="test debit",
        created_at=at,
    )


@pytest.fixture
def usage(run: Run, tenant: Org, other_tenant: Org) -> tuple[uuid.UUID, uuid.UUID]:
    mine, theirs = tenant.tenant_id, other_tenant.tenant_id

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            session.add_all(
                [
                    debit(mine, DAY1, 30, "generation", "gpt-4o", 1_000_000),
                    debit(mine, DAY1, 5, "chat", "gpt-4o-mini", 2_000),
                    debit(theirs, DAY1, 7, "generation", "gpt-4o-mini", 10_000),
                    debit(theirs, DAY2, 11, "chat", "unpriced-model", 500),
                ]
            )

    run(scenario)
    yield mine, theirs

    async def clean(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                delete(CreditLedgerEntry).where(
                    CreditLedgerEntry.tenant_id.in_([mine, theirs]),
                    CreditLedgerEntry.created_at < datetime(2024, 1, 1, tzinfo=UTC),
                )
            )

    run(clean)


def results(bucket: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {result["group"]: result for result in bucket["results"]}


def test_consumption_by_kind_per_day_with_the_provider_cost(operator: Operator, usage) -> None:
    found = operator.ok("admin.usageOverview", PERIOD)
    assert found["total"] == 2
    day1, day2 = found["data"]
    assert day1["start_time"] == "2023-03-01T00:00:00Z"
    assert day1["end_time"] == "2023-03-02T00:00:00Z"
    gpt4o = prices.cost({"gpt-4o": [1_000_000, 500_000]})
    mini = prices.cost({"gpt-4o-mini": [10_000, 5_000]})
    assert results(day1) == {
        "generation": {
            "group": "generation", "credits": 37, "operations": 2,
            "input_tokens": 1_010_000, "output_tokens": 505_000,
            "provider_cost_usd": round(gpt4o + mini, 6),
        },
        "chat": {
            "group": "chat", "credits": 5, "operations": 1, "input_tokens": 2_000,
            "output_tokens": 1_000,
            "provider_cost_usd": prices.cost({"gpt-4o-mini": [2_000, 1_000]}),
        },
    }  # fmt: skip
    assert [r["group"] for r in day1["results"]] == ["generation", "chat"]  # most credits first
    assert results(day2)["chat"]["provider_cost_usd"] == 0  # a model the table does not price
    assert found["totals"]["credits"] == 53 and found["totals"]["operations"] == 4
    assert found["totals"]["active_tenants"] == 2


def test_consumption_by_tenant_keeps_each_tenants_own(operator: Operator, usage) -> None:
    mine, theirs = usage
    found = operator.ok("admin.usageOverview", {**PERIOD, "groupBy": "tenant"})
    day1 = results(found["data"][0])
    assert day1[str(mine)]["credits"] == 35 and day1[str(theirs)]["credits"] == 7
    assert results(found["data"][1]) == {str(theirs): results(found["data"][1])[str(theirs)]}
    top = operator.ok("admin.usageOverview", {**PERIOD, "groupBy": "tenant", "limit": 1})
    assert [r["group"] for r in top["data"][0]["results"]] == [str(mine)]
    assert top["totals"]["credits"] == 53  # the totals count every group


def test_consumption_by_plan_and_by_month(operator: Operator, usage) -> None:
    found = operator.ok("admin.usageOverview", {**PERIOD, "groupBy": "plan", "bucketWidth": "1mo"})
    [month] = found["data"]
    assert month["start_time"] == "2023-03-01T00:00:00Z"
    assert month["end_time"] == "2023-03-03T00:00:00Z"  # cut to the period asked for
    assert results(month)["free"]["credits"] == 53


def test_bounds_are_refused(operator: Operator) -> None:
    for bad in (
        {},
        {"startDate": "2023-01-01T00:00:00Z", "endDate": "2024-01-03T00:00:00Z"},
        {"startDate": "2023-03-02T00:00:00Z", "endDate": "2023-03-01T00:00:00Z"},
        {**PERIOD, "bucketWidth": "1w"},
        {**PERIOD, "groupBy": "model"},
        {**PERIOD, "limit": 0},
        {**PERIOD, "limit": 101},
        {"startDate": "yesterday"},
    ):
        problem(operator.request("admin.usageOverview", bad), 400, "BAD_REQUEST")
