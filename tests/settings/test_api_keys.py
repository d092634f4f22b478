"""settings.listApiKeys, createApiKey and revokeApiKey over REST and RPC, and API keys as a
credential: `Authorization: Bearer cpk_...` alone, the tenant fixed by the key, a role no higher
than editor, never team or settings, refused at once when revoked, expired or turned off, stored
only as a hash."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.kit.db import Database, utcnow
from contentplatform.settings.models import ApiKey
from tests.support.orgs import Org

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org


def create(org: Org, **fields: Any) -> dict[str, Any]:
    return org.ok("settings.createApiKey", {"name": "Nightly export", **fields})


def with_key(
    org: Org,
    operation: str,
    secret: str,
    data: dict[str, Any] | None = None,
    *,
    naming: str | None = None,
):
    """The operation called with the key alone (with an organization header: `naming`)."""
    return org.call(operation, data, token=secret, org=naming)


@pytest.mark.own_org
def test_a_key_lists_drafts_alone_and_is_shown_once_and_stored_as_a_hash(tenant: Org, run):
    tenant.ok("drafts.createDraft", {"title": "Spring planting"}, role="editor")
    made = create(tenant, role="member")
    secret = made["secret"]
    assert secret.startswith("cpk_live_") and len(secret) > 40
    assert made["prefix"] == secret[:13] and made["role"] == "member"
    assert made["created_by"] == tenant.users["admin"]
    assert made["revoked_at"] is None and made["expires_at"] is None

    drafts = with_key(tenant, "drafts.list", secret)
    assert drafts.status_code == 200, drafts.text
    assert [d["title"] for d in drafts.json()["data"]] == ["Spring planting"]
    me = tenant.client.get("/v1/system/whoami", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200, me.text
    assert me.json()["auth"] == "api_key" and me.json()["role"] == "member"
    assert me.json()["organization"]["idp_org_id"] == tenant.org
    assert me.json()["user"]["name"] == "Nightly export"

    listed = tenant.ok("settings.listApiKeys")
    assert listed["total"] == 1
    (shown,) = listed["data"]
    assert "secret" not in shown and shown["id"] == made["id"]
    assert shown["last_used_at"] is not None

    async def stored(db: Database) -> list[str]:
        async with db.unit_of_work() as session:
            return list((await session.execute(select(ApiKey.secret_hash))).scalars())

    hashes = run(stored)
    assert hashlib.sha256(secret.encode()).hexdigest() in hashes
    assert secret not in hashes


def test_a_key_acts_no_higher_than_its_role(tenant: Org):
    member = create(tenant, role="member")["secret"]
    editor = create(tenant, name="CMS sync", role="editor")["secret"]

    refused = with_key(tenant, "drafts.createDraft", member, {"title": "From a script"})
    assert refused.status_code == 403
    assert "this API key acts as member" in refused.json()["detail"]
    made = with_key(tenant, "drafts.createDraft", editor, {"title": "From a script"})
    assert made.status_code == 200, made.text
    versions = tenant.ok("drafts.listVersions", {"id": made.json()["id"]}, role="member")
    assert versions["data"][0]["author_id"].startswith("apikey_")  # the key, not its maker
    too_high = tenant.request("settings.createApiKey", {"name": "root", "role": "admin"})
    assert too_high.status_code == 400


@pytest.mark.parametrize(
    ("operation", "data"),
    [
        ("team.listMembers", {}),
        ("settings.get", {}),
        ("settings.listApiKeys", {}),
        ("settings.createApiKey", {"name": "another"}),
    ],
)
def test_a_key_never_reaches_team_or_settings(tenant: Org, operation: str, data: dict):
    editor = create(tenant, role="editor")["secret"]
    refused = with_key(tenant, operation, editor, data)
    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "FORBIDDEN"
    assert "API keys cannot use this operation" in refused.json()["detail"]


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_an_admin_manages_keys(tenant: Org, role: str):
    key = create(tenant)
    for operation, data in (
        ("settings.listApiKeys", {}),
        ("settings.createApiKey", {"name": "mine"}),
        ("settings.revokeApiKey", {"id": key["id"]}),
    ):
        assert tenant.request(operation, data, role=role).status_code == 403, operation


@pytest.mark.own_org
def test_a_revoked_key_is_refused_at_once_and_revoking_again_changes_nothing(tenant: Org):
    key = create(tenant)
    assert with_key(tenant, "drafts.list", key["secret"]).status_code == 200  # now cached

    assert tenant.ok("settings.revokeApiKey", {"id": key["id"]}) == {"success": True}

    refused = with_key(tenant, "drafts.list", key["secret"])
    assert refused.status_code == 401
    assert refused.json()["detail"] == "This API key has been revoked."
    (shown,) = tenant.ok("settings.listApiKeys")["data"]
    assert shown["revoked_at"] is not None
    assert tenant.ok("settings.revokeApiKey", {"id": key["id"]}) == {"success": True}
    missing = "00000000-0000-4000-8000-000000000000"
    assert tenant.request("settings.revokeApiKey", {"id": missing}).status_code == 404


def test_unknown_and_malformed_keys_are_401(tenant: Org):
    for secret in ("cpk_live_" + "x" * 43, "cpk_", "cpk_live_" + "y" * 200):
        refused = with_key(tenant, "drafts.list", secret)
        assert refused.status_code == 401, secret
        assert refused.headers["content-type"].startswith("application/problem+json")


def test_an_expired_key_is_401(tenant: Org, run):
    key = create(tenant, expiresInDays=1)
    assert key["expires_at"] is not None

    async def expire(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(ApiKey)
                .where(ApiKey.id == uuid.UUID(key["id"]))
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

    run(expire)
    refused = with_key(tenant, "drafts.list", key["secret"])
    assert refused.status_code == 401
    assert "expired" in refused.json()["detail"]


@pytest.mark.own_org
def test_keys_turned_off_are_refused_and_none_is_made_until_turned_on(tenant: Org):
    key = create(tenant)
    assert with_key(tenant, "drafts.list", key["secret"]).status_code == 200

    tenant.ok("settings.update", {"security": {"apiKeysEnabled": False}})
    refused = with_key(tenant, "drafts.list", key["secret"])
    assert refused.status_code == 403
    assert "apiKeysEnabled" in refused.json()["detail"]
    assert tenant.request("settings.createApiKey", {"name": "x"}).status_code == 403

    tenant.ok("settings.update", {"security": {"apiKeysEnabled": True}})
    assert with_key(tenant, "drafts.list", key["secret"]).status_code == 200


@pytest.mark.parametrize(
    "bad",
    [
        {"name": ""},
        {"name": "x" * 101},
        {"name": "nul\x00byte"},
        {"name": "ok", "role": "owner"},
        {"name": "ok", "expiresInDays": 0},
        {"name": "ok", "expiresInDays": 366},
        {"name": "ok", "expiresInDays": 2**70},
    ],
)
def test_create_bounds_are_400(tenant: Org, bad: dict):
    assert tenant.request("settings.createApiKey", bad).status_code == 400


def test_a_name_is_plain_text(tenant: Org):
    assert create(tenant, name="<b>CI</b> bot")["name"] == "CI bot"


@pytest.mark.own_org
def test_another_organization_neither_sees_nor_revokes_a_key_and_a_key_stays_in_its_own(
    tenant: Org, other_tenant: Org
):
    key = create(tenant)
    assert other_tenant.ok("settings.listApiKeys") == {"data": [], "total": 0}
    assert other_tenant.request("settings.revokeApiKey", {"id": key["id"]}).status_code == 404
    assert with_key(tenant, "drafts.list", key["secret"]).status_code == 200

    # The key names its organization: another one named beside it is refused, never served.
    other_tenant.ok("drafts.createDraft", {"title": "Theirs"}, role="editor")
    crossed = with_key(tenant, "drafts.list", key["secret"], naming=other_tenant.org)
    assert crossed.status_code == 403
    same = with_key(tenant, "drafts.list", key["secret"], naming=tenant.org)
    assert same.status_code == 200 and same.json()["total"] == 0
