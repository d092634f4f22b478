"""A stand-in for Webflow's Data API v2 (CMS collection items), in memory, on loopback.

One site and one collection, with a field schema a test may change (`fields`). It checks the
`Authorization: Bearer <token>` header (401 otherwise), the collection id in the path (404 for
another), and what is written: `fieldData` keys must be fields of the collection (400
`validation_error` "Field not described in schema" otherwise, as Webflow answers), required
fields must be there, slugs are unique. Errors take Webflow's shape `{code, message,
externalReference, details}`.

Endpoints (all under /v2): `GET sites/{id}`, `GET collections/{id}`, `GET
collections/{id}/items` (`slug`, `name` filters), `GET|PATCH collections/{id}/items/{item}`,
`POST collections/{id}/items` (staged; `isDraft` defaults to true, as it does since December
2024), `POST collections/{id}/items/publish` (`{"itemIds": [...]}`, copies the staged item to
`live`), `DELETE collections/{id}/items/{item}/live` (404 when it is not live), `POST
sites/{id}/assets` (`{fileName, fileHash}` -> `{id, uploadUrl, uploadDetails, hostedUrl}`), and
the storage's form upload at that `uploadUrl` (no bearer token, as S3's presigned form; the
file must match the MD5 `fileHash`), kept in `uploaded`.

    with WebflowSite(token="wf-token") as webflow:
        webflow.fail(Failure(429, headers={"retry-after": "30"}))
        webflow.fail(Failure(502, after=True), method="POST", path=webflow.items_path)
        config = WebflowConfig(apiBaseUrl=webflow.url, collectionId=webflow.collection_id, ...)
        ...
        assert webflow.live[item_id]["name"] == "Pricing"
"""

from __future__ import annotations

import copy
import email.parser
import email.policy
import hashlib
import itertools
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.targets.scripted import Answer, ScriptedServer, Seen

COLLECTION_ID = "6650a1b2c3d4e5f6a7b8c9d0"
SITE_ID = "6650a1b2c3d4e5f6a7b8c001"
START = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_CODES = {
    400: "validation_error",
    401: "not_authorized",
    403: "missing_scopes",
    404: "resource_not_found",
    409: "conflict",
    429: "too_many_requests",
}


def schema_field(slug: str, kind: str = "PlainText", *, required: bool = False) -> dict[str, Any]:
    return {
        "id": f"field-{slug}",
        "isEditable": True,
        "isRequired": required,
        "type": kind,
        "slug": slug,
        "displayName": slug.replace("-", " ").title(),
        "helpText": None,
    }


def blog_fields() -> list[dict[str, Any]]:
    """A blog posts collection as Webflow's blog template makes it."""
    return [
        schema_field("name", required=True),
        schema_field("slug", required=True),
        schema_field("post-body", "RichText"),
        schema_field("post-summary"),
        schema_field("seo-title"),
        schema_field("meta-description"),
        schema_field("main-image", "Image"),
    ]


