"""Requests racing on one tenant's credits, each in a session (and transaction) of its own."""

from __future__ import annotations

import asyncio

from contentplatform.credits.models import EntryType
from contentplatform.kit.db import Database
from contentplatform.kit.errors import PaymentRequired
from tests.credits.support import GRANT, Credits


def test_racing_reserves_under_one_key_hold_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        holds = await asyncio.gather(*(credits.reserve("ingest:1", 4) for _ in range(4)))
        assert len({hold.id for hold in holds}) == 1
        balance = await credits.balance()
        assert (balance.reserved, balance.available) == (4, GRANT - 4)

    run(scenario)


def test_racing_reserves_under_different_keys_never_overdraw(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=5)
        # Mid-month: the grant is there already, so it serializes nothing.
        await credits.balance()
        outcomes = await asyncio.gather(
            credits.reserve("a", 3), credits.reserve("b", 3), return_exceptions=True
        )
        refused = [o for o in outcomes if isinstance(o, PaymentRequired)]
        assert len(refused) == 1, outcomes
        assert refused[0].detail == "This needs 3 credits; 2 are available."
        assert (await credits.balance()).available == 2

    run(scenario)


def test_racing_commits_debit_once(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        results = await asyncio.gather(*(credits.commit(held.id) for _ in range(3)))
        assert {r.status for r in results} == {"committed"}
        assert await credits.entries(EntryType.debit) == [(-4, None)]
        assert (await credits.balance()).available == GRANT - 4

    run(scenario)


def test_a_commit_racing_a_release_settles_one_way(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        outcomes = await asyncio.gather(
            credits.commit(held.id), credits.release(held.id), return_exceptions=True
        )
        final = await credits.get(held.id)
        debits = await credits.entries(EntryType.debit)
        if final.status == "committed":
            assert debits == [(-4, None)]
            assert (await credits.balance()).available == GRANT - 4
        else:
            assert final.status == "released" and debits == []
            assert (await credits.balance()).available == GRANT
        assert sum(isinstance(o, Exception) for o in outcomes) == 1  # the loser's Conflict

    run(scenario)
