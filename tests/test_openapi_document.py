"""The API document as client developers, generators and linters meet it: the docs pages
(package files only, no other host), the security schemes each operation names, `servers`, one
component per model name, an example for every object schema that is valid against it, the
webhooks a receiver gets (what is sent is what is documented), and a quick start that works as
printed."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from contentplatform import domains
from contentplatform.auth.context import Access
from contentplatform.events.catalog import SUBSCRIBABLE
from contentplatform.kit.examples import example
from contentplatform.kit.schemas import REFERENCE_CAMEL_CASE
from contentplatform.publishers.strategies.base import Remote
from contentplatform.publishers.strategies.webhook import WebhookTarget, new_signing_secret
from tests.publishers.strategies.support import ACME_PRICING, run_strategy
from tests.support.servers import AppServer
from tests.support.targets.webhook import WebhookReceiver

PROCEDURES = {p.operation_id: p for router in domains.routers() for p in router.procedures}


def operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        operation["operationId"]: operation
        for item in document["paths"].values()
        for operation in item.values()
    }


# --- the docs pages --------------------------------------------------------------------------


def referenced(page: str) -> set[str]:
    """What a docs page loads: its scripts, styles and icon, and the document it renders."""
    found = set(re.findall(r"""(?:src|href|spec-url)=["']([^"']+)["']""", page))
    found |= set(re.findall(r"""\burl: ["']([^"']+)["']""", page))
    return found


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_nothing_from_another_host(
    client: httpx.Client, server: AppServer, page: str
) -> None:
    response = client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    absolute = re.findall(r"https?://[^\s\"'<>)]+", html)
    assert [url for url in absolute if not url.startswith(server.url)] == []
    assets = referenced(html)
    assert "/openapi.json" in assets
    assert any(asset.endswith(".js") for asset in assets), assets
    for asset in assets:
        loaded = client.get(asset)
        assert loaded.status_code == 200, asset
        assert loaded.content, asset


def test_swagger_ui_keeps_the_authorization_and_sends_the_document_nowhere(
    client: httpx.Client,
) -> None:
    html = client.get("/docs").text
    assert '"persistAuthorization": true' in html
    assert '"validatorUrl": null' in html  # its badge would send the document to swagger.io
    assert "/docs/static/swagger-ui-bundle.js" in referenced(html)
    assert "/docs/static/redoc.standalone.js" in referenced(client.get("/redoc").text)


# --- security and servers --------------------------------------------------------------------


def test_security_schemes_hold_the_token_and_the_organization(
    openapi_document: dict[str, Any],
) -> None:
    schemes = openapi_document["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http"
    assert schemes["bearerAuth"]["bearerFormat"] == "JWT"
    assert "dev-token --org" in schemes["bearerAuth"]["description"]
    assert schemes["organization"] == {
        "type": "apiKey",
        "in": "header",
        "name": "x-idp-org-id",
        "description": schemes["organization"]["description"],
    }


def test_each_operation_requires_what_its_access_needs_and_no_organization_parameter(
    openapi_document: dict[str, Any],
) -> None:
    found = operations(openapi_document)
    assert set(found) == set(PROCEDURES)
    tenant_scoped = keyless = 0
    for operation_id, operation in found.items():
        access = PROCEDURES[operation_id].access
        names = [p["name"] for p in operation.get("parameters", [])]
        assert "x-idp-org-id" not in names, operation_id
        if access is Access.public:
            assert operation["security"] == [], operation_id
        elif access.tenant_role is None:
            assert operation["security"] == [{"bearerAuth": []}], operation_id
        else:
            # One requirement: both at once (two would mean either one will do); and, where
            # API keys may call the operation, a second one: the key alone; and where a stream
            # URL opens the stream, its token alone.
            token = {"bearerAuth": [], "organization": []}
            keys = [{"apiKeyAuth": []}] if PROCEDURES[operation_id].api_keys else []
            streamed = PROCEDURES[operation_id].stream_token is not None
            stream = [{"streamToken": []}] if streamed else []
            assert operation["security"] == [token, *keys, *stream], operation_id
            tenant_scoped += 1
            keyless += not keys
    assert tenant_scoped >= 60
    # Team and settings (and so on) never take a key.
    assert keyless >= 20


def test_the_organization_header_is_still_checked_token_first(
    client: httpx.Client, token: Any, org: str
) -> None:
    no_token = client.get("/v1/system/whoami")
    assert no_token.status_code == 401
    signed = {"Authorization": f"Bearer {token(org, 'u1', 'member')}"}
    missing = client.get("/v1/system/whoami", headers=signed)
    assert missing.status_code == 400
    assert missing.json()["errors"] == [{"path": "x-idp-org-id", "message": "Field required"}]
    malformed = client.get("/v1/system/whoami", headers={**signed, "x-idp-org-id": "no spaces"})
    assert malformed.status_code == 400
    assert client.get("/v1/system/whoami", headers={**signed, "x-idp-org-id": org}).is_success


def test_the_document_names_its_server(openapi_document: dict[str, Any]) -> None:
    assert openapi_document["servers"] == [{"url": "/", "description": "this service"}]


# --- schema names ----------------------------------------------------------------------------


def test_every_operation_is_described_under_a_described_tag(
    openapi_document: dict[str, Any],
) -> None:
    described = {tag["name"]: tag["description"] for tag in openapi_document["tags"]}
    assert all(described.values())
    used = set()
    for section in ("paths", "webhooks"):
        for where, item in openapi_document[section].items():
            for method, operation in item.items():
                assert operation.get("description", "").strip(), f"{method} {where}"
                used.update(operation["tags"])
    assert used == set(described)
    assert openapi_document["info"]["contact"]["name"]


def test_every_answer_field_is_snake_case_but_the_references_own_camel_case(
    openapi_document: dict[str, Any],
) -> None:
    """Inputs are camelCase and answers snake_case (kit/schemas.py): every property of every
    schema an answer or a webhook body reaches, at any depth."""
    schemas = openapi_document["components"]["schemas"]
    reached: set[str] = set()

    def refs(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in reached:
                    reached.add(name)
                    refs(schemas[name])
            for value in node.values():
                refs(value)
        elif isinstance(node, list):
            for value in node:
                refs(value)

    for item in [*openapi_document["paths"].values(), *openapi_document["webhooks"].values()]:
        for operation in item.values():
            refs(operation["responses"])
    for item in openapi_document["webhooks"].values():
        refs(item["post"]["requestBody"])
    camel = {
        f"{name}.{field}"
        for name in reached
        for field in schemas[name].get("properties", {})
        if re.search("[A-Z]", field) and field not in REFERENCE_CAMEL_CASE
    }
    assert not camel, sorted(camel)
    assert "UploadUrl" in reached and "Problem" in reached


def test_each_model_is_the_component_of_its_own_name(openapi_document: dict[str, Any]) -> None:
    schemas = openapi_document["components"]["schemas"]
    # FastAPI names two models of one name by their modules (`contentplatform__system__...`),
    # which generators then drop or rename.
    assert [name for name in schemas if "__" in name] == []
    found = operations(openapi_document)
    checked = 0
    for operation_id, procedure in PROCEDURES.items():
        output = procedure.output
        if not (isinstance(output, type) and issubclass(output, BaseModel)):
            continue
        answer = found[operation_id]["responses"]["200"]["content"]["application/json"]
        assert answer["schema"] == {"$ref": f"#/components/schemas/{output.__name__}"}
        wanted = output.model_json_schema(mode="serialization")["properties"]
        assert set(schemas[output.__name__]["properties"]) == set(wanted), operation_id
        checked += 1
    assert checked >= 60


def test_the_service_version_and_a_drafts_version_are_two_components(
    openapi_document: dict[str, Any],
) -> None:
    found = operations(openapi_document)
    schemas = openapi_document["components"]["schemas"]

    def answer(operation_id: str) -> dict[str, Any]:
        ref = found[operation_id]["responses"]["200"]["content"]["application/json"]["schema"]
        return schemas[ref["$ref"].removeprefix("#/components/schemas/")]

    assert set(answer("system.version")["properties"]) == {
        "version",
        "api_version",
        "commit",
        "build_time",
        "environment",
    }
    assert {"title", "content", "author_type"} <= set(answer("drafts.getVersion")["properties"])


# --- examples --------------------------------------------------------------------------------


def example_problems(document: dict[str, Any]) -> dict[str, list[str]]:
    """Each object schema of the document without an example, or whose example its schema
    refuses (JSON Schema 2020-12, formats checked), with what is wrong."""
    root = {"components": document["components"]}
    problems: dict[str, list[str]] = {}
    for name, schema in document["components"]["schemas"].items():
        if schema.get("type") != "object" and "properties" not in schema:
            continue
        if not schema.get("examples"):
            problems[name] = ["no example"]
            continue
        validator = Draft202012Validator(
            {"$ref": f"#/components/schemas/{name}", **root},
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        errors = [error.message for error in validator.iter_errors(schema["examples"][0])]
        if errors:
            problems[name] = errors
    return problems


def test_every_object_schema_has_an_example_valid_against_it(
    openapi_document: dict[str, Any],
) -> None:
    assert example_problems(openapi_document) == {}
    schemas = openapi_document["components"]["schemas"]
    assert len([s for s in schemas.values() if "examples" in s]) >= 70


def test_an_invalid_example_is_found(openapi_document: dict[str, Any]) -> None:
    broken = copy.deepcopy(openapi_document)
    schemas = broken["components"]["schemas"]
    schemas["Draft"]["examples"][0]["id"] = "not a uuid"
    schemas["Job"]["examples"][0]["status"] = "sleeping"
    del schemas["Success"]["examples"]
    assert set(example_problems(broken)) == {"Draft", "Job", "Success"}


def test_hand_written_examples_win_and_fit_together(openapi_document: dict[str, Any]) -> None:
    schemas = openapi_document["components"]["schemas"]
    job = schemas["CreateJobInput"]["examples"][0]
    assert (job["jobType"], job["cronExpression"]) == ("recurring", "0 9 * * MON")
    connection = schemas["CreateConnectionInput"]["examples"][0]
    assert (connection["type"], set(connection["config"])) == ("webhook", {"url"})
    assert schemas["Problem"]["examples"][0]["code"] == "BAD_REQUEST"


def valid(schema: dict[str, Any], value: Any, schemas: dict[str, Any] | None = None) -> bool:
    root = {"components": {"schemas": schemas or {}}}
    return Draft202012Validator({**schema, **root}).is_valid(value)


@pytest.mark.parametrize(
    ("schema", "name", "expected"),
    [
        ({"type": "string", "format": "uuid"}, "", "3fa85f64-5717-4562-b3fc-2c963f66afa6"),
        ({"type": "string", "maxLength": 3}, "title", "Wat"),
        ({"type": "string", "minLength": 12}, "", "texttexttext"),
        ({"type": "integer", "minimum": 5, "maximum": 9}, "", 5),
        ({"type": "integer", "exclusiveMaximum": 0}, "", -1),
        ({"type": "integer", "default": 20}, "limit", 20),
        ({"enum": ["a", "b"], "default": "b"}, "", "b"),
        ({"enum": ["a", "webhook"]}, "type", "webhook"),
        ({"enum": ["a", "b"]}, "type", "a"),  # the plausible value is not one of them
        ({"type": "integer"}, "title", 1),  # the plausible value is not an integer
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "error", None),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "title", "Watering"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, "", [1, 1]),
        ({"type": "array", "items": {"type": "string"}}, "tags", ["a", "b"]),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "",
            {"key": 1},
        ),
    ],
)
def test_an_example_is_made_from_the_schema(schema: Any, name: str, expected: Any) -> None:
    plausible = {"title": "Watering", "type": "webhook", "tags": ["a", "b"]}
    made = example(schema, {}, plausible, name=name)
    assert made == expected
    assert valid(schema, made)


def test_an_input_shows_what_it_needs_and_an_output_everything() -> None:
    fields = {
        "name": {"type": "string"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "mode": {"enum": ["x", "y"], "default": "y"},
        "tags": {"type": "array", "items": {"type": "string"}, "examples": [["t"]]},
    }
    closed = {"type": "object", "properties": fields, "additionalProperties": False}
    assert example({**closed, "required": ["name"]}, {}, {}) == {
        "name": "text",
        "mode": "y",
        "tags": ["t"],
    }
    assert example({"type": "object", "properties": fields}, {}, {}) == {
        "name": "text",
        "note": None,
        "mode": "y",
        "tags": ["t"],
    }
    update = {"type": "object", "properties": {"note": fields["note"]}}
    # Nothing required or shown: its first property, not null (an update changes something).
    assert example({**update, "additionalProperties": False}, {}, {}) == {"note": "text"}


def test_a_model_that_holds_itself_ends() -> None:
    schemas = {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            },
        }
    }
    made = example({"$ref": "#/components/schemas/Node"}, schemas, {})
    assert made == {"name": "text", "children": []}
    assert valid({"$ref": "#/components/schemas/Node"}, made, schemas)


# --- webhooks --------------------------------------------------------------------------------

EVENTS = {"article.published", "article.updated", "article.drafted", "article.unpublished"}
SIGNATURE_HEADERS = {"webhook-id", "webhook-timestamp", "webhook-signature"}


def test_the_webhook_events_are_documented_with_their_signature_headers(
    openapi_document: dict[str, Any],
) -> None:
    hooks = openapi_document["webhooks"]
    # Every type an outbound endpoint may subscribe to, under its own name; apart from them, the
    # requests a webhook publisher connection sends, named `publisher.<type>` under their own tag.
    sent = {f"publisher.{name}" for name in (*EVENTS, "webhook.test")}
    assert set(hooks) == {*sent, *SUBSCRIBABLE}
    for name in sent:
        assert hooks[name]["post"]["tags"] == ["Webhook publishing"]
    for name in SUBSCRIBABLE:
        assert hooks[name]["post"]["tags"] == ["Webhooks"]
    for name, item in hooks.items():
        operation = item["post"]
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert headers == SIGNATURE_HEADERS, name
        assert "Webhook(secret).verify" in next(
            p["description"] for p in operation["parameters"] if p["name"] == "webhook-signature"
        )
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].startswith("#/components/schemas/"), name
        assert "422" not in operation["responses"], name


def test_what_a_receiver_gets_is_what_the_document_says(
    openapi_document: dict[str, Any],
) -> None:
    secret = new_signing_secret()
    with WebhookReceiver(secret) as receiver:

        def act(work: Any) -> Any:
            return run_strategy(
                WebhookTarget, {"url": receiver.hook_url}, None, work, signing_secret=secret
            )

        sent = act(lambda s: s.publish(ACME_PRICING, "publish"))
        remote = Remote(sent.external_id, sent.remote_version, sent.external_url)
        act(lambda s: s.publish(ACME_PRICING, "draft"))
        act(lambda s: s.update(remote, ACME_PRICING, "publish"))
        act(lambda s: s.unpublish(remote))
        act(lambda s: s.test_connection())

    schemas = openapi_document["components"]["schemas"]
    root = {"components": openapi_document["components"]}
    seen = set()
    for delivery in receiver.deliveries:
        body = json.loads(delivery.body)
        operation = openapi_document["webhooks"][f"publisher.{body['type']}"]["post"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        Draft202012Validator({**schema, **root}).validate(body)
        # Nothing sent that the document does not name, at either level.
        documented = schemas[schema["$ref"].removeprefix("#/components/schemas/")]
        assert set(body) == set(documented["properties"])
        data = documented["properties"]["data"]["$ref"].removeprefix("#/components/schemas/")
        assert set(body["data"]) == set(schemas[data]["properties"])
        assert set(delivery.headers) >= SIGNATURE_HEADERS
        seen.add(body["type"])
    assert seen == {*EVENTS, "webhook.test"}
