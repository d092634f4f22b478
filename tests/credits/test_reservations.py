"""Holds: reserve, commit, release, extend, expire; idempotency keys; errors; tenancy."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from contentplatform.credits import service
from contentplatform.credits.durable import expire_stale_holds
from contentplatform.credits.models import CreditReservation, EntryType
from contentplatform.credits.schemas import Reservation
from contentplatform.kit.db import Database, utcnow
from contentplatform.kit.errors import BadRequest, Conflict, NotFound, PaymentRequired
from tests.credits.support import GRANT, JAN, Credits


def test_a_hold_then_a_commit_of_the_actual_amount(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("ingest:1", 4)
        assert (held.status, held.amount, held.committed_amount) == ("held", 4, None)
        assert held.expires_at == JAN + timedelta(seconds=600)
        balance = await credits.balance()
        assert (balance.reserved, balance.period.used, balance.available) == (4, 0, GRANT - 4)
        assert await credits.entries(EntryType.debit) == []  # a hold writes no ledger row

        committed = await credits.commit(held.id, 3)
        assert (committed.status, committed.committed_amount) == ("committed", 3)
        balance = await credits.balance()
        assert (balance.reserved, balance.period.used, balance.available) == (0, 3, GRANT - 3)
        [debit] = [e for e in await credits.ledger() if e.entry_type == EntryType.debit]
        assert (debit.amount, debit.kind, debit.reservation_id) == (-3, "documents.ingest", held.id)

    run(scenario)


def test_commit_is_idempotent(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        assert (await credits.commit(held.id)).committed_amount == 4  # default: all of it
        assert (await credits.commit(held.id)).committed_amount == 4
        assert (await credits.commit(held.id, 4)).status == "committed"
        with pytest.raises(Conflict, match="already committed at 4"):
            await credits.commit(held.id, 2)
        assert await credits.entries(EntryType.debit) == [(-4, None)]
        assert (await credits.balance()).available == GRANT - 4

    run(scenario)


def test_commit_takes_zero_up_to_the_amount_held(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        for wrong in (-1, 5):
            with pytest.raises(BadRequest):
                await credits.commit(held.id, wrong)
        assert (await credits.commit(held.id, 0)).committed_amount == 0
        assert (await credits.balance()).available == GRANT

    run(scenario)


def test_release_gives_the_hold_back(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        assert (await credits.release(held.id)).status == "released"
        assert (await credits.release(held.id)).status == "released"  # a no-op
        assert (await credits.balance()).available == GRANT
        with pytest.raises(Conflict, match="released"):
            await credits.commit(held.id)
        with pytest.raises(Conflict, match="released"):
            await credits.extend(held.id, 600)
        assert await credits.entries(EntryType.debit) == []

    run(scenario)


def test_a_committed_hold_cannot_be_released(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4)
        await credits.commit(held.id)
        with pytest.raises(Conflict, match="committed"):
            await credits.release(held.id)
        assert (await credits.get(held.id)).status == "committed"

    run(scenario)


def test_a_hold_past_its_expiry_no_longer_counts(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4, ttl=60)
        later = JAN + timedelta(seconds=61)
        assert (await credits.balance(later)).available == GRANT
        assert (await credits.get(held.id, later)).status == "expired"
        with pytest.raises(Conflict, match="expired"):
            await credits.commit(held.id, now=later)
        with pytest.raises(Conflict, match="expired"):
            await credits.extend(held.id, 600, now=later)
        assert (await credits.release(held.id, later)).status == "expired"  # a no-op

        # The sweep records it; nothing about the balance changes.
        async with db.unit_of_work() as session:
            assert await service.expire_stale(session, later) >= 1
            row = await session.get(CreditReservation, held.id)
            assert row is not None and row.status == "expired"
        assert (await credits.get(held.id, JAN)).status == "expired"
        assert (await credits.balance(later)).available == GRANT

    run(scenario)


def test_the_sweep_leaves_open_and_settled_holds_alone(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        stale = await credits.reserve("stale", 1, ttl=60)
        open_ = await credits.reserve("open", 1, ttl=3600)
        committed = await credits.reserve("committed", 1, ttl=60)
        await credits.commit(committed.id)
        async with db.unit_of_work() as session:
            await service.expire_stale(session, JAN + timedelta(seconds=120))
        now = JAN + timedelta(seconds=120)
        assert (await credits.get(stale.id, now)).status == "expired"
        assert (await credits.get(open_.id, now)).status == "held"
        assert (await credits.get(committed.id, now)).status == "committed"

    run(scenario)


def test_the_reconciler_sweep_runs_in_a_transaction_of_its_own(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        an_hour_ago = utcnow() - timedelta(hours=1)
        held = await credits.reserve("k", 1, ttl=60, now=an_hour_ago)
        assert await expire_stale_holds(db) >= 1
        async with db.unit_of_work() as session:
            row = await session.get(CreditReservation, held.id)
            assert row is not None and row.status == "expired"

    run(scenario)


def test_extend_keeps_a_running_hold(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        held = await credits.reserve("k", 4, ttl=60)
        extended = await credits.extend(held.id, 600, now=JAN + timedelta(seconds=30))
        assert extended.expires_at == JAN + timedelta(seconds=630)
        # Never shortened by a smaller extension.
        again = await credits.extend(held.id, 60, now=JAN + timedelta(seconds=40))
        assert again.expires_at == JAN + timedelta(seconds=630)
        later = JAN + timedelta(seconds=300)
        assert (await credits.balance(later)).reserved == 4
        assert (await credits.commit(held.id, now=later)).status == "committed"
        with pytest.raises(Conflict, match="committed"):
            await credits.extend(held.id, 600, now=later)

    run(scenario)


def test_the_same_key_returns_the_same_reservation(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        first = await credits.reserve("chat:1", 4, kind="chat.message")
        again = await credits.reserve("chat:1", 4, kind="chat.message")
        assert again.id == first.id
        assert (await credits.balance()).reserved == 4
        assert (await credits.by_key("chat:1", "chat.message")) == first
        assert await credits.by_key("chat:1") is None  # keys are per kind
        other_kind = await credits.reserve("chat:1", 4, kind="generation.blog")
        assert other_kind.id != first.id

        # A replay never reserves again, whatever became of the hold, and never asks for money.
        await credits.commit(first.id)
        replay = await credits.reserve("chat:1", 4, kind="chat.message")
        assert (replay.id, replay.status) == (first.id, "committed")
        with pytest.raises(Conflict, match="same amount"):
            await credits.reserve("chat:1", 5, kind="chat.message")

    run(scenario)


def test_not_enough_credits_is_payment_required(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=3)
        await credits.reserve("a", 2)
        with pytest.raises(PaymentRequired) as raised:
            await credits.reserve("b", 3)
        assert raised.value.http_status == 402
        assert raised.value.detail == "This needs 3 credits; 1 is available."
        with pytest.raises(PaymentRequired) as raised:
            await credits.reserve("b", 2)
        assert raised.value.detail == "This needs 2 credits; 1 is available."
        assert (await credits.reserve("b", 1)).status == "held"
        with pytest.raises(PaymentRequired) as raised:
            await credits.reserve("c", 1)
        assert raised.value.detail == "This needs 1 credit; 0 are available."
        assert await credits.by_key("c") is None

    run(scenario)


def test_holds_reserved_together_take_the_credits_in_order_and_refuse_only_what_is_left(run):
    """What the scheduler does for a tenant's due jobs: each hold that fits is held; one the
    credits left cannot cover is refused on its own, with the reason, and a later smaller one
    that fits is still held. A key already held is returned, not held twice."""

    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db, grant=10)
        before = await credits.reserve("job:0", 3, kind="generation.blog")
        outcomes = await credits.reserve_many(
            [("job:1", 4), ("job:0", 3), ("job:2", 4), ("job:3", 2), ("job:1", 4), ("job:4", 2)]
        )

        one, again, two, three, one_again, four = outcomes
        assert isinstance(one, Reservation) and isinstance(three, Reservation)
        assert isinstance(again, Reservation) and again.id == before.id
        assert isinstance(two, PaymentRequired)
        assert two.detail == "This needs 4 credits; 3 are available."
        assert (three.status, three.amount, three.idempotency_key) == ("held", 2, "job:3")
        assert one_again == one  # a key given twice is one hold
        assert isinstance(four, PaymentRequired)
        assert four.detail == "This needs 2 credits; 1 is available."
        assert (await credits.balance()).reserved == 3 + 4 + 2
        for key, hold in [("job:1", one), ("job:3", three)]:
            assert await credits.by_key(key, "generation.blog") == hold
        assert await credits.by_key("job:2", "generation.blog") is None

        # Replayed: the same holds come back and nothing more is held; another amount under a
        # held key is refused for that key only.
        replay = await credits.reserve_many([("job:1", 4), ("job:3", 5), ("job:5", 2)])
        assert replay[0] == one
        assert isinstance(replay[1], Conflict) and "same amount" in replay[1].detail
        assert isinstance(replay[2], PaymentRequired)
        assert (await credits.balance()).reserved == 3 + 4 + 2

    run(scenario)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "seo.magic"}, "Unknown credit kind"),
        ({"key": ""}, "idempotency key"),
        ({"key": "k" * 256}, "idempotency key"),
        ({"amount": 0}, "at least 1 credit"),
        ({"ttl": 0}, "seconds"),
        ({"ttl": 24 * 3600 + 1}, "seconds"),
    ],
)
def test_a_bad_reservation_request_is_refused(run, changes, message):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        args = {"key": "k", "amount": 1, "kind": "documents.ingest", "ttl": 60} | changes
        with pytest.raises(BadRequest, match=message):
            await credits.reserve(args.pop("key"), args.pop("amount"), **args)
        assert await credits.entries(EntryType.grant) == []  # refused before any write

    run(scenario)


def test_an_unknown_reservation_is_not_found(run):
    async def scenario(db: Database) -> None:
        credits = await Credits.for_new_tenant(db)
        missing = uuid.uuid4()
        for attempt in (
            credits.get(missing),
            credits.commit(missing),
            credits.release(missing),
            credits.extend(missing, 60),
        ):
            with pytest.raises(NotFound):
                await attempt

    run(scenario)


def test_another_tenant_never_sees_or_touches_the_reservations(run):
    async def scenario(db: Database) -> None:
        owner = await Credits.for_new_tenant(db)
        stranger = await Credits.for_new_tenant(db)
        held = await owner.reserve("shared-key", 4)

        for attempt in (
            stranger.get(held.id),
            stranger.commit(held.id),
            stranger.release(held.id),
            stranger.extend(held.id, 600),
        ):
            with pytest.raises(NotFound):
                await attempt
        assert await stranger.by_key("shared-key") is None

        # The same kind and key in the other tenant is a hold of its own.
        theirs = await stranger.reserve("shared-key", 4)
        assert theirs.id != held.id and (await stranger.get(theirs.id)).id == theirs.id
        assert (await owner.get(held.id)).status == "held"
        assert (await owner.balance()).reserved == 4
        assert (await stranger.balance()).reserved == 4
        assert all(e.tenant_id == owner.tenant_id for e in await owner.ledger())

    run(scenario)
