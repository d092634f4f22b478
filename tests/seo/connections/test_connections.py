"""seo.listConnections, getConnection, connect, completeConnect, updateConnection, disconnect and
testConnection over REST and RPC, against the Google stand-in: the OAuth flow with PKCE, the
state's rules, tokens kept secret, a revoked grant turned needs_reauth with the admins told."""

from __future__ import annotations

import base64
import hashlib
import logging
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.connections import access as console_access
from contentplatform.seo.connections import service
from contentplatform.seo.connections.errors import SearchConsoleNotConnected
from contentplatform.seo.models import (
    SeoOAuthState,
    SeoSiteDay,
    SeoSitemap,
    SeoSyncRun,
    SeoUrlInspection,
)
from tests.conftest import SEO_REDIRECT_URI, Run
from tests.notifications.support import settled
from tests.seo.connections.support import (
    GSC,
    Seo,
    connection_row,
    count_rows,
    seed_data,
    set_site_url,
)
from tests.support.database import run_on
from tests.support.google import CLIENT_SECRET, READ_ONLY_SCOPE, SCOPE, GoogleStandIn, query_of
from tests.support.orgs import org_fixture
from tests.support.problems import problem

seo = org_fixture(Seo)
other = org_fixture(Seo, second=True)

PROVIDERS = [
    "google_search_console",
    "dataforseo",
    "pagespeed_insights",
    "openai",
    "perplexity",
    "gemini",
    "anthropic",
    "offline",
]


def issued_secrets(google: GoogleStandIn) -> list[str]:
    """Every token the stand-in has issued, and the client secret."""
    with google.lock:
        tokens = [*google._grants, *google._access]
    return [*tokens, CLIENT_SECRET]


def assert_no_secret(google: GoogleStandIn, *texts: str) -> None:
    found = issued_secrets(google)
    for text in texts:
        for secret in found:
            assert secret not in text


# --- reading ----------------------------------------------------------------------------------


def test_every_provider_is_listed_not_connected_at_first(seo: Seo) -> None:
    listed = seo.ok("seo.listConnections", role="member")
    assert [c["provider"] for c in listed["data"]] == PROVIDERS
    assert listed["total"] == 8
    assert {c["status"] for c in listed["data"]} == {"not_connected"}
    google = next(c for c in listed["data"] if c["provider"] == GSC)
    assert google["capabilities"] == ["search_console"]
    one = seo.ok("seo.getConnection", {"provider": GSC}, role="member")
    assert one["status"] == "not_connected"
    assert one["available_properties"] == [] and one["property"] is None
    assert one["recent_runs"] == []


def test_an_unknown_provider_is_refused(seo: Seo) -> None:
    problem(seo.request("seo.getConnection", {"provider": "bing"}), 400, "BAD_REQUEST")


# --- the OAuth flow ---------------------------------------------------------------------------


def test_connect_answers_googles_consent_url_with_pkce_and_offline_access(
    seo: Seo, google: GoogleStandIn
) -> None:
    body = seo.start().json()
    assert body["status"] == "pending_authorization"
    assert body["authorization_url"].startswith(google.authorize_url + "?")
    asked = query_of(body["authorization_url"])
    assert asked["response_type"] == "code"
    assert asked["client_id"] == google.client_id
    assert asked["redirect_uri"] == SEO_REDIRECT_URI
    assert asked["scope"] == SCOPE
    assert asked["state"] == body["state"]
    assert asked["code_challenge_method"] == "S256"
    assert asked["access_type"] == "offline" and asked["prompt"] == "consent"
    assert "code_verifier" not in asked
    left = (utcnow() + timedelta(minutes=10) - _instant(body["expires_at"])).total_seconds()
    assert 0 <= left < 60
    listed = seo.ok("seo.listConnections", role="member")["data"]
    assert next(c for c in listed if c["provider"] == GSC)["status"] == "pending_authorization"
    read_only = query_of(seo.start(read_only=True).json()["authorization_url"])
    assert read_only["scope"] == READ_ONLY_SCOPE


