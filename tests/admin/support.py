"""Helpers for the Admin tests: the operator (a superadmin token, no organization) through the
test's transport, and tokens a security tester would forge."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import jwt
import pytest

from contentplatform.auth import devkeys
from contentplatform.config import Settings
from tests.conftest import Caller, Token

# A tenant id nobody has.
NOBODY = "00000000-0000-4000-8000-000000000000"


class Operator:
    """A superadmin through the test's transport (`call`: REST or RPC)."""

    def __init__(self, call: Caller, token: Token) -> None:
        self.call = call
        self.subject = f"root_{uuid.uuid4().hex[:8]}"
        self.token = token(None, self.subject, superadmin=True)

    def request(self, operation: str, data: dict[str, Any] | None = None) -> httpx.Response:
        return self.call(operation, data, token=self.token)

    def ok(self, operation: str, data: dict[str, Any] | None = None) -> Any:
        response = self.request(operation, data)
        assert response.status_code == 200, (operation, response.text)
        return response.json()


@pytest.fixture
def operator(call: Caller, token: Token) -> Operator:
    return Operator(call, token)


def forged(settings: Settings, **claims: Any) -> str:
    """A token signed with the development key (so its signature holds) carrying `claims`
    over a plain member's: what a tester tries to slip a superadmin claim through with."""
    key = devkeys.load_or_create_key(settings.data_dir)
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": devkeys.DEV_ISSUER,
        "aud": devkeys.DEV_AUDIENCE,
        "sub": f"user_{uuid.uuid4().hex[:8]}",
        "iat": now,
        "nbf": now,
        "exp": now + 600,
        "jti": str(uuid.uuid4()),
        **claims,
    }
    kid = devkeys.public_jwk(key)["kid"]
    return jwt.encode(body, key, algorithm=devkeys.DEV_ALGORITHM, headers={"kid": kid})
