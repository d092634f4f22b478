"""drafts.list's search and totals over REST and RPC (issue 36): search through the index finds
drafts by words of their title and text, never another tenant's (nor counts them); every way a
draft comes, moves or goes leaves each list's `total` what the drafts are; documents' totals
and a first page costs the same statements at 3 drafts as at 30."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import delete, func, insert, select

from contentplatform.drafts.models import Draft, DraftCount
from contentplatform.kit.db import Database
from contentplatform.tenants.models import Tenant
from tests.drafts.review import Review
from tests.drafts.support import put_status
from tests.support.orgs import org_fixture
from tests.support.servers import statements

STATUSES = ("generating", "reviewing", "approved", "rejected", "published", "archived")

review = org_fixture(Review)
other = org_fixture(Review, second=True)


def live_counts(run: Any, tenant_id: uuid.UUID) -> dict[str, int]:
    """The tenant's live drafts by status, counted from the drafts themselves."""

    async def scenario(db: Database) -> dict[str, int]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(Draft.status, func.count())
                .where(Draft.tenant_id == tenant_id, Draft.deleted_at.is_(None))
                .group_by(Draft.status)
            )
            return {status: count for status, count in rows.tuples()}

    return run(scenario)


def assert_totals_hold(drafts: Review, run: Any) -> None:
    """Every list's total, the stats and the drafts themselves agree."""
    counted = live_counts(run, drafts.tenant_id)
    assert drafts.list()["total"] == sum(counted.values())
    for status in STATUSES:
        assert drafts.list(status=status)["total"] == counted.get(status, 0), status
    assert drafts.stats()["byStatus"] == {status: counted.get(status, 0) for status in STATUSES}


def test_search_finds_words_of_the_title_and_the_text_and_never_another_tenants(review, other):
    mine = review.create("Compost at home", "<p>Turn the heap of <b>kitchen scraps</b>.</p>")
    review.create("Pruning roses", "<p>Cut above an outward bud.</p>")
    hers = review.create("Winter notes", "<p>Mulch the beds; compost keeps.</p>")
    # The same words in another tenant: never shown, never counted.
    for n in range(3):
        other.create(f"Compost {n}", "<p>Kitchen scraps and compost.</p>")

    assert review.titles(search="compost") == ["Winter notes", "Compost at home"]
    assert review.list(search="compost")["total"] == 2
    assert review.list(search="KITCHEN SCRAPS") == {"data": [mine], "total": 1}
    assert review.list(search="outward bud")["total"] == 1
    assert review.list(search="pos")["total"] == 2  # part of a word
    assert review.list(search="ro")["total"] == 1  # shorter than a trigram
    assert review.list(search="scraps kitchen")["total"] == 0  # the words in that order
    assert other.list(search="compost")["total"] == 3

    # With a status, and after the draft's words change.
    review.approve(hers["id"])
    assert review.list(search="compost", status="approved") == {
        "data": [review.get(hers["id"])],
        "total": 1,
    }
    assert review.list(search="compost", status="reviewing")["data"] == [mine]
    review.update(mine["id"], title="Leaf mould", content="<p>Bag the leaves.</p>")
    assert review.titles(search="compost") == ["Winter notes"]
    assert review.titles(search="leaves") == ["Leaf mould"]
    review.delete(hers["id"])
    assert review.list(search="compost") == {"data": [], "total": 0}
    assert other.list(search="compost")["total"] == 3


def test_a_common_words_total_counts_up_to_a_thousand(review, run):
    async def scenario(db: Database) -> None:
        rows = [
            {
                "id": uuid.uuid4(),
                "tenant_id": review.tenant_id,
                "title": f"Compost {n}",
                "content": "<p>Soil.</p>",
                "content_text": "Soil.",
                "status": "reviewing",
                "version": 1,
            }
            for n in range(1005)
        ]
        async with db.unit_of_work() as session:
            await session.execute(insert(Draft), rows)

    run(scenario)
    answer = review.list(search="compost", limit=2)
    assert (len(answer["data"]), answer["total"]) == (2, 1000)
    assert review.list()["total"] == 1005
    assert review.list(search="compost 100")["total"] == 6  # 100 and 1000 to 1004


def test_every_way_a_draft_moves_keeps_the_totals(review, other, run):
    assert_totals_hold(review, run)
    made = [review.create(f"Draft {n}")["id"] for n in range(8)]
    other.create("Theirs")
    assert_totals_hold(review, run)

    review.approve(made[0])
    review.reject(made[1])
    review.update(made[2], title="Edited")  # an edit moves nothing
    assert_totals_hold(review, run)

    review.bulk("approve", made[3:5])
    review.bulk("reject", [made[5]], reason="Needs sources.")
    review.bulk("archive", [made[6], made[0]])
    assert_totals_hold(review, run)
    assert review.unarchive(made[6]).status_code == 200
    assert_totals_hold(review, run)

    review.delete(made[1])
    review.bulk("delete", [made[2], made[7]], role="admin")
    assert_totals_hold(review, run)

    # What generation and publishing write straight to the database counts as well.
    put_status(run, made[3], "published")
    put_status(run, made[4], "generating")
    put_status(run, made[5], "reviewing", deleted_at=None)
    assert_totals_hold(review, run)
    assert review.list()["total"] == 5
    assert other.list()["total"] == 1


def test_a_deleted_tenant_takes_its_counts_along(review, other, run):
    review.create("Mine")
    other.create("Theirs")

    async def scenario(db: Database) -> list[tuple[uuid.UUID, int]]:
        async with db.unit_of_work() as session:
            await session.execute(delete(Tenant).where(Tenant.id == review.tenant_id))
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(DraftCount.tenant_id, func.sum(DraftCount.live))
                .where(DraftCount.tenant_id.in_([review.tenant_id, other.tenant_id]))
                .group_by(DraftCount.tenant_id)
            )
            return [(tenant_id, int(live)) for tenant_id, live in rows.tuples()]

    assert run(scenario) == [(other.tenant_id, 1)]


@pytest.mark.parametrize("query", [{}, {"status": "reviewing"}])
def test_a_first_page_is_its_count_and_its_rows_whatever_the_drafts(review, server, query):
    def drafts_statements() -> list[str]:
        with statements(server) as sent:
            review.list(**query)
        return [s for s in sent if " drafts" in s or "draft_counts" in s]

    review.create("One")
    few = drafts_statements()
    for n in range(30):
        review.create(f"Draft {n}")
    many = drafts_statements()
    assert len(few) == len(many) == 2, many
    count, page = many
    # The total is the maintained count, not a count of the drafts.
    assert "from draft_counts" in count and "from drafts" not in count
    assert page.startswith("select") and "count(" not in page
