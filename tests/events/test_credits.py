"""`credits.low_balance` over REST and RPC: a debit that takes the balance down to 10 % of the
monthly grant is told once, the debits under the line tell nothing, and the one that reaches
zero is told again; another organization hears nothing of it."""

from __future__ import annotations

import uuid

from contentplatform.config import Settings
from contentplatform.credits import buckets as credit_buckets
from tests.events.support import Trail, by_user, payloads
from tests.support.orgs import org_fixture

trail = org_fixture(Trail)
other = org_fixture(Trail, second=True)


def spend(trail: Trail, amount: int) -> None:
    """Hold `amount` credits and commit all of them: one debit, as the admin."""
    held = trail.ok(
        "credits.reserve",
        {"kind": "chat.message", "idempotencyKey": uuid.uuid4().hex, "amount": amount},
    )
    trail.ok("credits.commit", {"id": held["id"], "amount": amount})


def test_the_balance_falling_to_ten_percent_and_to_zero_is_told_once_each(
    trail: Trail, other: Trail, settings: Settings
) -> None:
    balance = trail.ok("credits.getBalance", role="member")
    line = balance["low_balance_threshold"]
    assert 1 < line < balance["total"]

    spend(trail, balance["total"] - line - 1)  # one credit over the line: nothing yet
    assert trail.activity(action="credits.low_balance")["total"] == 0
    # As in a process that has not read the tenant's policy within the minute: the debit reads
    # the line from what is stored.
    credit_buckets._low_lines.pop(trail.tenant_id, None)
    spend(trail, 1)  # down to the line
    spend(trail, 1)  # under it: no second crossing
    rows = trail.activity(action="credits.low_balance")["data"]
    assert len(rows) == 1
    assert rows[0]["resource_type"] == "tenant"
    assert rows[0]["resource_id"] == str(trail.tenant_id)
    assert rows[0]["actor"] == by_user(trail, "admin")  # whose commit it was

    spend(trail, line - 1)  # to zero
    assert trail.ok("credits.getBalance")["total"] == 0
    assert [
        (told["threshold"], told["balance"])
        for told in payloads(settings, trail.tenant_id, "credits.low_balance")
    ] == [("10_percent", line), ("zero", 0)]
    assert other.activity(action="credits.low_balance")["total"] == 0
