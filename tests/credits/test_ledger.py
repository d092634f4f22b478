"""The monthly grant, its expiry at the month's end, and the ledger staying append-only."""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path
from typing import Any

from sqlalchemy import event

from contentplatform.credits import repository, service
from contentplatform.credits.models import EntryType
from contentplatform.kit.db import Database
from tests.credits.support import FEB, GRANT, MAR, Credits, period
from tests.support.orgs import new_tenant

PACKAGE = Path(service.__file__).parent


def test_the_monthly_grant_is_applied_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        for _ in range(3):
            balance = await credits.balance()
            assert (period(balance), balance.period.granted, balance.period.used) == (
                "2090-01",
                GRANT,
                0,
            )
            assert (balance.reserved, balance.available) == (0, GRANT)
        assert await credits.entries(EntryType.grant) == [(GRANT, "2090-01")]

    run(scenario)


def test_two_sessions_racing_apply_the_grant_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        first, second = await asyncio.gather(credits.balance(), credits.balance())
        assert first.available == second.available == GRANT
        assert await credits.entries(EntryType.grant) == [(GRANT, "2090-01")]

    run(scenario)


def test_the_grant_defaults_to_the_configured_one(run, settings):
    async def scenario(db: Database) -> None:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            balance = await service.balance(session, tenant_id)
        assert balance.period.granted == balance.available == settings.monthly_credit_grant

    run(scenario)


def test_a_new_month_expires_what_is_left_of_the_last_grant(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k1", 3)
        await credits.commit(held.id)

        february = await credits.balance(FEB)
        assert (period(february), february.period.granted, february.period.used) == (
            "2090-02",
            GRANT,
            0,
        )
        assert february.available == GRANT
        assert await credits.entries(EntryType.expiry) == [(-(GRANT - 3), "2090-01")]

        # Asking again changes nothing; a month without use expires all of its grant.
        assert (await credits.balance(FEB)).available == GRANT
        assert (await credits.balance(MAR)).available == GRANT
        assert await credits.entries(EntryType.expiry) == [
            (-(GRANT - 3), "2090-01"),
            (-GRANT, "2090-02"),
        ]
        assert await credits.entries(EntryType.grant) == [
            (GRANT, "2090-01"),
            (GRANT, "2090-02"),
            (GRANT, "2090-03"),
        ]

    run(scenario)


def test_expiry_leaves_credits_granted_by_other_means(run):
    async def scenario(db: Database) -> None:
        # Unused: only the monthly bucket expires.
        unused = await Credits.for_new_tenant(db)
        await unused.give(5)
        assert (await unused.balance(FEB)).available == 5 + GRANT

        # Used beyond the month's grant: the month's bucket went first (it expires first), the
        # excess came from the other grant, nothing is left to expire in January, and the next
        # month's grant expires whole (it does not pay the other grant back).
        overdrawn = await Credits.for_new_tenant(db)
        await overdrawn.give(5)
        held = await overdrawn.reserve("big", GRANT + 2)
        await overdrawn.commit(held.id)
        assert (await overdrawn.balance(FEB)).available == 3 + GRANT
        assert (await overdrawn.balance(MAR)).available == 3 + GRANT
        assert await overdrawn.entries(EntryType.expiry) == [(-GRANT, "2090-02")]
        assert await overdrawn.reconciles() == 3 + GRANT

        # A refund took credits away: expiry takes only what the month's bucket still holds.
        refunded = await Credits.for_new_tenant(db)
        await refunded.balance()
        await refunded.give(4, reference="pack-1")
        spent = await refunded.reserve("k", GRANT + 1)
        await refunded.commit(spent.id)
        assert await refunded.revoke("pack-1") == 3
        assert (await refunded.balance(FEB)).available == GRANT
        assert await refunded.entries(EntryType.expiry) == []
        assert await refunded.reconciles() == GRANT

    run(scenario)


def test_two_sessions_racing_into_a_new_month_expire_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        await credits.balance()
        first, second = await asyncio.gather(credits.balance(FEB), credits.balance(FEB))
        assert first.available == second.available == GRANT
        assert await credits.entries(EntryType.expiry) == [(-GRANT, "2090-01")]
        assert len(await credits.entries(EntryType.grant)) == 2

    run(scenario)


def test_the_ledger_is_only_ever_inserted_into(run):
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(" ".join(statement.split()).lower())

    async def scenario(db: Database) -> None:
        event.listen(db.engine.sync_engine, "before_cursor_execute", record)
        credits = await Credits.for_new_tenant(db)
        kept = await credits.reserve("kept", 2)
        await credits.commit(kept.id, 1)
        await credits.commit(kept.id)
        dropped = await credits.reserve("dropped", 2)
        await credits.release(dropped.id)
        await credits.reserve("stale", 2, ttl=60)
        await credits.balance(FEB)
        async with db.unit_of_work() as session:
            await service.expire_stale(session, FEB)

    run(scenario)
    touching = [s for s in statements if "credit_ledger" in s]
    assert any(s.startswith("insert into credit_ledger") for s in touching)
    assert not [s for s in touching if s.startswith(("update", "delete"))]


def test_no_credits_code_updates_or_deletes_the_ledger():
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in {
                "update",
                "delete",
            }:
                target = ast.unparse(node.args[0]) if node.args else ""
                assert target != "CreditLedgerEntry", f"{path.name}:{node.lineno}"
            if isinstance(node, ast.Attribute) and node.attr == "delete":
                raise AssertionError(f"{path.name}:{node.lineno} deletes through the session")


def test_every_repository_query_takes_the_tenant_first():
    """The tenant, the tenants, or what is asked of each tenant (`by_tenant`) comes first."""
    sweeps = {"expire_held", "due_bucket_tenants"}  # the reconciler's, across tenants by design
    for name, function in inspect.getmembers(repository, inspect.iscoroutinefunction):
        if function.__module__ != repository.__name__ or name in sweeps:
            continue
        session, tenants = list(inspect.signature(function).parameters)[:2]
        assert session == "session" and tenants in ("tenant_id", "tenant_ids", "by_tenant"), name