class WebflowSite(ScriptedServer):
    def __init__(self, *, token: str = "wf-site-token-0123456789abcdef") -> None:
        super().__init__()
        self.token = token
        self.site_id = SITE_ID
        self.collection_id = COLLECTION_ID
        self.fields = blog_fields()
        self.items: dict[str, dict[str, Any]] = {}  # the staged items, by id
        self.live: dict[str, dict[str, Any]] = {}  # published fieldData, by item id
        self.assets: dict[str, bytes] = {}  # files copied into Image fields, by file id
        # Site assets: {id, fileName, fileHash, hostedUrl, data (None until uploaded)}.
        self.site_assets: dict[str, dict[str, Any]] = {}
        self.upload_path = "/asset-uploads"
        self.collection_path = f"/v2/collections/{COLLECTION_ID}"
        self.items_path = f"{self.collection_path}/items"
        self._ids = itertools.count(1)
        self._ticks = itertools.count(1)

    def add_item(self, field_data: dict[str, Any], *, live: bool = False) -> str:
        """An item made by someone in the Webflow editor."""
        with self.lock:
            item = self._new_item({"isDraft": not live, "fieldData": field_data})
            if live:
                self._publish(item)
            return str(item["id"])

    # The protocol.

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return _error(code or DEFAULT_CODES.get(status, "internal_error"), message)

    def handle(self, request: Seen) -> Answer:
        if request.method == "POST" and request.path == self.upload_path:
            return self._form_upload(request)
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return 401, {}, _error("not_authorized", "Request not authorized")
        parts = request.path.strip("/").split("/")
        if parts[:2] == ["v2", "sites"] and parts[3:] == ["assets"] and request.method == "POST":
            if parts[2] != self.site_id:
                return 404, {}, _error("resource_not_found", "Site not found")
            return self._new_asset(request)
        if parts[:2] == ["v2", "sites"] and len(parts) == 3:
            if parts[2] != self.site_id:
                return 404, {}, _error("resource_not_found", "Site not found")
            return 200, {}, {"id": self.site_id, "displayName": "Acme Blog", "shortName": "acme"}
        if parts[:2] != ["v2", "collections"] or len(parts) < 3:
            return 404, {}, _error("route_not_found", "Requested route not found")
        if parts[2] != self.collection_id:
            return 404, {}, _error("resource_not_found", "Collection not found")
        route = (request.method, *parts[3:])
        match route:
            case ("GET",):
                return 200, {}, self._collection()
            case ("GET", "items"):
                return 200, {}, self._list(request.query)
            case ("POST", "items"):
                return self._create(request)
            case ("POST", "items", "publish"):
                return self._publish_items(request)
            case ("GET", "items", item_id):
                item = self.items.get(item_id)
                return (200, {}, item) if item else _item_not_found()
            case ("PATCH", "items", item_id):
                return self._update(item_id, request)
            case ("DELETE", "items", item_id, "live"):
                if item_id not in self.live:
                    return _item_not_found()
                del self.live[item_id]
                return 204, {}, b""
        return 404, {}, _error("route_not_found", "Requested route not found")

    # Endpoints.

    def _new_asset(self, request: Seen) -> Answer:
        body = _json(request) or {}
        name, digest = body.get("fileName"), body.get("fileHash")
        if not isinstance(name, str) or not isinstance(digest, str) or len(digest) != 32:
            return 400, {}, _invalid("fileHash", "fileName and an MD5 fileHash are required")
        asset_id = f"asset{next(self._ids)}"
        hosted = f"https://uploads-ssl.webflow.test/{self.site_id}/{asset_id}_{name}"
        self.site_assets[asset_id] = {
            "id": asset_id,
            "fileName": name,
            "fileHash": digest,
            "hostedUrl": hosted,
            "data": None,
        }
        details = {"key": f"{self.site_id}/{asset_id}_{name}", "acl": "public-read"}
        return (
            200,
            {},
            {
                "id": asset_id,
                "uploadUrl": f"{self.url}{self.upload_path}",
                "uploadDetails": details,
                "hostedUrl": hosted,
                "contentType": "image/jpeg",
            },
        )

    def _form_upload(self, request: Seen) -> Answer:
        """S3's presigned form POST: the fields it was given, then `file`; 204."""
        header = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            header + request.body
        )
        fields: dict[str, bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
        key = fields.get("key", b"").decode()
        found = next(
            (a for a in self.site_assets.values() if key.endswith(f"{a['id']}_{a['fileName']}")),
            None,
        )
        data = fields.get("file")
        if found is None or data is None:
            return 400, {}, b"<Error><Code>InvalidArgument</Code></Error>"
        if hashlib.md5(data, usedforsecurity=False).hexdigest() != found["fileHash"]:
            return 400, {}, b"<Error><Code>BadDigest</Code></Error>"
        found["data"] = data
        return 204, {}, b""

    def _collection(self) -> dict[str, Any]:
        return {
            "id": self.collection_id,
            "displayName": "Blog Posts",
            "singularName": "Blog Post",
            "slug": "post",
            "createdOn": START.isoformat().replace("+00:00", "Z"),
            "lastUpdated": START.isoformat().replace("+00:00", "Z"),
            "fields": self.fields,
        }

    def _list(self, query: dict[str, str]) -> dict[str, Any]:
        found = list(self.items.values())
        for name in ("slug", "name"):
            if name in query:
                found = [item for item in found if item["fieldData"].get(name) == query[name]]
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 100))
        page = found[offset : offset + limit]
        return {
            "items": page,
            "pagination": {"limit": limit, "offset": offset, "total": len(found)},
        }

    def _create(self, request: Seen) -> Answer:
        body = _json(request)
        if body is None or not isinstance(body.get("fieldData"), dict):
            return 400, {}, _invalid("fieldData", "fieldData is required")
        problem = self._field_problem(body["fieldData"], creating=True)
        if problem:
            return problem
        self._copy_images(body["fieldData"])
        return 202, {}, self._new_item(body)

    def _update(self, item_id: str, request: Seen) -> Answer:
        item = self.items.get(item_id)
        if item is None:
            return _item_not_found()
        body = _json(request)
        if body is None:
            return 400, {}, _invalid("body", "Expected a JSON object")
        field_data = body.get("fieldData") or {}
        problem = self._field_problem(field_data, creating=False, item_id=item_id)
        if problem:
            return problem
        self._copy_images(field_data)
        item["fieldData"].update(field_data)
        for flag in ("isDraft", "isArchived"):
            if flag in body:
                item[flag] = bool(body[flag])
        item["lastUpdated"] = self._now()
        return 200, {}, item

    def _publish_items(self, request: Seen) -> Answer:
        body = _json(request)
        ids = body.get("itemIds") if body else None
        if not isinstance(ids, list) or not ids:
            return 400, {}, _invalid("itemIds", "itemIds must be a non-empty list")
        published, errors = [], []
        for item_id in ids:
            item = self.items.get(item_id)
            if item is None:
                errors.append(f"Item {item_id} not found")
                continue
            self._publish(item)
            published.append(item_id)
        return 202, {}, {"publishedItemIds": published, "errors": errors}

    def _copy_images(self, field_data: dict[str, Any]) -> None:
        """Webflow copies an Image field's file from its `url` into its asset CDN, and keeps
        `{fileId, url, alt}` (the CDN's URL)."""
        images = {field["slug"] for field in self.fields if field["type"] == "Image"}
        for slug in images & field_data.keys():
            given = field_data[slug]
            with urllib.request.urlopen(given["url"], timeout=10) as answer:
                file_id = f"6650c000000000000000{len(self.assets) + 1:04x}"
                self.assets[file_id] = answer.read()
            field_data[slug] = {
                "fileId": file_id,
                "url": f"https://cdn.prod.website-files.com/{file_id}.img",
                "alt": given.get("alt"),
            }

    # The store.

    def _new_item(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        item_id = f"6650b000000000000000{next(self._ids):04x}"
        item = {
            "id": item_id,
            "cmsLocaleId": "6650a1b2c3d4e5f6a7b8c0aa",
            "lastPublished": None,
            "lastUpdated": now,
            "createdOn": now,
            "isArchived": bool(body.get("isArchived", False)),
            "isDraft": bool(body.get("isDraft", True)),
            "fieldData": dict(body["fieldData"]),
        }
        self.items[item_id] = item
        return item

    def _publish(self, item: dict[str, Any]) -> None:
        item["isDraft"] = False
        item["lastPublished"] = self._now()
        self.live[item["id"]] = copy.deepcopy(item["fieldData"])

    def _field_problem(
        self, field_data: dict[str, Any], *, creating: bool, item_id: str | None = None
    ) -> Answer | None:
        known = {field["slug"]: field for field in self.fields}
        details = [
            {"param": f"fieldData.{name}", "description": "Field not described in schema"}
            for name in field_data
            if name not in known
        ]
        if creating:
            details += [
                {"param": f"fieldData.{slug}", "description": "Field is required"}
                for slug, field in known.items()
                if field["isRequired"] and not field_data.get(slug)
            ]
        slug = field_data.get("slug")
        if slug and any(
            other["fieldData"].get("slug") == slug and other["id"] != item_id
            for other in self.items.values()
        ):
            details.append(
                {
                    "param": "fieldData.slug",
                    "description": f"Unique value is already in database: '{slug}'",
                }
            )
        if details:
            return 400, {}, _error("validation_error", "Validation Error", details)
        return None

    def _now(self) -> str:
        # A second per write, so every write has a lastUpdated of its own.
        moment = START + timedelta(seconds=next(self._ticks))
        return moment.isoformat().replace("+00:00", "Z")


def _json(request: Seen) -> dict[str, Any] | None:
    try:
        body = request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _error(code: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"code": code, "message": message, "externalReference": None, "details": details or []}


def _invalid(param: str, description: str) -> dict[str, Any]:
    return _error(
        "validation_error", "Validation Error", [{"param": param, "description": description}]
    )


def _item_not_found() -> Answer:
    return 404, {}, _error("resource_not_found", "Item not found")
