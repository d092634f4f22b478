"""Waiting for durable work by its workflow, not by polling the API
(docs/contributors/ci.md, plan item 5).

A test that polled `getRun` every 10 ms sent the in-process service a request each time (the
auth check, the tenant, the query), on the GIL the work it waited for needed. DBOS's record of
the workflow is one indexed row: it is read every 20 ms, and the API is asked once the workflow
has ended, and every half second besides, for work that ends without its workflow ending (a run
the reconciler failed while its workflow hung, a run cancelled before its workflow began).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from dbos import DBOS

T = TypeVar("T")

# A workflow in one of these has not ended (DBOS's statuses).
OPEN = frozenset({"PENDING", "ENQUEUED", "DELAYED"})
# How often DBOS's record is read, and how often the API is asked while the workflow is open.
RECORD_EVERY = 0.02
API_EVERY = 0.5


def until_workflow_ends(
    workflow_id: str, finished: Callable[[], T | None], *, timeout: float, what: str
) -> T:
    """`finished()`'s answer once it is one (not None): asked when the workflow `workflow_id`
    has ended, and every `API_EVERY` seconds besides; bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    ask_at = time.monotonic() + API_EVERY
    while True:
        status = DBOS.get_workflow_status(workflow_id)
        now = time.monotonic()
        if (status is not None and status.status not in OPEN) or now >= ask_at:
            answer = finished()
            if answer is not None:
                return answer
            ask_at = now + API_EVERY
        assert now < deadline, f"{what}: not finished within {timeout} s ({status})"
        time.sleep(RECORD_EVERY)
