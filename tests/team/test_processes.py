"""A role change made on one service process is enforced by another at once (Redis pub/sub),
far within ACCESS_CACHE_SECONDS, which is an hour here."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from tests.support.clerk import SECRET_KEY, Clerk
from tests.support.processes import LOOPBACK, Services, Stack

CACHE_SECONDS = "3600"


def test_a_role_change_on_one_process_is_enforced_by_another_at_once(
    stack: Stack, services: Services, clerk: Clerk
):
    if stack.redis_url is None:
        pytest.skip("across processes, invalidations travel through Redis")
    settings = {
        "idp_api_url": clerk.url,
        "idp_secret_key": SECRET_KEY,
        "access_cache_seconds": CACHE_SECONDS,
    }
    first = services.start(**settings, executor_id="first")
    second = services.start(**settings, executor_id="second")
    org = f"org_procs_{uuid.uuid4().hex[:8]}"
    admin, editor = f"admin-{org}", f"editor-{org}"
    clerk.add_member(org, admin, "admin")
    clerk.add_member(org, editor, "admin")
    tokens = {user: stack.token(org, user, "admin") for user in (admin, editor)}

    def get(service_url: str, user: str, path: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {tokens[user]}", "x-idp-org-id": org}
        return LOOPBACK.get(f"{service_url}{path}", headers=headers, timeout=30)

    editor_id = get(first.url, editor, "/v1/system/whoami").json()["user"]["id"]
    get(first.url, admin, "/v1/system/whoami")
    # The second process has the editor cached as admin (their token says org:admin).
    assert get(second.url, editor, "/v1/team/invitations").status_code == 200

    changed = httpx.patch(
        f"{first.url}/v1/team/members/{editor_id}",
        json={"role": "editor"},
        headers={"Authorization": f"Bearer {tokens[admin]}", "x-idp-org-id": org},
        timeout=30,
    )
    assert changed.status_code == 200, changed.text
    started = time.monotonic()
    while get(second.url, editor, "/v1/team/invitations").status_code != 403:
        assert time.monotonic() - started < 5, second.tail()
        time.sleep(0.02)
    print(f"enforced by the second process after {time.monotonic() - started:.3f}s")