def _instant(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_redirect_uri_outside_the_allow_list_is_refused(seo: Seo) -> None:
    for uri in ("https://evil.example/callback", None):
        body: dict[str, Any] = {"provider": GSC}
        if uri:
            body["redirectUri"] = uri
        problem(seo.request("seo.connect", body), 400, "BAD_REQUEST")


def test_complete_connect_stores_the_grant_and_selects_the_matching_property(
    seo: Seo, google: GoogleStandIn, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    unverified = {"siteUrl": "https://unverified.example/", "permissionLevel": "siteUnverifiedUser"}
    seo.see_properties(google, unverified)
    set_site_url(settings, seo.tenant_id, seo.site + "blog")  # a path: the origin's property
    started = seo.start()
    code = google.authorize(started.json()["authorization_url"])
    done = seo.complete(code, started.json()["state"])
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["status"] == "connected"
    assert body["connected_by"] is not None and body["connected_at"] is not None
    assert body["scopes"] == [SCOPE]
    assert {p["site_url"] for p in body["available_properties"]} >= {
        seo.site,
        f"sc-domain:{seo.site[8:-1]}",
        "https://unverified.example/",
    }
    assert body["property"]["site_url"] == seo.site
    assert body["quota"]["url_inspection_limit_per_day"] == 2000
    # The token exchange carried the verifier whose S256 is the challenge Google was shown.
    exchange = next(t for t in google.token_requests if t.get("code") == code)
    challenge = query_of(started.json()["authorization_url"])["code_challenge"]
    digest = hashlib.sha256(exchange["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == challenge
    # Nothing secret in any answer, or in the logs.
    detail = seo.request("seo.getConnection", {"provider": GSC}, role="member")
    listed = seo.request("seo.listConnections", role="member")
    tested = seo.request("seo.testConnection", {"provider": GSC})
    assert tested.json()["ok"] is True
    assert_no_secret(
        google, started.text, done.text, detail.text, listed.text, tested.text, caplog.text
    )
    assert exchange["code_verifier"] not in started.text + done.text + caplog.text
    # The sealed row holds them, not in the clear.
    row = connection_row(settings, seo.tenant_id)
    assert row.credentials_sealed and "ya29." not in row.credentials_sealed


def test_the_domain_property_is_chosen_when_no_url_prefix_property_matches(
    seo: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    host = seo.site[8:-1]
    google.sites[:] = [s for s in google.sites if host not in s["siteUrl"]]
    google.sites.append({"siteUrl": f"sc-domain:{host}", "permissionLevel": "siteOwner"})
    set_site_url(settings, seo.tenant_id, f"https://www.{host}/")
    assert seo.connect_google(google)["property"]["site_url"] == f"sc-domain:{host}"


def test_an_unverified_property_is_never_chosen(
    seo: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    host = seo.site[8:-1]
    google.sites[:] = [s for s in google.sites if host not in s["siteUrl"]]
    google.sites.append({"siteUrl": seo.site, "permissionLevel": "siteUnverifiedUser"})
    set_site_url(settings, seo.tenant_id, seo.site)
    connected = seo.connect_google(google)
    assert connected["status"] == "connected" and connected["property"] is None
    refused = seo.request("seo.updateConnection", {"provider": GSC, "property": seo.site})
    problem(refused, 400, "BAD_REQUEST")


def test_a_wrong_pkce_verifier_is_refused_and_spends_the_state(
    seo: Seo, google: GoogleStandIn
) -> None:
    first, second = seo.start().json(), seo.start().json()
    # The code of the first flow with the second's state: its verifier is not the one whose
    # challenge Google saw, so Google answers invalid_grant.
    code = google.authorize(first["authorization_url"])
    refused = problem(seo.complete(code, second["state"]), 400, "BAD_REQUEST")
    assert "verifier" in refused["detail"] and "invalid_grant" not in refused["detail"].lower()
    again = problem(
        seo.complete(google.authorize(second["authorization_url"]), second["state"]),
        400,
        "BAD_REQUEST",
    )
    assert "already used" in again["detail"]
    listed = seo.ok("seo.getConnection", {"provider": GSC}, role="member")
    assert listed["status"] == "pending_authorization"


def test_a_state_is_single_use(seo: Seo, google: GoogleStandIn) -> None:
    started = seo.start().json()
    assert (
        seo.complete(google.authorize(started["authorization_url"]), started["state"]).status_code
        == 200
    )
    code = google.authorize(started["authorization_url"])
    reused = problem(seo.complete(code, started["state"]), 400, "BAD_REQUEST")
    assert "already used" in reused["detail"]


def test_an_unknown_state_is_refused(seo: Seo, google: GoogleStandIn) -> None:
    started = seo.start().json()
    code = google.authorize(started["authorization_url"])
    unknown = problem(seo.complete(code, "not-a-state-we-issued"), 400, "BAD_REQUEST")
    assert "Unknown" in unknown["detail"]


def test_an_expired_state_is_refused(seo: Seo, google: GoogleStandIn, settings: Settings) -> None:
    started = seo.start().json()

    async def expire(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SeoOAuthState)
                .where(SeoOAuthState.tenant_id == seo.tenant_id)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )

    run_on(settings, expire)
    code = google.authorize(started["authorization_url"])
    expired = problem(seo.complete(code, started["state"]), 400, "BAD_REQUEST")
    assert "expired" in expired["detail"]


def test_another_tenants_state_is_not_found_and_stays_usable(
    seo: Seo, other: Seo, google: GoogleStandIn
) -> None:
    started = seo.start().json()
    code = google.authorize(started["authorization_url"])
    problem(other.complete(code, started["state"]), 404, "NOT_FOUND")
    assert other.ok("seo.getConnection", {"provider": GSC}, role="member")["status"] == (
        "not_connected"
    )
    assert seo.complete(code, started["state"]).status_code == 200


def test_a_state_is_bound_to_the_admin_who_started_it(
    seo: Seo, google: GoogleStandIn, token: Any
) -> None:
    started = seo.start().json()
    code = google.authorize(started["authorization_url"])
    second_admin = token(seo.org, f"second-admin-{seo.org}", "admin")
    response = seo.call(
        "seo.completeConnect",
        {"provider": GSC, "code": code, "state": started["state"]},
        token=second_admin,
        org=seo.org,
    )
    assert "another admin" in problem(response, 400, "BAD_REQUEST")["detail"]


# --- roles ------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["member", "editor"])
def test_only_admins_change_connections(seo: Seo, google: GoogleStandIn, role: str) -> None:
    problem(seo.start(role=role), 403, "FORBIDDEN")
    started = seo.start().json()
    code = google.authorize(started["authorization_url"])
    problem(seo.complete(code, started["state"], role=role), 403, "FORBIDDEN")
    for operation, body in (
        ("seo.updateConnection", {"provider": GSC, "syncEnabled": False}),
        ("seo.disconnect", {"provider": GSC}),
        ("seo.testConnection", {"provider": GSC}),
    ):
        problem(seo.request(operation, body, role=role), 403, "FORBIDDEN")
    # Members read.
    assert seo.ok("seo.listConnections", role=role)["total"] == 8
    assert seo.ok("seo.getConnection", {"provider": GSC}, role=role)["provider"] == GSC


# --- the access other parts use, refresh, a revoked grant -------------------------------------


def test_search_console_access_for_the_selected_property(
    seo: Seo, other: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    seo.see_properties(google)
    set_site_url(settings, seo.tenant_id, seo.site)
    seo.connect_google(google)

    async def use(db: Database) -> Any:
        async with db.unit_of_work() as session:
            access = await console_access.search_console(session, seo.tenant_id, settings)
            sites = await access.client.list_sites()
        return access, sites

    access, sites = run_on(settings, use)
    assert access.site_url == seo.site and access.permission_level == "siteOwner"
    assert access.read_only is False
    assert seo.site in {s["siteUrl"] for s in sites}

    async def missing(db: Database) -> str:
        async with db.unit_of_work() as session:
            with pytest.raises(SearchConsoleNotConnected) as refused:
                await console_access.search_console(session, other.tenant_id, settings)
        return str(refused.value)

    assert "not connected" in run_on(settings, missing)


def test_a_token_about_to_expire_is_refreshed(
    seo: Seo, google: GoogleStandIn, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tokens for 4 minutes: within the 5-minute margin, so every use refreshes first.
    monkeypatch.setattr(google, "expires_in", 240)
    seo.see_properties(google)
    seo.connect_google(google)
    before = sum(1 for t in google.token_requests if t.get("grant_type") == "refresh_token")
    assert seo.ok("seo.testConnection", {"provider": GSC})["ok"] is True
    after = sum(1 for t in google.token_requests if t.get("grant_type") == "refresh_token")
    assert after == before + 1
    row = connection_row(settings, seo.tenant_id)
    assert row.access_expires_at > utcnow() + timedelta(minutes=3)


@pytest.mark.parametrize("expires_in", [3600, 240], ids=["api_401", "refresh_invalid_grant"])
def test_a_revoked_grant_turns_needs_reauth_and_tells_the_admins(
    seo: Seo,
    google: GoogleStandIn,
    settings: Settings,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    expires_in: int,
) -> None:
    monkeypatch.setattr(google, "expires_in", expires_in)
    for role in ("member", "admin"):
        seo.whoami(role)
    seo.see_properties(google)
    set_site_url(settings, seo.tenant_id, seo.site)
    seo.connect_google(google)
    google.revoke_grants()
    tested = seo.ok("seo.testConnection", {"provider": GSC})
    assert tested["ok"] is False and tested["status"] == "needs_reauth"
    assert seo.ok("seo.getConnection", {"provider": GSC}, role="member")["status"] == (
        "needs_reauth"
    )
    settled(run, seo.tenant_id)
    told = seo.ok("notifications.list", role="admin")["data"]
    assert [n["type"] for n in told].count("seo.connection_needs_reauth") == 1
    assert "seo.connection_needs_reauth" not in [
        n["type"] for n in seo.ok("notifications.list", role="member")["data"]
    ]

    async def use(db: Database) -> None:
        async with db.unit_of_work() as session:
            with pytest.raises(SearchConsoleNotConnected, match="authorized again"):
                await console_access.search_console(session, seo.tenant_id, settings)

    run_on(settings, use)


def test_an_api_401_reported_by_a_part_turns_needs_reauth(
    seo: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    seo.see_properties(google)
    seo.connect_google(google)

    async def report(db: Database) -> None:
        async with db.unit_of_work() as session:
            await console_access.grant_revoked(session, seo.tenant_id)

    run_on(settings, report)
    assert connection_row(settings, seo.tenant_id).status == "needs_reauth"


# --- update -----------------------------------------------------------------------------------


def test_update_chooses_a_property_pauses_sync_and_merges_config(
    seo: Seo, google: GoogleStandIn
) -> None:
    problem(
        seo.request("seo.updateConnection", {"provider": GSC, "syncEnabled": False}),
        409,
        "CONFLICT",
    )
    seo.see_properties(google)
    seo.connect_google(google)
    domain = f"sc-domain:{seo.site[8:-1]}"
    updated = seo.ok(
        "seo.updateConnection",
        {"provider": GSC, "property": domain, "syncEnabled": False, "config": {"note": "x"}},
    )
    assert updated["sync_enabled"] is False and updated["config"]["note"] == "x"
    assert seo.ok("seo.getConnection", {"provider": GSC})["property"]["site_url"] == domain
    stranger = {"provider": GSC, "property": "https://not-visible.example/"}
    problem(seo.request("seo.updateConnection", stranger), 400, "BAD_REQUEST")


# --- disconnect -------------------------------------------------------------------------------


def test_disconnect_revokes_keeps_data_and_cancels_queued_runs(
    seo: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    # No site_url: no property is chosen, so no first backfill runs beside the seeded rows.
    seo.see_properties(google)
    seo.connect_google(google)
    seed_data(settings, seo.tenant_id, seo.site)
    refresh_tokens = set(google._grants)
    gone = seo.ok("seo.disconnect", {"provider": GSC})
    assert gone["success"] is True
    assert gone["revocation"] == {"attempted": True, "ok": True, "message": "revoked"}
    assert gone["cancelled_runs"] == 1
    assert gone["purged"] == {
        "search_rows": 0,
        "inspections": 0,
        "sitemaps": 0,
        "serp_snapshots": 0,
        "ai_answers": 0,
    }
    assert len(refresh_tokens - set(google._grants)) == 1  # this grant, revoked at Google
    assert count_rows(settings, seo.tenant_id, SeoSiteDay) == 1
    row = connection_row(settings, seo.tenant_id)
    assert row.status == "not_connected" and row.credentials_sealed is None
    assert seo.ok("seo.getConnection", {"provider": GSC})["status"] == "not_connected"
    runs = count_rows(settings, seo.tenant_id, SeoSyncRun)
    assert runs == 1  # kept, no longer queued

    async def use(db: Database) -> None:
        async with db.unit_of_work() as session:
            with pytest.raises(SearchConsoleNotConnected):
                await console_access.search_console(session, seo.tenant_id, settings)

    run_on(settings, use)


def test_disconnect_with_purge_deletes_what_search_console_told_us(
    seo: Seo, other: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    for org in (seo, other):
        org.see_properties(google)
        org.connect_google(google)
        seed_data(settings, org.tenant_id, org.site)
    gone = seo.ok("seo.disconnect", {"provider": GSC, "purgeData": True})
    assert gone["purged"] == {
        "search_rows": 1,
        "inspections": 1,
        "sitemaps": 1,
        "serp_snapshots": 0,
        "ai_answers": 0,
    }
    assert count_rows(settings, seo.tenant_id, SeoSiteDay) == 0
    assert count_rows(settings, seo.tenant_id, SeoUrlInspection) == 0
    assert count_rows(settings, seo.tenant_id, SeoSitemap) == 1  # robots.txt's stays
    # The other organization keeps everything.
    assert count_rows(settings, other.tenant_id, SeoSiteDay) == 1
    assert count_rows(settings, other.tenant_id, SeoUrlInspection) == 1
    assert other.ok("seo.getConnection", {"provider": GSC})["status"] == "connected"


def test_disconnect_when_google_cannot_revoke_still_disconnects(
    seo: Seo, google: GoogleStandIn, settings: Settings
) -> None:
    seo.see_properties(google)
    seo.connect_google(google)
    google.fail_next("/revoke", 503, "backendError")
    gone = seo.ok("seo.disconnect", {"provider": GSC})
    assert gone["revocation"]["attempted"] is True and gone["revocation"]["ok"] is False
    row = connection_row(settings, seo.tenant_id)
    assert row.credentials_sealed is None and row.last_error["code"] == "revocation_failed"


def test_one_tenant_never_sees_anothers_connection(
    seo: Seo, other: Seo, google: GoogleStandIn
) -> None:
    seo.see_properties(google)
    seo.connect_google(google)
    theirs = other.ok("seo.getConnection", {"provider": GSC}, role="member")
    assert theirs["status"] == "not_connected" and theirs["available_properties"] == []
    problem(other.request("seo.testConnection", {"provider": GSC}), 409, "CONFLICT")
    assert other.ok("seo.disconnect", {"provider": GSC})["revocation"]["attempted"] is False
    assert seo.ok("seo.getConnection", {"provider": GSC})["status"] == "connected"


# --- offline and key providers ----------------------------------------------------------------


def test_offline_connects_in_local_with_labelled_data(seo: Seo) -> None:
    # Connecting starts its backfill (tests/seo/connections/test_offline.py): a short one.
    seo.ok("seo.updateSettings", {"searchConsole": {"backfillMonths": 1}})
    connected = seo.ok("seo.connect", {"provider": "offline"})
    assert connected["status"] == "connected"
    assert "Offline fixtures" in connected["account_label"]
    assert connected["credential_hint"] is None


def test_offline_is_refused_outside_local(seo: Seo, settings: Settings) -> None:
    from contentplatform.auth.context import Role, TenantAccess
    from contentplatform.config import Environment
    from contentplatform.seo.connections import schemas
    from contentplatform.seo.connections.errors import ProviderNotConfigured

    staging = settings.model_copy(update={"env": Environment.staging})
    access = TenantAccess(seo.tenant_id, seo.org, seo.org, seo.tenant_id, Role.admin)

    async def connect(db: Database) -> None:
        async with db.unit_of_work() as session:
            with pytest.raises(ProviderNotConfigured, match="local"):
                await service.connect(
                    session, staging, access, schemas.SeoConnectInput(provider="offline")
                )

    run_on(settings, connect)


def test_key_providers_need_their_kind_of_credentials(seo: Seo) -> None:
    for body in (
        {"provider": "dataforseo", "credentials": {"apiKey": "k" * 20}},
        {"provider": "openai"},
        {"provider": "openai", "credentials": {"login": "a", "password": "b"}},
    ):
        problem(seo.request("seo.connect", body), 400, "BAD_REQUEST")


def test_search_console_without_an_oauth_client_is_not_configured(
    seo: Seo, settings: Settings
) -> None:
    from contentplatform.auth.context import Role, TenantAccess
    from contentplatform.seo.connections import schemas
    from contentplatform.seo.connections.errors import ProviderNotConfigured

    bare = settings.model_copy(update={"google_client_id": None})
    access = TenantAccess(seo.tenant_id, seo.org, seo.org, seo.tenant_id, Role.admin)
    data = schemas.SeoConnectInput(provider=GSC, redirect_uri=SEO_REDIRECT_URI)

    async def connect(db: Database) -> None:
        async with db.unit_of_work() as session:
            with pytest.raises(ProviderNotConfigured, match="not configured"):
                await service.connect(session, bare, access, data)

    run_on(settings, connect)
