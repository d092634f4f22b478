"""The API document and outbound webhooks: the nine operations, admin only and never an API key;
every subscribable event type under `webhooks` with the signature headers; and what a receiver
gets validates against the entry of its type (the test event's against the one entry every
`webhook.test` shares with the publishers' connection test)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from contentplatform.events import catalog
from tests.conftest import Run
from tests.support.webhook_receiver import WebhookReceiver
from tests.webhooks.support import Hooks, emit

OPERATIONS = {
    "webhooks.listEndpoints": ("get", "/v1/webhooks/endpoints"),
    "webhooks.createEndpoint": ("post", "/v1/webhooks/endpoints"),
    "webhooks.getEndpoint": ("get", "/v1/webhooks/endpoints/{id}"),
    "webhooks.updateEndpoint": ("patch", "/v1/webhooks/endpoints/{id}"),
    "webhooks.deleteEndpoint": ("delete", "/v1/webhooks/endpoints/{id}"),
    "webhooks.rotateEndpointSecret": ("post", "/v1/webhooks/endpoints/{id}/rotate-secret"),
    "webhooks.testEndpoint": ("post", "/v1/webhooks/endpoints/{id}/test"),
    "webhooks.listDeliveries": ("get", "/v1/webhooks/endpoints/{id}/deliveries"),
    "webhooks.redeliver": ("post", "/v1/webhooks/deliveries/{id}/redeliver"),
}
SIGNATURE_HEADERS = {"webhook-id", "webhook-timestamp", "webhook-signature"}


def test_the_operations_are_documented_for_admins_without_api_keys(
    openapi_document: dict[str, Any],
):
    for operation_id, (method, path) in OPERATIONS.items():
        operation = openapi_document["paths"][path][method]
        assert operation["operationId"] == operation_id
        assert operation["tags"] == ["Webhooks"]
        assert operation["security"] == [{"bearerAuth": [], "organization": []}], operation_id
    created = openapi_document["paths"]["/v1/webhooks/endpoints"]["post"]
    events = created["requestBody"]["content"]["application/json"]["schema"]
    schemas = openapi_document["components"]["schemas"]
    listed = schemas[events["$ref"].rsplit("/", 1)[1]]["properties"]["events"]["items"]["enum"]
    assert listed == list(catalog.SUBSCRIBABLE)


def test_every_subscribable_type_is_documented_with_its_signature_headers(
    openapi_document: dict[str, Any],
):
    hooks = openapi_document["webhooks"]
    schemas = openapi_document["components"]["schemas"]
    for name in catalog.SUBSCRIBABLE:
        operation = hooks[name]["post"]
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert headers == SIGNATURE_HEADERS, name
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        documented = schemas[body["$ref"].rsplit("/", 1)[1]]
        assert set(documented["properties"]) == {"type", "timestamp", "data"}, name
        assert operation["tags"] == ["Webhooks"]
        assert documented["properties"]["type"]["const"] == name
        assert "410" in operation["responses"] and "5XX" in operation["responses"]
    assert not set(hooks) & {name for name, kind in catalog.TYPES.items() if not kind.subscribable}


def test_what_a_receiver_gets_is_what_the_document_says(
    hooks: Hooks, receiver: WebhookReceiver, run: Run, openapi_document: dict[str, Any]
):
    endpoint = hooks.create(receiver.url, events=["draft.status_changed"])
    receiver.trust(endpoint["secret"])
    moved = {"draft_id": "d1", "title": "Ours", "from": "reviewing", "to": "approved"}
    emit(run, hooks.tenant_id, "draft.status_changed", moved)
    receiver.wait_for(1)
    hooks.ok("webhooks.testEndpoint", {"id": endpoint["id"]})

    root = {"components": openapi_document["components"]}
    seen = []
    for request in receiver.received:
        body = request.json()
        operation = openapi_document["webhooks"][body["type"]]["post"]
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        Draft202012Validator({**schema, **root}).validate(body)
        assert request.verified and set(request.headers) >= SIGNATURE_HEADERS
        seen.append(body["type"])
    assert seen == ["draft.status_changed", "webhook.test"]
