"""What a security tester would try with impersonation, each refused: a read-only token on
every operation that is not declared GET (403, REST and RPC), any token of a session on
billing, credits, team, API keys, webhook secrets and admin.* (403, read-write too), forged
actor claims (401), tokens of ended, expired or foreign sessions (401)."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
import jwt
import pytest

from contentplatform.auth import devkeys, impersonation_tokens
from contentplatform.config import Settings
from contentplatform.kit.db import utcnow
from contentplatform.tenants.guard import impersonation_refusal
from tests.admin_impersonation.support import Operator
from tests.support.idp import IdentityProvider
from tests.support.orgs import Org
from tests.support.problems import problem

NEVER_READS = (
    "billing.getSubscription",
    "billing.getQuota",
    "credits.getBalance",
    "team.listMembers",
    "team.listInvitations",
    "settings.listApiKeys",
)


def operations(document: dict[str, Any], *, declared: str | None = None):
    """(operationId, method, path) of every operation that takes a token."""
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if operation.get("security") == [] or not operation.get("security"):
                continue
            if declared is None or method.upper() == declared:
                yield operation["operationId"], method.upper(), path


def test_a_read_only_token_is_refused_every_operation_not_declared_get(
    tenant: Org, client: httpx.Client, openapi_document: dict[str, Any]
) -> None:
    operator = Operator(tenant)
    started = operator.started()
    headers = {"Authorization": f"Bearer {started['token']}", "x-idp-org-id": tenant.org}
    checked = 0
    for operation_id, method, path in operations(openapi_document):
        if method == "GET":
            continue
        concrete = path
        while "{" in concrete:
            start, end = concrete.index("{"), concrete.index("}")
            concrete = concrete[:start] + str(uuid.uuid4()) + concrete[end + 1 :]
        rest = client.request(method, concrete, headers=headers, json={})
        rpc = client.post(f"/api/rpc/{operation_id}", headers=headers, json={})
        for answer in (rest, rpc):
            assert answer.status_code == 403, (operation_id, answer.status_code, answer.text)
        checked += 1
    assert checked > 50, checked
    assert operator.end(started["id"]).status_code == 200


@pytest.mark.parametrize("mode", ["read_only", "read_write"])
def test_billing_credits_team_and_keys_are_never_read(tenant: Org, mode: str) -> None:
    operator = Operator(tenant)
    body: dict[str, Any] = {}
    if mode == "read_write":
        body = {"mode": mode, "userId": operator.member_id("admin"), "ticketId": operator.ticket()}
    started = operator.started(**body)
    for operation_id in NEVER_READS:
        own = tenant.request(operation_id, role="admin")
        assert own.status_code == 200, (operation_id, own.text)  # the admin reads it
        refused = tenant.call(operation_id, {}, token=started["token"], org=tenant.org)
        found = problem(refused, 403, "FORBIDDEN")
        assert "never" in found["detail"], found
    assert operator.end(started["id"]).status_code == 200


def test_the_rules_by_operation() -> None:
    never = ["billing.getQuota", "credits.getBalance", "team.updateMemberRole"]
    never += ["admin.listTenants", "settings.createApiKey", "settings.revokeApiKey"]
    never += ["webhooks.rotateEndpointSecret", "webhooks.createEndpoint"]
    for operation_id in never:
        for mode in ("read_only", "read_write"):
            assert impersonation_refusal(operation_id, "GET", mode), operation_id  # type: ignore[arg-type]
    assert impersonation_refusal("drafts.update", "PATCH", "read_only")
    assert impersonation_refusal("drafts.update", "PATCH", "read_write") is None
    assert impersonation_refusal("drafts.list", "GET", "read_only") is None
    assert impersonation_refusal("webhooks.listEndpoints", "GET", "read_only") is None
    assert impersonation_refusal(None, None, "read_write")


def test_forged_actor_claims_are_refused(
    tenant: Org, idp: IdentityProvider, settings: Settings
) -> None:
    tenant.whoami("admin")
    admin = tenant.users["admin"]
    # The identity provider's own actor token (Clerk's impersonation): outside our guardrails.
    provider = idp.token(admin, tenant.org, "org:admin", act={"sub": "user_attacker"})
    found = problem(
        tenant.call("features.list", {}, token=provider, org=tenant.org), 401, "UNAUTHORIZED"
    )
    assert "admin.startImpersonation" in found["detail"]
    # The same in a development token.
    key = devkeys.load_or_create_key(settings.data_dir)
    now = int(time.time())
    claims = {
        "iss": devkeys.DEV_ISSUER,
        "aud": devkeys.DEV_AUDIENCE,
        "sub": admin,
        "iat": now,
        "exp": now + 600,
        "org_id": tenant.org,
        "org_role": "org:admin",
        "act": {"sub": "user_attacker"},
    }
    dev = jwt.encode(
        claims, key, algorithm="EdDSA", headers={"kid": devkeys.public_jwk(key)["kid"]}
    )
    problem(tenant.call("features.list", {}, token=dev, org=tenant.org), 401, "UNAUTHORIZED")
    # Our issuer, signed by the provider's key or by a key we never had.
    ours = {
        "iss": impersonation_tokens.ISSUER,
        "aud": impersonation_tokens.AUDIENCE,
        "sub": admin,
        "act": {"sub": "root"},
        "org_id": tenant.org,
        "jti": str(uuid.uuid4()),
        "iat": now,
        "exp": now + 600,
    }
    signing = idp.key("RS256")
    by_provider = jwt.encode(ours, signing.private, algorithm="RS256", headers={"kid": signing.kid})
    problem(
        tenant.call("features.list", {}, token=by_provider, org=tenant.org), 401, "UNAUTHORIZED"
    )
    stranger = impersonation_tokens.ImpersonationTokens([b"x" * 32])
    forged = stranger.mint(
        session_id=uuid.uuid4(),
        subject=admin,
        actor="root",
        org_id=tenant.org,
        issued_at=utcnow(),
        expires_at=utcnow() + timedelta(minutes=10),
    )
    problem(tenant.call("features.list", {}, token=forged, org=tenant.org), 401, "UNAUTHORIZED")


def test_a_genuine_token_of_no_session_or_with_its_claims_changed_is_refused(
    tenant: Org, settings: Settings
) -> None:
    tenant.whoami("admin")
    tokens = impersonation_tokens.ImpersonationTokens.from_settings(settings)
    now = utcnow()
    nobody = tokens.mint(
        session_id=uuid.uuid4(),
        subject=tenant.users["admin"],
        actor="root",
        org_id=tenant.org,
        issued_at=now,
        expires_at=now + timedelta(minutes=5),
    )
    problem(tenant.call("features.list", {}, token=nobody, org=tenant.org), 401, "UNAUTHORIZED")
    # A real session's id in a token naming another superadmin (or org): refused.
    operator = Operator(tenant)
    started = operator.started()
    other_actor = tokens.mint(
        session_id=uuid.UUID(started["id"]),
        subject=tenant.users["admin"],
        actor="someone-else",
        org_id=tenant.org,
        issued_at=now,
        expires_at=now + timedelta(minutes=5),
    )
    problem(
        tenant.call("features.list", {}, token=other_actor, org=tenant.org), 401, "UNAUTHORIZED"
    )
    # Past its own `exp`: refused whatever the session says.
    expired = tokens.mint(
        session_id=uuid.UUID(started["id"]),
        subject=tenant.users["admin"],
        actor=operator.subject,
        org_id=tenant.org,
        issued_at=now - timedelta(minutes=61),
        expires_at=now - timedelta(minutes=1),
    )
    found = problem(
        tenant.call("features.list", {}, token=expired, org=tenant.org), 401, "UNAUTHORIZED"
    )
    assert "expired" in found["detail"]
    with pytest.raises(ValueError):
        tokens.mint(
            session_id=uuid.uuid4(),
            subject="x",
            actor="y",
            org_id=tenant.org,
            issued_at=now,
            expires_at=now + timedelta(minutes=61),
        )
    assert operator.end(started["id"]).status_code == 200
