"""endImpersonation on one service process is enforced by another at once (Redis pub/sub),
well inside the few seconds a process keeps an open session cached."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from contentplatform.auth import devkeys
from tests.admin_impersonation.support import REASON
from tests.support.processes import LOOPBACK, Services, Stack

CACHE_SECONDS = "3600"


def test_an_ended_session_is_refused_by_another_process_at_once(
    stack: Stack, services: Services
) -> None:
    if stack.redis_url is None:
        pytest.skip("across processes, invalidations travel through Redis")
    first = services.start(access_cache_seconds=CACHE_SECONDS, executor_id="first")
    second = services.start(access_cache_seconds=CACHE_SECONDS, executor_id="second")
    org = f"org_imp_{uuid.uuid4().hex[:8]}"
    admin = stack.token(org, f"admin-{org}", "admin")
    root = devkeys.mint_token(stack.data_dir, org=None, user="root-procs", superadmin=True)

    def get(url: str, token: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", "x-idp-org-id": org}
        return LOOPBACK.get(f"{url}/v1/features", headers=headers, timeout=30)

    who = LOOPBACK.get(
        f"{first.url}/v1/system/whoami",
        headers={"Authorization": f"Bearer {admin}", "x-idp-org-id": org},
    )
    assert who.status_code == 200, who.text
    started = LOOPBACK.post(
        f"{first.url}/api/admin/impersonations",
        json={"tenantId": who.json()["tenant_id"], "reason": REASON},
        headers={"Authorization": f"Bearer {root}"},
    )
    assert started.status_code == 200, started.text
    token, session_id = started.json()["token"], started.json()["id"]
    # Both processes hold the session open in their caches now.
    assert get(first.url, token).status_code == 200
    assert get(second.url, token).status_code == 200
    cached_at = time.monotonic()

    ended = LOOPBACK.post(
        f"{first.url}/api/admin/impersonations/{session_id}/end",
        headers={"Authorization": f"Bearer {root}"},
    )
    assert ended.status_code == 200, ended.text
    assert get(first.url, token).status_code == 401
    while (answer := get(second.url, token)).status_code != 401:
        assert answer.status_code == 200, answer.text
        # Its cache would have kept the session for seconds more: only the message ends it.
        assert time.monotonic() - cached_at < 2, second.tail()
        time.sleep(0.02)
    print(f"refused by the second process {time.monotonic() - cached_at:.3f}s after caching")
