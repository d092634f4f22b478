"""Who may call the Admin operations: a superadmin token only. The cases a security tester
would try, each named: no token (401); a tenant's member, editor and admin (403); an API key
(403); a token whose `superadmin` claim is anything but true (the string "true", 1, false:
403); an expired superadmin token (401); an identity provider's actor token (`act` claim) and
a superadmin claim riding on an organization's token as its admin (403). Over REST and RPC.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.admin.support import NOBODY, Operator, forged
from tests.support.orgs import Org
from tests.support.problems import problem

OPERATIONS: list[tuple[str, dict[str, Any]]] = [
    ("admin.listTenants", {}),
    ("admin.getTenant", {"id": NOBODY}),
    ("admin.updateTenant", {"id": NOBODY, "note": "A note long enough"}),
    ("admin.setTenantStatus", {"id": NOBODY, "status": "suspended", "reason": "Abuse reported"}),
    (
        "admin.grantCredits",
        {"id": NOBODY, "amount": 5, "reason": "Goodwill", "idempotencyKey": "k-1"},
    ),
    ("admin.usageOverview", {"startDate": "2026-01-01T00:00:00Z"}),
    ("admin.listFeatureFlags", {}),
    ("admin.updateFeatureFlag", {"key": "chat", "rolloutPercent": 10}),
    ("admin.listWebhookEvents", {}),
    ("admin.replayWebhookEvent", {"id": NOBODY}),
]
IDS = [name for name, _ in OPERATIONS]


@pytest.mark.parametrize(("operation", "data"), OPERATIONS, ids=IDS)
def test_no_token_is_401(call, operation: str, data: dict[str, Any]) -> None:
    problem(call(operation, data), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(("operation", "data"), OPERATIONS, ids=IDS)
@pytest.mark.parametrize("role", ["member", "editor", "admin"])
def test_a_tenants_member_editor_or_admin_is_403(
    tenant: Org, operation: str, data: dict[str, Any], role: str
) -> None:
    problem(tenant.request(operation, data, role=role), 403, "FORBIDDEN")
    # Without the organization header too.
    problem(tenant.call(operation, data, token=tenant.tokens[role]), 403, "FORBIDDEN")


@pytest.mark.parametrize(("operation", "data"), OPERATIONS, ids=IDS)
def test_an_api_key_is_403(tenant: Org, operation: str, data: dict[str, Any]) -> None:
    secret = tenant.ok("settings.createApiKey", {"name": "Ops key", "role": "editor"})["secret"]
    problem(tenant.call(operation, data, token=secret), 403, "FORBIDDEN")


@pytest.mark.parametrize("claim", ["true", 1, False, None], ids=["string", "one", "false", "null"])
def test_a_superadmin_claim_that_is_not_true_is_403(call, settings, claim: object) -> None:
    for operation, data in OPERATIONS:
        problem(call(operation, data, token=forged(settings, superadmin=claim)), 403, "FORBIDDEN")


def test_an_actor_token_of_the_identity_provider_is_refused(call, settings) -> None:
    """A token naming a superadmin as its actor (`act.sub`) is not the superadmin."""
    token = forged(settings, superadmin=True, act={"sub": "user_root"})
    for operation, data in OPERATIONS:
        response = call(operation, data, token=token)
        assert response.status_code in (401, 403), (operation, response.text)


def test_a_superadmin_claim_on_an_organizations_admin_token_is_403(call, settings) -> None:
    """A tenant admin's token that also claims `superadmin` but names an organization is a
    tenant's token: the admin paths refuse it."""
    token = forged(settings, superadmin="yes", org_id="org_x", org_role="org:admin")
    for operation, data in OPERATIONS:
        problem(call(operation, data, token=token, org="org_x"), 403, "FORBIDDEN")


def test_an_expired_superadmin_token_is_401(call, settings) -> None:
    now = int(time.time())
    token = forged(settings, superadmin=True, iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    problem(call("admin.listTenants", {}, token=token), 401, "UNAUTHORIZED")


def test_a_superadmin_is_admitted(operator: Operator) -> None:
    assert operator.ok("admin.listFeatureFlags")["total"] >= 2


def test_a_superadmin_token_on_a_tenants_path_is_refused(operator: Operator, tenant: Org) -> None:
    """A superadmin acts in a tenant only through an impersonation session, never with their
    own token (naming the organization or not)."""
    response = operator.call("drafts.list", {}, token=operator.token, org=tenant.org)
    assert response.status_code in (401, 403), response.text
    response = operator.call("drafts.list", {}, token=operator.token)
    assert response.status_code in (400, 401, 403), response.text
