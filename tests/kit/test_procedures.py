"""The procedure registry and the error contract, through a small test app over real HTTP.

The `things` router below exists only here: it exercises path, query and body inputs, bounds,
enums, camelCase wire names, every access level, domain errors and an unexpected crash, each
served as REST, as RPC and in the OpenAPI document.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import openapi_spec_validator
import pytest
from pydantic import BaseModel, Field

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.errors import Conflict
from contentplatform.kit.schemas import Empty, Input
from contentplatform.system.procedures import router as system_router
from tests.conftest import Caller
from tests.support.problems import problem
from tests.support.servers import second_service

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

# A fake secret an unexpected error carries; it must never reach the client.
LEAKY_MESSAGE = (
    "SELECT password_hash FROM users WHERE id = 42"
    " -- failed in /srv/contentplatform/secret_module.py"
)

router = ProcedureRouter("things", tag="Things")


class ThingQuery(Input):
    id: uuid.UUID
    limit: int = Field(20, ge=1, le=100, description="Page size.")
    sort_order: Literal["asc", "desc"] = "desc"
    search: str | None = Field(None, max_length=255)


class ThingPage(BaseModel):
    id: uuid.UUID
    limit: int
    sort_order: str
    search: str | None
    org: str
    role: str


class NewThing(Input):
    name: str = Field(min_length=1, max_length=100)
    tags: list[str] = Field(default_factory=list, max_length=5)
    file_type: Literal["pdf", "docx", "markdown"] = "markdown"


class Thing(BaseModel):
    name: str
    tags: list[str]
    file_type: str
    created_by: str


class ArchiveThing(Input):
    id: uuid.UUID
    reason: str | None = Field(None, max_length=200)


class Archived(BaseModel):
    id: uuid.UUID
    archived: bool
    reason: str | None


class ThingRef(Input):
    id: uuid.UUID


class AdminThings(BaseModel):
    subject: str
    tenant_scoped: bool
    items: list[str]


class Catalog(BaseModel):
    kinds: list[str]


@router.get("getById", "/v1/things/{id}", access=Access.member)
async def get_by_id(ctx: Context, input: ThingQuery) -> ThingPage:
    """One thing, with paging options."""
    return ThingPage(
        id=input.id,
        limit=input.limit,
        sort_order=input.sort_order,
        search=input.search,
        org=ctx.tenant.org_id,
        role=ctx.tenant.role.value,
    )


@router.post("create", "/v1/things", access=Access.editor)
async def create(ctx: Context, input: NewThing) -> Thing:
    """Create a thing."""
    return Thing(
        name=input.name,
        tags=list(input.tags),
        file_type=input.file_type,
        created_by=ctx.identity.subject,
    )


@router.post("archive", "/v1/things/{id}/archive", access=Access.admin)
async def archive(ctx: Context, input: ArchiveThing) -> Archived:
    """Archive a thing (the body is optional)."""
    return Archived(id=input.id, archived=True, reason=input.reason)


@router.post("claim", "/v1/things/{id}/claim", access=Access.member, errors=[Conflict])
async def claim(ctx: Context, input: ThingRef) -> Thing:
    """Claim a thing; it is always already claimed."""
    raise Conflict(f"Thing {input.id} is already claimed.")


@router.post("explode", "/v1/things/{id}/explode", access=Access.member)
async def explode(ctx: Context, input: ThingRef) -> Thing:
    """Fails the way a bug would."""
    raise RuntimeError(LEAKY_MESSAGE)


@router.get("adminList", "/api/admin/things", access=Access.superadmin)
async def admin_list(ctx: Context, _: Empty) -> AdminThings:
    """Every thing on the platform (superadmins only)."""
    return AdminThings(
        subject=ctx.identity.subject,
        tenant_scoped=ctx.principal.tenant is not None,
        items=["a", "b"],
    )


@router.get("catalog", "/v1/catalog", access=Access.public)
async def catalog(ctx: Context, _: Empty) -> Catalog:
    """The kinds of things (no authentication)."""
    return Catalog(kinds=["pdf", "docx", "markdown"])


TENANT_SCOPED = {
    "things.getById",
    "things.create",
    "things.archive",
    "things.claim",
    "things.explode",
    "system.whoami",
}
THING_ID = "6f1c1c52-6a2e-4a9e-9a43-0b1f4c2d7e10"


# --- the test apps ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def things_client(settings_with) -> Iterator[httpx.Client]:
    with (
        second_service(settings_with(), [system_router, router]) as running,
        running.client() as http,
    ):
        yield http


@pytest.fixture(scope="module")
def document(things_client: httpx.Client) -> dict[str, Any]:
    response = things_client.get("/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(params=["rest", "rpc"])
def call(request, things_client, document) -> Caller:
    return Caller(things_client, document, request.param)


@pytest.fixture
def both(things_client, document) -> dict[str, Caller]:
    return {t: Caller(things_client, document, t) for t in ("rest", "rpc")}


@pytest.fixture
def editor(token, org) -> dict[str, str]:
    return {"token": token(org, f"ed_{uuid.uuid4().hex[:6]}", "editor"), "org": org}


def field_errors(response: httpx.Response) -> dict[str, str]:
    body = problem(response, 400, "BAD_REQUEST")
    assert isinstance(body.get("errors"), list) and body["errors"], body
    for error in body["errors"]:
        assert set(error) == {"path", "message"}, error
        assert error["message"], error
    return {e["path"]: e["message"] for e in body["errors"]}


# --- happy paths ----------------------------------------------------------------------------


def test_get_with_defaults_returns_what_the_handler_returns(call, token, org):
    response = call("things.getById", {"id": THING_ID}, token=token(org, "m1", "member"), org=org)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "id": THING_ID,
        "limit": 20,
        "sort_order": "desc",
        "search": None,
        "org": org,
        "role": "member",
    }


def test_get_with_every_query_field(call, token, org):
    response = call(
        "things.getById",
        {"id": THING_ID, "limit": 100, "sortOrder": "asc", "search": "x" * 255},
        token=token(org, "m1", "member"),
        org=org,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["limit"], body["sort_order"], body["search"]) == (100, "asc", "x" * 255)


def test_create_takes_camel_case_fields(call, editor):
    response = call(
        "things.create",
        {"name": "Report", "tags": ["a", "b", "c", "d", "e"], "fileType": "pdf"},
        **editor,
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "name": "Report",
        "tags": ["a", "b", "c", "d", "e"],
        "file_type": "pdf",
        "created_by": response.json()["created_by"],
    }
    assert response.json()["created_by"].startswith("ed_")


def test_archive_body_is_optional(call, token, org):
    admin = {"token": token(org, "boss", "admin"), "org": org}
    bare = call("things.archive", {"id": THING_ID}, **admin)
    assert bare.status_code == 200, bare.text
    assert bare.json() == {"id": THING_ID, "archived": True, "reason": None}
    with_reason = call("things.archive", {"id": THING_ID, "reason": "done"}, **admin)
    assert with_reason.status_code == 200, with_reason.text
    assert with_reason.json() == {"id": THING_ID, "archived": True, "reason": "done"}


def test_archive_rest_without_any_body(things_client, token, org):
    response = things_client.post(
        f"/v1/things/{THING_ID}/archive",
        headers={"Authorization": f"Bearer {token(org, 'boss', 'admin')}", "x-idp-org-id": org},
    )
    assert response.status_code == 200, response.text
    assert response.json()["reason"] is None


def test_public_operation_needs_no_token(call):
    response = call("things.catalog")
    assert response.status_code == 200, response.text
    assert response.json() == {"kinds": ["pdf", "docx", "markdown"]}


@pytest.mark.own_org
@pytest.mark.parametrize(
    ("operation_id", "input", "role"),
    [
        (
            "things.getById",
            {"id": THING_ID, "limit": 7, "sortOrder": "asc", "search": "q"},
            "member",
        ),
        ("things.create", {"name": "n", "tags": ["t"], "fileType": "docx"}, "editor"),
        ("things.archive", {"id": THING_ID, "reason": "why"}, "admin"),
        ("things.catalog", {}, None),
    ],
)
def test_rest_and_rpc_bodies_are_identical(both, token, org, operation_id, input, role):
    auth = {"token": token(org, "same-user", role), "org": org} if role else {}
    rest = both["rest"](operation_id, input, **auth)
    rpc = both["rpc"](operation_id, input, **auth)
    assert rest.status_code == rpc.status_code == 200, (rest.text, rpc.text)
    assert rest.json() == rpc.json()


# --- invalid input: 400 with the wire field names -------------------------------------------


@pytest.mark.parametrize(
    ("input", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"sortOrder": "sideways"}, "sortOrder"),
        ({"search": "x" * 256}, "search"),
    ],
)
def test_bad_query_fields_are_400_naming_the_field(call, token, org, input, field):
    response = call(
        "things.getById", {"id": THING_ID, **input}, token=token(org, "m", "member"), org=org
    )
    assert response.status_code != 422
    assert field in field_errors(response)


@pytest.mark.parametrize(
    ("input", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": 123}, "name"),
        ({}, "name"),
        ({"name": "ok", "tags": ["1", "2", "3", "4", "5", "6"]}, "tags"),
        ({"name": "ok", "tags": "not-a-list"}, "tags"),
        ({"name": "ok", "fileType": "exe"}, "fileType"),
        ({"name": "ok", "colour": "red"}, "colour"),
    ],
)
def test_bad_body_fields_are_400_naming_the_field(call, editor, input, field):
    response = call("things.create", input, **editor)
    assert response.status_code != 422
    errors = field_errors(response)
    assert field in errors, errors
    body = response.json()
    assert field in body["detail"]


def test_missing_required_field_says_so(call, editor):
    errors = field_errors(call("things.create", {"tags": []}, **editor))
    assert errors == {"name": "Field required"}


def test_several_bad_fields_are_all_listed(call, editor):
    errors = field_errors(call("things.create", {"name": "", "fileType": "exe"}, **editor))
    assert set(errors) == {"name", "fileType"}


def test_optional_body_is_still_validated(call, token, org):
    response = call(
        "things.archive",
        {"id": THING_ID, "reason": "x" * 201},
        token=token(org, "boss", "admin"),
        org=org,
    )
    assert "reason" in field_errors(response)


def test_unknown_field_on_an_operation_without_input_is_400_over_rpc(things_client):
    response = things_client.post("/api/rpc/things.catalog", json={"surprise": True})
    assert "surprise" in field_errors(response)


def test_malformed_uuid_in_rest_path_is_400(things_client, token, org):
    response = things_client.get(
        "/v1/things/not-a-uuid",
        headers={"Authorization": f"Bearer {token(org, 'm', 'member')}", "x-idp-org-id": org},
    )
    assert field_errors(response).keys() == {"id"}


@pytest.mark.parametrize("value", ["not-a-uuid", 5, None])
def test_malformed_uuid_over_rpc_is_400(things_client, token, org, value):
    response = things_client.post(
        "/api/rpc/things.getById",
        json={"id": value},
        headers={"Authorization": f"Bearer {token(org, 'm', 'member')}", "x-idp-org-id": org},
    )
    assert "id" in field_errors(response)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/things",
        "/api/rpc/things.create",
        f"/v1/things/{THING_ID}/archive",
        "/api/rpc/things.archive",
        "/api/rpc/things.catalog",
    ],
)
def test_body_that_is_not_json_is_400(things_client, token, org, path):
    response = things_client.post(
        path,
        content=b'{"name": "half a doc',
        headers={
            "Authorization": f"Bearer {token(org, 'boss', 'admin')}",
            "x-idp-org-id": org,
            "content-type": "application/json",
        },
    )
    body = problem(response, 400, "BAD_REQUEST")
    assert any("not valid JSON" in e["message"] for e in body["errors"]), body


@pytest.mark.parametrize("path", ["/v1/things", "/api/rpc/things.create"])
def test_body_that_is_not_json_is_reported_on_the_body(things_client, editor, path):
    response = things_client.post(
        path,
        content=b'{"name": "half a doc',
        headers={
            "Authorization": f"Bearer {editor['token']}",
            "x-idp-org-id": editor["org"],
            "content-type": "application/json",
        },
    )
    assert field_errors(response) == {"body": "The request body is not valid JSON."}


def test_rest_body_cannot_override_a_path_field(things_client, token, org):
    response = things_client.post(
        f"/v1/things/{THING_ID}/archive",
        json={"id": str(uuid.uuid4())},
        headers={"Authorization": f"Bearer {token(org, 'boss', 'admin')}", "x-idp-org-id": org},
    )
    assert "id" in field_errors(response)


@pytest.mark.parametrize("path", ["/api/rpc/things.create", "/v1/things"])
def test_json_array_instead_of_an_object_is_400(things_client, editor, path):
    response = things_client.post(
        path,
        json=[{"name": "x"}],
        headers={"Authorization": f"Bearer {editor['token']}", "x-idp-org-id": editor["org"]},
    )
    assert field_errors(response)


def test_rpc_array_for_an_operation_without_input_is_400(things_client):
    field_errors(things_client.post("/api/rpc/things.catalog", json=[]))


# --- roles ----------------------------------------------------------------------------------


def test_member_cannot_call_an_editor_operation(call, token, org):
    body = problem(
        call("things.create", {"name": "x"}, token=token(org, "mem", "member"), org=org),
        403,
        "FORBIDDEN",
    )
    assert "editor" in body["detail"]


def test_editor_cannot_call_an_admin_operation(call, token, org):
    problem(
        call("things.archive", {"id": THING_ID}, token=token(org, "ed", "editor"), org=org),
        403,
        "FORBIDDEN",
    )


def test_higher_roles_include_lower_ones(call, token, org):
    admin = {"token": token(org, "boss", "admin"), "org": org}
    assert call("things.archive", {"id": THING_ID}, **admin).status_code == 200
    assert call("things.create", {"name": "x"}, **admin).status_code == 200
    assert call("things.getById", {"id": THING_ID}, **admin).json()["role"] == "admin"


def test_superadmin_operation_refuses_a_tenant_admin(call, token, org):
    problem(call("things.adminList", token=token(org, "boss", "admin"), org=org), 403, "FORBIDDEN")


def test_superadmin_operation_admits_a_superadmin_without_organization(call, token):
    response = call("things.adminList", token=token(None, "root", superadmin=True))
    assert response.status_code == 200, response.text
    assert response.json() == {"subject": "root", "tenant_scoped": False, "items": ["a", "b"]}


@pytest.mark.parametrize(
    ("operation_id", "input"),
    [
        ("things.adminList", {}),
        ("things.getById", {"id": THING_ID}),
        ("things.create", {"name": "x"}),
        ("things.archive", {"id": THING_ID}),
    ],
)
def test_no_token_is_401(call, org, operation_id, input):
    response = call(operation_id, input, org=org)
    problem(response, 401, "UNAUTHORIZED")
    assert response.headers["www-authenticate"].lower().startswith("bearer")


# --- domain and unexpected errors -----------------------------------------------------------


def test_domain_conflict_is_409_problem(call, token, org):
    body = problem(
        call("things.claim", {"id": THING_ID}, token=token(org, "m", "member"), org=org),
        409,
        "CONFLICT",
    )
    assert body["detail"] == f"Thing {THING_ID} is already claimed."
    assert body["title"] == "Conflict"
    assert body["type"] == "/problems/conflict"


def test_unhandled_exception_is_a_bare_500(call, token, org):
    response = call(
        "things.explode",
        {"id": THING_ID},
        token=token(org, "m", "member"),
        org=org,
        headers={"x-request-id": "crash-trace-1"},
    )
    body = problem(response, 500, "INTERNAL_SERVER_ERROR")
    assert response.headers["x-request-id"] == "crash-trace-1"
    assert body["request_id"] == "crash-trace-1"
    for secret in (LEAKY_MESSAGE, "Traceback", "SELECT", "password_hash", "secret_module", "/srv/"):
        assert secret not in response.text
        assert secret.lower() not in str(dict(response.headers)).lower()
    assert "RuntimeError" not in response.text


def test_the_app_keeps_serving_after_a_crash(call, token, org):
    member = {"token": token(org, "m", "member"), "org": org}
    assert call("things.explode", {"id": THING_ID}, **member).status_code == 500
    assert call("things.getById", {"id": THING_ID}, **member).status_code == 200


# --- routing errors -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_unknown_rpc_procedure_is_404(things_client, method):
    response = things_client.request(method, "/api/rpc/nope.nothing", json={})
    body = problem(response, 404, "NOT_FOUND")
    assert "nope.nothing" in body["detail"]


def test_rpc_with_get_is_405_allowing_post(things_client):
    response = things_client.get("/api/rpc/things.create")
    problem(response, 405, "BAD_REQUEST")
    assert response.headers["allow"] == "POST"


def test_unknown_rest_path_is_404_problem(things_client):
    problem(things_client.get("/v1/nothing/here"), 404, "NOT_FOUND")


def test_wrong_method_on_a_rest_path_is_405_problem(things_client):
    response = things_client.delete("/v1/things")
    problem(response, 405, "BAD_REQUEST")
    assert response.headers["allow"] == "POST"


# --- rate limits (an app of their own, so their counters touch nothing else) ---------------


@pytest.fixture(scope="module")
def limited_client(settings_with, backends) -> Iterator[httpx.Client]:
    # A day, not a minute: the limiter's sliding window weighs the last window's count by the
    # share of it still in view, so three requests just before a window's end and a fourth
    # just after it are let through; at a day, a test straddles that boundary once in 86,400 s.
    settings = settings_with(
        rate_limit="3/day",
        rate_limit_public="3/day",
        redis_prefix=f"{backends.redis_prefix}limited:",
    )
    with second_service(settings, [system_router, router]) as running, running.client() as http:
        yield http


def assert_limited(response: httpx.Response) -> None:
    problem(response, 429, "TOO_MANY_REQUESTS")
    assert 1 <= int(response.headers["retry-after"]) <= 86_400


def test_public_operation_over_its_limit_is_429_on_both_transports(limited_client):
    for _ in range(3):
        assert limited_client.get("/v1/catalog").status_code == 200
    assert_limited(limited_client.get("/v1/catalog"))
    # The limit is per client, whichever transport it uses.
    assert_limited(limited_client.post("/api/rpc/things.catalog"))


def test_signed_in_caller_over_the_limit_is_429(limited_client, token):
    headers = {"Authorization": f"Bearer {token(None, f'busy_{uuid.uuid4().hex[:6]}')}"}
    for _ in range(3):
        assert limited_client.get("/v1/system/version", headers=headers).status_code == 200
    assert_limited(limited_client.post("/api/rpc/system.version", headers=headers))
    # Another user has a budget of their own.
    other = {"Authorization": f"Bearer {token(None, f'calm_{uuid.uuid4().hex[:6]}')}"}
    assert limited_client.get("/v1/system/version", headers=other).status_code == 200


# --- the OpenAPI document -------------------------------------------------------------------


def operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            found[operation.get("operationId")] = (method, path, operation)
    return found


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = document["components"]["schemas"][name]
    return schema


def flatten(schema: dict[str, Any]) -> dict[str, Any]:
    """Merge a nullable `anyOf: [{...}, {type: null}]` into the non-null branch."""
    merged = {k: v for k, v in schema.items() if k != "anyOf"}
    for branch in schema.get("anyOf", []):
        if branch.get("type") != "null":
            merged.update(branch)
    return merged


def test_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == "0.2.0"
    openapi_spec_validator.validate(document)


def test_every_rest_operation_is_listed_once_with_its_operation_id(document):
    found = operations(document)
    assert None not in found
    assert {k: (m, p) for k, (m, p, _) in found.items()} == {
        "system.health": ("get", "/v1/system/health"),
        "system.version": ("get", "/v1/system/version"),
        "system.whoami": ("get", "/v1/system/whoami"),
        "system.status": ("get", "/v1/system/status"),
        "things.getById": ("get", "/v1/things/{id}"),
        "things.create": ("post", "/v1/things"),
        "things.archive": ("post", "/v1/things/{id}/archive"),
        "things.claim": ("post", "/v1/things/{id}/claim"),
        "things.explode": ("post", "/v1/things/{id}/explode"),
        "things.adminList": ("get", "/api/admin/things"),
        "things.catalog": ("get", "/v1/catalog"),
    }
    assert not [p for p in document["paths"] if p.startswith("/api/rpc")]
    for _, _, operation in found.values():
        if operation["operationId"].startswith("things."):
            assert operation["tags"] == ["Things"]
            assert operation["summary"]


def test_query_and_path_parameters_carry_bounds_and_wire_names(document):
    _, _, operation = operations(document)["things.getById"]
    parameters = {(p["in"], p["name"]): p for p in operation["parameters"]}
    assert set(parameters) == {
        ("path", "id"),
        ("query", "limit"),
        ("query", "sortOrder"),
        ("query", "search"),
    }
    assert parameters["path", "id"]["required"] is True
    assert parameters["path", "id"]["schema"]["format"] == "uuid"

    limit = flatten(parameters["query", "limit"]["schema"])
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
        "integer",
        1,
        100,
        20,
    )
    assert parameters["query", "limit"].get("required", False) is False
    assert parameters["query", "limit"]["description"] == "Page size."

    sort_order = flatten(parameters["query", "sortOrder"]["schema"])
    assert sorted(sort_order["enum"]) == ["asc", "desc"]
    assert sort_order["default"] == "desc"

    search = flatten(parameters["query", "search"]["schema"])
    assert search["maxLength"] == 255
    assert parameters["query", "search"].get("required", False) is False


def test_body_schema_has_bounds_and_camel_case_names(document):
    _, _, operation = operations(document)["things.create"]
    body = operation["requestBody"]
    assert body["required"] is True
    schema = resolve(document, body["content"]["application/json"]["schema"])
    properties = schema["properties"]
    assert set(properties) == {"name", "tags", "fileType"}
    assert schema["required"] == ["name"]
    assert schema.get("additionalProperties") is False
    assert (properties["name"]["minLength"], properties["name"]["maxLength"]) == (1, 100)
    assert properties["tags"]["maxItems"] == 5
    assert properties["tags"]["type"] == "array"
    assert sorted(properties["fileType"]["enum"]) == ["docx", "markdown", "pdf"]


def test_optional_body_is_documented_as_optional(document):
    _, _, operation = operations(document)["things.archive"]
    body = operation["requestBody"]
    assert body.get("required", False) is False
    schema = flatten(body["content"]["application/json"]["schema"])
    properties = resolve(document, schema)["properties"]
    assert set(properties) == {"reason"}
    assert flatten(properties["reason"])["maxLength"] == 200


def test_bearer_and_organization_security_schemes(document):
    schemes = document["components"]["securitySchemes"]
    assert set(schemes) == {"bearerAuth", "organization", "apiKeyAuth", "streamToken"}
    bearer = schemes["bearerAuth"]
    assert (bearer["type"], bearer["scheme"].lower(), bearer["bearerFormat"]) == (
        "http",
        "bearer",
        "JWT",
    )
    assert "contentplatform dev-token --org" in bearer["description"]
    organization = schemes["organization"]
    assert (organization["type"], organization["in"], organization["name"]) == (
        "apiKey",
        "header",
        "x-idp-org-id",
    )
    key = schemes["apiKeyAuth"]
    assert (key["type"], key["scheme"].lower(), key["bearerFormat"]) == (
        "http",
        "bearer",
        "cpk_...",
    )
    stream = schemes["streamToken"]
    assert (stream["type"], stream["in"], stream["name"]) == ("apiKey", "query", "streamToken")


def test_security_is_declared_by_access_and_the_organization_is_no_parameter(document):
    for operation_id, (_, _, operation) in operations(document).items():
        headers = [p for p in operation.get("parameters", []) if p["in"] == "header"]
        assert headers == [], operation_id
        public = operation_id in {"things.catalog", "system.health", "system.status"}
        if public:
            assert operation["security"] == [], operation_id
            assert "401" not in operation["responses"], operation_id
            continue
        # One requirement object: the token and the organization together, not either; or,
        # as a second requirement, an API key alone (tenant-scoped operations only).
        if operation_id in TENANT_SCOPED:
            needs = [{"bearerAuth": [], "organization": []}, {"apiKeyAuth": []}]
        else:
            needs = [{"bearerAuth": []}]
        assert operation["security"] == needs, operation_id
        assert {"401", "403"} <= set(operation["responses"]), operation_id


def test_errors_are_documented_as_problem_json_and_never_422(document):
    assert "Problem" in document["components"]["schemas"]
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for operation_id, (_, _, operation) in operations(document).items():
        responses = operation["responses"]
        assert "422" not in responses, operation_id
        for status in ("400", "429", "500"):
            content = responses[status]["content"]
            assert set(content) == {"application/problem+json"}, operation_id
            assert content["application/problem+json"]["schema"] == {
                "$ref": "#/components/schemas/Problem"
            }
    assert "409" in operations(document)["things.claim"][2]["responses"]
    assert "404" in operations(document)["things.getById"][2]["responses"]
