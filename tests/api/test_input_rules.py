"""Every operation, read from the API document, holds its input to the kit's one rule (kit/text.py
through kit/schemas.py's Input), over REST and RPC: an integer past 64 bits is a 400 naming the
field, never a 500, and so is a NUL in any free string (query, path or body). An operation added
later is tried here the day it lands."""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.orgs import Org

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HUGE = 99_999_999_999_999_999_999  # past 64 bits: the database cannot even compare it
NUL = "fine\x00then"


def _resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
    return schema


def _kinds(document: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives a field's schema allows (`anyOf` of a nullable field unfolded)."""
    schema = _resolved(document, schema)
    options = schema.get("anyOf") or [schema]
    return [_resolved(document, option) for option in options]


def _fields(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every input field of an operation but its headers: name on the wire -> schema."""
    fields = {
        parameter["name"]: parameter["schema"]
        for parameter in operation.get("parameters", [])
        if parameter["in"] in ("query", "path")
    }
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        fields |= _resolved(document, body["schema"]).get("properties", {})
    return fields


def _is(kind: str, document: dict[str, Any], schema: dict[str, Any]) -> bool:
    """The field takes a value of this JSON type (`string:date-time` for a format), free of an
    enum, a format or a pattern."""
    kind, _, form = kind.partition(":")
    return any(
        option.get("type") == kind
        and option.get("format") == (form or None)
        and not ({"enum", "const", "pattern"} & option.keys())
        for option in _kinds(document, schema)
    )


def _operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (operation["operationId"], operation)
        for item in document["paths"].values()
        for operation in item.values()
    ]


# Valid values of the kinds an operation's other required fields may need, so that the field
# under test is what is wrong (FastAPI reports a missing query parameter before anything else).
VALID = {"uuid": lambda: str(uuid.uuid4()), "date-time": lambda: "2030-01-01T09:00:00Z"}


def _required_filled(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    """A valid value for each required path, query or body field of a kind in VALID."""
    required = {
        parameter["name"]: parameter["schema"]
        for parameter in operation.get("parameters", [])
        if parameter["in"] in ("query", "path") and parameter.get("required")
    }
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        schema = _resolved(document, body["schema"])
        properties = schema.get("properties", {})
        required |= {name: properties[name] for name in schema.get("required", [])}
    filled = {}
    for name, schema in required.items():
        forms = [option.get("format") for option in _kinds(document, schema)]
        form = next((form for form in forms if form in VALID), None)
        if form is not None:
            filled[name] = VALID[form]()
    return filled


def _named(
    org: Org,
    document: dict[str, Any],
    operation_id: str,
    operation: dict[str, Any],
    field: str,
    value: Any,
) -> Any:
    """The paths a 400 names when `field` of the operation is `value`; the status and the start
    of the body when the answer is not a 400."""
    data = _required_filled(document, operation)
    in_path = any(p["name"] == field and p["in"] == "path" for p in operation.get("parameters", []))
    # A URL cannot carry a raw NUL: in a REST path it goes percent-encoded, as a client sends it.
    data[field] = quote(str(value)) if in_path and org.call.transport == "rest" else value
    headers = {"x-tenant-id": str(org.tenant_id)}
    token, org_id = org.tokens["admin"], org.org
    if operation_id.startswith("admin."):
        # The platform's operators' operations admit a superadmin alone, and check its input
        # as any other once it is admitted.
        token, org_id = org.token(None, "root-input-rules", superadmin=True), None
    response = org.call(operation_id, data, token=token, org=org_id, headers=headers)
    if response.status_code != 400:
        return response.status_code, response.text[:200]
    return [error["path"] for error in response.json()["errors"]]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _offenders(
    tenant: Org, document: dict[str, Any], kind: str, value: Any, at_least: int = 10
) -> list[Any]:
    offenders = []
    tried = 0
    for operation_id, operation in _operations(document):
        for field, schema in _fields(document, operation).items():
            if not _is(kind, document, schema):
                continue
            tried += 1
            named = _named(tenant, document, operation_id, operation, field, value)
            # REST names a query parameter that only the operation's own input refuses by its
            # Python name (start_date), RPC by the wire name: reported, the transports differ.
            if not isinstance(named, list) or not {field, _snake(field)} & set(named):
                offenders.append((operation_id, field, named))
    assert tried >= at_least, f"only {tried} {kind} fields found: is the document read right?"
    return offenders


def test_every_integer_past_64_bits_is_a_400_naming_it(tenant, openapi_document):
    assert _offenders(tenant, openapi_document, "integer", HUGE) == []


def test_every_free_string_with_a_nul_is_a_400_naming_it(tenant, openapi_document):
    assert _offenders(tenant, openapi_document, "string", NUL) == []


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_every_instant_past_any_time_zone_is_a_400_naming_it(tenant, openapi_document, instant):
    # Year 1 at +05:00 is no instant in UTC at all; 9999-12-31 at -05:00 is in year 10000.
    assert _offenders(tenant, openapi_document, "string:date-time", instant, at_least=3) == []


@pytest.mark.own_org
def test_names_from_the_identity_provider_are_stored_plain_never_refused(call, token, org):
    # Not an input we can answer with a 400: the token is the identity provider's, signed.
    minted = token(
        org,
        "u-names",
        "admin",
        name="<b>Ada</b>\x00 \u202eLovelace",
        email="ada\x00@example.test",
        org_name="Acme\u200b <i>Roasters</i>\n" + "x" * 300,
    )
    response = call("system.whoami", token=minted, org=org)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["user"]["name"] == "Ada Lovelace"
    assert body["user"]["email"] == "ada@example.test"
    assert body["organization"]["name"] == ("Acme Roasters " + "x" * 300)[:255]


@pytest.mark.parametrize(
    "body",
    [b'{"title": "caf\xe9"}', b"[" * 100_000 + b"]" * 100_000],
    ids=["not-utf-8", "nested-past-the-parser"],
)
@pytest.mark.parametrize("path", ["/v1/drafts", "/api/rpc/drafts.createDraft"])
def test_a_body_json_cannot_read_is_a_400_not_a_500(tenant, body, path):
    headers = {
        "Authorization": f"Bearer {tenant.tokens['admin']}",
        "x-idp-org-id": tenant.org,
        "content-type": "application/json",
    }
    response = tenant.client.post(path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "BAD_REQUEST"
