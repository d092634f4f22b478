"""The `requestIds` a ticket cites, resolved for staff (admin.getSupportTicket `requests`) from the
failed requests the service logged (support/request_log.py), over REST and RPC: a failure of
the organization's member resolves into its operation, method, status and problem code (a 404,
a 400, a 403 for the role); a request that succeeded, another organization's failure and an id
never answered do not, nor does a 429, which is never logged; the customer's own read shows
none of it; the maintenance pass forgets rows past 30 days."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.support import durable, repository, request_log
from contentplatform.support.models import FailedRequest
from tests.conftest import Caller, Run
from tests.support.backends import Backends
from tests.support.orgs import Org
from tests.support.problems import problem
from tests.support.servers import AppServer, second_service
from tests.support_tickets.test_tickets import TICKET, open_ticket, staff_ok

NOT_FOUND = {
    "found": False,
    "operation": None,
    "method": None,
    "status": None,
    "code": None,
    "at": None,
}


def settle(server: AppServer) -> None:
    """Wait until the failed requests the service is writing (after their answers) are in."""
    assert server.loop is not None
    asyncio.run_coroutine_threadsafe(request_log.settled(), server.loop).result(10)


def cited(org: Org, *request_ids: str) -> list[dict[str, Any]]:
    """Open a ticket citing `request_ids` and read it as staff: its resolved `requests`."""
    ticket = open_ticket(org, requestIds=list(request_ids))
    seen = staff_ok(org, "admin.getSupportTicket", {"id": ticket["id"]})
    assert seen["request_ids"] == list(request_ids)
    requests: list[dict[str, Any]] = seen["requests"]
    assert [found["request_id"] for found in requests] == list(request_ids)
    return requests


def id_of(response: httpx.Response) -> str:
    return response.headers["x-request-id"]


def test_a_failed_request_cited_resolves_for_staff_and_nothing_else_does(
    tenant: Org, other_tenant: Org, server: AppServer
) -> None:
    missing = tenant.request("support.getTicket", {"id": str(uuid.uuid4())}, role="member")
    problem(missing, 404, "NOT_FOUND")
    invalid = tenant.request("support.createTicket", {**TICKET, "category": "rant"}, role="member")
    problem(invalid, 400, "BAD_REQUEST")
    refused = tenant.request("drafts.createDraft", {"title": "Spring"}, role="member")
    problem(refused, 403, "FORBIDDEN")
    succeeded = tenant.request("support.listTickets", {}, role="member")
    assert succeeded.status_code == 200
    theirs = other_tenant.request("support.getTicket", {"id": str(uuid.uuid4())})
    problem(theirs, 404, "NOT_FOUND")
    settle(server)

    ids = [id_of(r) for r in (missing, invalid, refused, succeeded, theirs)] + ["never-answered"]
    requests = cited(tenant, *ids)
    rest = tenant.call.transport == "rest"
    found = [{k: v for k, v in r.items() if k not in ("request_id", "at")} for r in requests[:3]]
    assert found == [
        {
            "found": True,
            "operation": "support.getTicket",
            "method": "GET" if rest else "POST",
            "status": 404,
            "code": "NOT_FOUND",
        },
        {
            "found": True,
            "operation": "support.createTicket",
            "method": "POST",
            "status": 400,
            "code": "BAD_REQUEST",
        },
        {
            "found": True,
            "operation": "drafts.createDraft",
            "method": "POST",
            "status": 403,
            "code": "FORBIDDEN",
        },
    ]
    for logged in requests[:3]:
        assert utcnow() - datetime.fromisoformat(logged["at"]) < timedelta(minutes=5)
    # Succeeded, another organization's, never answered: nothing to resolve.
    for unresolved in requests[3:]:
        assert {k: v for k, v in unresolved.items() if k != "request_id"} == NOT_FOUND

    # The customer's own read answers the ticket as given: nothing of the log.
    (ticket,) = tenant.ok("support.listTickets", {}, role="member")["data"]
    assert "requests" not in tenant.ok("support.getTicket", {"id": ticket["id"]}, role="member")

    # The other organization's failure is its own: it resolves on its tickets, ours never does.
    theirs_resolved, ours = cited(other_tenant, id_of(theirs), id_of(missing))
    assert theirs_resolved["found"] is True
    assert theirs_resolved["code"] == "NOT_FOUND"
    assert ours["found"] is False


def test_a_rate_limited_request_is_not_logged(
    tenant: Org,
    call: Caller,
    settings_with: Callable[..., Settings],
    backends: Backends,
    openapi_document: dict[str, Any],
) -> None:
    assert tenant.tenant_id  # the member exists before the limited service counts a request
    limited_settings = settings_with(
        rate_limit="3/day", redis_prefix=f"{backends.redis_prefix}cited-{uuid.uuid4().hex[:8]}:"
    )
    answers = []
    with second_service(limited_settings) as limited, limited.client() as http:
        caller = Caller(http, openapi_document, call.transport)
        for _ in range(4):
            answers.append(
                caller(
                    "support.getTicket",
                    {"id": str(uuid.uuid4())},
                    token=tenant.tokens["member"],
                    org=tenant.org,
                )
            )
        settle(limited)
    for answer in answers[:3]:
        problem(answer, 404, "NOT_FOUND")
    problem(answers[3], 429, "TOO_MANY_REQUESTS")

    first, flooded = cited(tenant, id_of(answers[0]), id_of(answers[3]))
    assert (first["found"], first["status"], first["code"]) == (True, 404, "NOT_FOUND")
    assert {k: v for k, v in flooded.items() if k != "request_id"} == NOT_FOUND


def test_failed_requests_are_forgotten_after_30_days(tenant: Org, run: Run) -> None:
    tenant_id = tenant.tenant_id
    old, recent = f"old-{uuid.uuid4().hex}", f"recent-{uuid.uuid4().hex}"

    async def log_two(db: Database) -> None:
        async with db.unit_of_work() as session:
            await repository.add_failed_requests(
                session,
                tenant_id,
                [
                    {
                        "request_id": request_id,
                        "operation": "drafts.publish",
                        "method": "POST",
                        "status": 409,
                        "code": "CONFLICT",
                        "created_at": utcnow() - timedelta(days=days),
                    }
                    for request_id, days in ((old, 31), (recent, 29))
                ],
            )

    run(log_two)
    # Past 30 days a row resolves to nothing, swept or not.
    old_one, recent_one = cited(tenant, old, recent)
    assert old_one["found"] is False
    assert (recent_one["found"], recent_one["operation"]) == (True, "drafts.publish")

    # What each reconcile pass runs: the service's own pass may have swept first, so what is
    # checked is what is left, not how many this sweep deleted.
    run(durable.forget_old_failed_requests)

    async def left(db: Database) -> set[str]:
        async with db.unit_of_work() as session:
            rows = await session.scalars(
                select(FailedRequest.request_id).where(FailedRequest.tenant_id == tenant_id)
            )
            return set(rows)

    assert run(left) == {recent}
