"""Money safety below the API: buckets drawn earliest-expiring first, expiry rows, grants and
refunds applied once, grant policies, racing holds that never overdraw, and a month that
reconciles to the credit."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from contentplatform.credits import buckets, service
from contentplatform.credits import usage as credit_usage
from contentplatform.credits.models import EntryType
from contentplatform.kit.db import Database
from contentplatform.kit.errors import PaymentRequired
from tests.credits.support import FEB, GRANT, JAN, MAR, Credits


def test_fifty_racing_reserves_never_overdraw_the_last_credits(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=25)
        await credits.balance()
        outcomes = await asyncio.gather(
            *(credits.reserve(f"race-{n}", 1) for n in range(50)), return_exceptions=True
        )
        held = [o for o in outcomes if not isinstance(o, BaseException)]
        refused = [o for o in outcomes if isinstance(o, PaymentRequired)]
        assert (len(held), len(refused)) == (25, 25), outcomes
        balance = await credits.balance()
        assert (balance.available, balance.reserved) == (0, 25)
        # Committing them all spends exactly the grant, never more.
        await asyncio.gather(*(credits.commit(hold.id) for hold in held))
        after = await credits.balance()
        assert (after.available, after.total, after.period.used) == (0, 0, 25)
        assert await credits.reconciles() == 0

    run(scenario)


def test_debits_draw_the_earliest_expiry_first_and_never_expiring_last(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)  # January's grant expires Feb 1
        forever = await credits.give(5, reference="admin-1")
        soon = await credits.give(
            3, reference="pack-soon", source="top_up", expires_at=JAN + timedelta(days=3)
        )
        later = await credits.give(4, reference="pack-later", source="top_up", expires_at=MAR)
        balance = await credits.balance()
        assert [b.id for b in balance.buckets][:1] == [soon.id]
        assert [b.id for b in balance.buckets][-2:] == [later.id, forever.id]
        held = await credits.reserve("big", 3 + GRANT + 2)
        await credits.commit(held.id)
        debits = [e for e in await credits.ledger() if e.entry_type == EntryType.debit]
        drawn = sorted(((e.bucket_id, -e.amount) for e in debits), key=lambda d: -d[1])
        monthly = next(b for b in balance.buckets if b.source == "monthly_grant")
        assert sorted(drawn, key=str) == sorted(
            [(soon.id, 3), (monthly.id, GRANT), (later.id, 2)], key=str
        )
        assert sorted(e.balance_after for e in debits) == [7, 9, 19]
        left = {b.id: b.remaining for b in await credits.buckets()}
        assert (left[soon.id], left[monthly.id], left[later.id], left[forever.id]) == (0, 0, 2, 5)
        assert await credits.reconciles() == 7

    run(scenario)


def test_a_bucket_past_its_expiry_expires_what_it_held_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        soon = JAN + timedelta(days=2)
        spent = await credits.give(6, reference="spent", source="top_up", expires_at=soon)
        unused = await credits.give(
            5, reference="unused", source="top_up", expires_at=soon, now=JAN + timedelta(seconds=1)
        )
        assert (await credits.balance()).available == GRANT + 11
        held = await credits.reserve("k", 8)
        # The packs expire first (together: the older first): 6 of one, 2 of the other.
        await credits.commit(held.id)
        debits = {e.bucket_id: e.amount for e in await credits.ledger() if e.entry_type == "debit"}
        assert sorted(debits.values()) == [-6, -2] and set(debits) == {spent.id, unused.id}
        last = next(bucket_id for bucket_id, amount in debits.items() if amount == -2)

        later = JAN + timedelta(days=3)
        for _ in range(2):  # asked twice, expired once
            assert (await credits.balance(later)).available == GRANT
        expiries = [e for e in await credits.ledger() if e.entry_type == EntryType.expiry]
        assert [(e.bucket_id, e.amount) for e in expiries] == [(last, -3)]
        # The month's grant expires whole at February's first check; February's comes in.
        assert (await credits.balance(FEB)).available == GRANT
        assert sorted(e.amount for e in await credits.ledger() if e.entry_type == "expiry") == [
            -GRANT,
            -3,
        ]
        assert await credits.reconciles() == GRANT

    run(scenario)


def test_the_reconcilers_pass_writes_expiry_rows_without_a_balance_check(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await credits.give(6, reference="pack", source="top_up", expires_at=JAN + timedelta(days=1))
        await credits.balance()
        async with db.unit_of_work() as session:
            expired = await buckets.expire_due_buckets(session, JAN + timedelta(days=2))
        assert expired >= 6  # other tests' tenants may have due buckets at that instant too
        assert await credits.entries(EntryType.expiry) == [(-6, None)]
        async with db.unit_of_work() as session:
            await buckets.expire_due_buckets(session, JAN + timedelta(days=2))
        assert await credits.entries(EntryType.expiry) == [(-6, None)]
        assert await credits.reconciles() == GRANT

    run(scenario)


def test_a_grant_applies_once_per_reference_and_a_refund_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await credits.balance()
        first, again = await asyncio.gather(
            credits.give(8, reference="cs_1", source="top_up"),
            credits.give(8, reference="cs_1", source="top_up"),
        )
        assert first.id == again.id
        assert sorted(await credits.entries(EntryType.grant), key=str) == [
            (10, "2090-01"),
            (8, None),
        ]
        spent = await credits.reserve("k", GRANT + 3)
        await credits.commit(spent.id)  # the month's 10, then 3 of the pack
        removed = await asyncio.gather(credits.revoke("cs_1"), credits.revoke("cs_1"))
        assert sorted(removed) == [0, 5]
        assert await credits.revoke("cs_1") == 0
        assert await credits.revoke("unknown") == 0
        [refund] = await credits.entries(EntryType.refund)
        assert refund == (-5, None)
        assert (await credits.balance()).available == 0
        assert await credits.reconciles() == 0

    run(scenario)


def test_a_partial_refund_removes_at_most_the_amount(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await credits.give(8, reference="cs_2", source="top_up")
        assert await credits.revoke("cs_2", amount=3) == 3
        assert await credits.revoke("cs_2", amount=3) == 0
        assert (await credits.balance()).available == GRANT + 5

    run(scenario)


async def _policy(db: Database, credits: Credits, **policy: object) -> None:
    async with db.unit_of_work() as session:
        await buckets.set_grant_policy(session, credits.tenant_id, **policy)  # type: ignore[arg-type]


def test_a_paid_plan_gets_no_calendar_grant_and_past_due_pauses_it(run):
    async def scenario(db: Database) -> None:
        paid = await Credits.for_new_tenant(db)
        await _policy(db, paid, monthly_credits=500, automatic=False, paused=False)
        assert (await paid.balance()).available == 0
        await paid.give(500, reference="in_1", source="monthly_grant", expires_at=FEB)
        assert (await paid.balance()).available == 500
        assert (await paid.balance()).low_balance_threshold == 50

        past_due = await Credits.for_new_tenant(db)
        await past_due.balance()  # January granted
        await _policy(db, past_due, monthly_credits=None, automatic=True, paused=True)
        assert (await past_due.balance(FEB)).available == 0  # January expired, no February
        assert await past_due.entries(EntryType.grant) == [(GRANT, "2090-01")]

        bigger = await Credits.for_new_tenant(db)
        await _policy(db, bigger, monthly_credits=25, automatic=True, paused=False)
        assert (await bigger.balance()).available == 25

    run(scenario)


def test_a_monthly_grant_rolls_over_up_to_the_cap(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await _policy(
            db, credits, monthly_credits=None, automatic=True, paused=False, rollover_cap=4
        )
        held = await credits.reserve("k", 3)
        await credits.commit(held.id)  # 7 left of January's 10
        february = await credits.balance(FEB)
        assert february.available == GRANT + 4
        assert await credits.entries(EntryType.expiry) == [(-7, "2090-01")]
        assert (4, "2090-02") in await credits.entries(EntryType.grant)
        assert await credits.reconciles() == GRANT + 4

    run(scenario)


def test_a_month_reconciles_to_the_credit(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await credits.balance()
        await credits.give(20, reference="pack-a", source="top_up", expires_at=MAR)
        await credits.give(
            5, reference="pack-b", source="top_up", expires_at=JAN + timedelta(days=1)
        )
        for n, amount in enumerate((4, 7, 2)):
            held = await credits.reserve(f"op-{n}", amount + 1)
            await credits.commit(held.id, amount)
        released = await credits.reserve("dropped", 3)
        await credits.release(released.id)
        await credits.revoke("pack-a", amount=6)
        await credits.balance(JAN + timedelta(days=2))  # pack-b's rest expires
        ledger = await credits.ledger()

        def total(entry_type: EntryType) -> int:
            return sum(e.amount for e in ledger if e.entry_type == entry_type)

        grants, commits = total(EntryType.grant), -total(EntryType.debit)
        expiries, refunds = -total(EntryType.expiry), -total(EntryType.refund)
        assert (grants, commits, refunds) == (GRANT + 25, 13, 6)
        balance = await credits.balance(JAN + timedelta(days=2))
        assert grants - commits - expiries - refunds == balance.total == balance.available
        assert balance.total == await credits.reconciles()

    run(scenario)


def test_usage_buckets_committed_debits_by_day_and_kind(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=100)
        day_two = JAN + timedelta(days=1)
        for key, kind, amount, now in (
            ("a", "chat.message", 2, JAN),
            ("b", "chat.message", 3, JAN),
            ("c", "generation.blog", 7, day_two),
        ):
            held = await credits.reserve(key, amount, kind=kind, now=now)
            await credits.commit(held.id, now=now)
        await credits.reserve("open", 5, kind="chat.message")  # a hold is no usage
        async with db.unit_of_work() as session:
            usage = await credit_usage.usage(
                session,
                credits.tenant_id,
                start=JAN.replace(hour=0),
                end=JAN.replace(hour=0) + timedelta(days=3),
                bucket_width="1d",
                group_by="kind",
                kind=None,
            )
            month = await credit_usage.month_usage(session, credits.tenant_id, now=JAN)
        assert usage.total == 3
        first, second, third = usage.data
        assert [(r.kind, r.credits, r.operations) for r in first.results] == [
            ("chat.message", 5, 2)
        ]
        assert [(r.kind, r.credits, r.operations) for r in second.results] == [
            ("generation.blog", 7, 1)
        ]
        assert third.results == []
        assert second.start_time == JAN.replace(hour=0) + timedelta(days=1)
        assert month.used == 12 and month.start.month == 1

    run(scenario)


def test_usage_by_job_counts_the_tokens_a_commit_recorded_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=3)
        await credits.give(50, reference="pack", source="top_up", expires_at=MAR)
        job = uuid.uuid4()
        # 8 credits: 3 from January's grant, 5 from the pack; two debit rows, tokens once.
        spans = await credits.reserve("run-1", 8, kind="generation.blog")
        await credits.commit(spans.id, spent=service.Spent(5_000, 2_100, "job", str(job)))
        other = await credits.reserve("run-2", 4, kind="generation.blog")
        await credits.commit(other.id, spent=service.Spent(900, 100, "draft", str(uuid.uuid4())))
        debits = [e for e in await credits.ledger() if e.entry_type == EntryType.debit]
        assert sorted(e.amount for e in debits) == [-5, -4, -3]
        async with db.unit_of_work() as session:
            usage = await credit_usage.usage(
                session,
                credits.tenant_id,
                start=JAN.replace(day=1, hour=0),
                end=FEB.replace(day=1, hour=0),
                bucket_width="1mo",
                group_by="job",
                kind="generation.blog",
            )
        [month] = usage.data
        by_job = {
            r.job_id: (r.credits, r.operations, r.input_tokens, r.output_tokens)
            for r in month.results
        }
        assert by_job == {job: (8, 1, 5_000, 2_100), None: (4, 1, 900, 100)}

    run(scenario)


def test_the_price_table_charges_started_thousands_of_tokens_and_hundreds_of_words(run):
    async def scenario(db: Database) -> None:
        assert [service.tokens_charge(t) for t in (0, 1, 1_000, 1_001)] == [0, 1, 1, 2]
        # GENERATION_REGENERATE_WORDS_PER_CREDIT: 100 by default.
        assert [service.words_charge(w) for w in (0, 100, 101)] == [0, 1, 2]

    run(scenario)
