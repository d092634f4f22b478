"""system.health, system.version, system.whoami; identity, tenancy and roles through them."""

from __future__ import annotations

from uuid import uuid4

from tests.support.problems import problem
from tests.support.servers import DOCUMENT_TIMEOUT


def test_health_needs_no_token(call):
    response = call("system.health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_version_needs_a_token_but_no_organization(call, token):
    response = call("system.version", token=token())
    assert response.status_code == 200
    body = response.json()
    assert body["api_version"] == "0.2.0"
    assert body["environment"] == "local"
    assert {"version", "commit", "build_time"} <= body.keys()
    problem(call("system.version"), 401, "UNAUTHORIZED")


def test_whoami_shows_user_organization_tenant_and_role(call, token, org):
    response = call(
        "system.whoami", token=token(org, "u1", "admin", email="u1@acme.test", name="Ada"), org=org
    )
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["idp_user_id"] == "u1"
    assert body["user"]["email"] == "u1@acme.test"
    assert body["user"]["name"] == "Ada"
    assert body["organization"]["idp_org_id"] == org
    assert body["role"] == "admin"
    assert body["superadmin"] is False
    assert body["auth"] == "jwt"
    assert body["impersonated_by"] is None
    assert len(body["tenant_id"]) == 36


def test_rest_and_rpc_return_the_same_body(client, token, org):
    headers = {"Authorization": f"Bearer {token(org, 'same', 'editor')}", "x-idp-org-id": org}
    rest = client.get("/v1/system/whoami", headers=headers)
    rpc = client.post("/api/rpc/system.whoami", headers=headers)
    assert rest.status_code == rpc.status_code == 200
    assert rest.json() == rpc.json()


def test_without_token_is_401(call, org):
    problem(call("system.whoami", org=org), 401, "UNAUTHORIZED")


def test_garbage_token_is_401(call, org):
    problem(call("system.whoami", token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


def test_missing_organization_header_is_400(call, token):
    body = problem(call("system.whoami", token=token("org_x", "u1", "admin")), 400, "BAD_REQUEST")
    assert body["errors"] == [{"path": "x-idp-org-id", "message": "Field required"}]


def test_tenant_is_provisioned_just_in_time_and_shared_by_its_members(call, token, org):
    first = call("system.whoami", token=token(org, "alice", "admin"), org=org).json()
    second = call("system.whoami", token=token(org, "bob", "member"), org=org).json()
    assert first["tenant_id"] == second["tenant_id"]
    assert first["user"]["id"] != second["user"]["id"]
    assert (first["role"], second["role"]) == ("admin", "member")


def test_second_tenant_is_a_different_tenant(call, token, org):
    other = f"org_{uuid4().hex[:12]}"
    mine = call("system.whoami", token=token(org, "carol", "admin"), org=org).json()
    theirs = call("system.whoami", token=token(other, "carol", "admin"), org=other).json()
    assert mine["tenant_id"] != theirs["tenant_id"]
    assert mine["user"]["id"] == theirs["user"]["id"]


def test_token_for_another_organization_is_refused(call, token, org):
    other = f"org_{uuid4().hex[:12]}"
    call("system.whoami", token=token(other, "owner", "admin"), org=other)  # provisions `other`
    body = problem(
        call("system.whoami", token=token(org, "dave", "admin"), org=other), 403, "FORBIDDEN"
    )
    assert other in body["detail"]


def test_unknown_organization_without_token_claim_is_403(call, token, org):
    problem(call("system.whoami", token=token(None, "erin"), org=org), 403, "FORBIDDEN")


def test_stored_membership_decides_when_the_token_does_not_name_the_organization(call, token, org):
    # First visit with an org-scoped token records the membership as editor...
    assert (
        call("system.whoami", token=token(org, "frank", "editor"), org=org).json()["role"]
        == "editor"
    )
    # ...then a token without organization claims still gets in, with the stored role.
    response = call("system.whoami", token=token(None, "frank"), org=org)
    assert response.status_code == 200
    assert response.json()["role"] == "editor"


def test_token_role_updates_the_stored_membership(call, token, org):
    call("system.whoami", token=token(org, "gina", "admin"), org=org)
    call("system.whoami", token=token(org, "gina", "member"), org=org)
    assert call("system.whoami", token=token(None, "gina"), org=org).json()["role"] == "member"


def test_superadmin_flag_grants_nothing_inside_a_tenant(call, token, org):
    problem(
        call("system.whoami", token=token(None, "root", superadmin=True), org=org), 403, "FORBIDDEN"
    )


def test_every_response_carries_a_request_id_and_echoes_the_clients(client):
    assert client.get("/v1/system/health").headers["x-request-id"]
    echoed = client.get("/v1/system/health", headers={"x-request-id": "trace-123"})
    assert echoed.headers["x-request-id"] == "trace-123"
    error = client.get("/v1/system/whoami", headers={"x-request-id": "trace-456"})
    assert error.headers["x-request-id"] == "trace-456"
    assert error.json()["request_id"] == "trace-456"


def test_probes(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["database"] == "ok"
    assert ready.json()["checks"]["dbos"] == "ok"


def test_local_service_publishes_its_development_key(client, token):
    keys = client.get("/.well-known/jwks.json").json()["keys"]
    assert [k["alg"] for k in keys] == ["EdDSA"]
    assert "d" not in keys[0], "the private part must never be published"


def test_interactive_docs_and_openapi_document(client):
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "text/html" in docs.headers["content-type"]
    document = client.get("/openapi.json", timeout=DOCUMENT_TIMEOUT).json()
    assert document["info"]["version"] == "0.2.0"
    whoami = document["paths"]["/v1/system/whoami"]["get"]
    assert whoami["operationId"] == "system.whoami"
    # The token and the organization together, or an API key alone.
    assert whoami["security"] == [{"bearerAuth": [], "organization": []}, {"apiKeyAuth": []}]
    assert "parameters" not in whoami
    assert document["paths"]["/v1/system/health"]["get"]["security"] == []
