"""The 13 Documents operations end to end over real HTTP (REST and RPC): the upload flow and
ingestion of real files, every bound, roles, tenancy, dedupe and versions, credits, list filters
and its cache, knowledge metadata, rename, archive, soft delete and the content view."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.documents.support import (
    OLE2_DOC,
    Docs,
    available_credits,
    delete_object,
    document_row,
    hold_all_but,
    put_object,
    reservations,
    searched,
)
from tests.support.bounds import MALFORMED_IDS
from tests.support.files import PROSE, docx_file, html, pdf
from tests.support.openapi import operation_ids
from tests.support.orgs import new_org, org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

SQLITE = not os.environ.get("CONTENTPLATFORM_TEST_DATABASE_URL")  # as tests/support/backends.py

# The Document record: the reference's fields (snake_case, as there) and ours besides.
REFERENCE_FIELDS = {
    "id",
    "filename",
    "file_type",
    "storage_path",
    "source_metadata",
    "status",
    "chunk_count",
    "document_version",
    "created_at",
    "knowledge",
    "usage",
}
RECORD_FIELDS = REFERENCE_FIELDS | {
    "source",
    "content_hash",
    "error",
    "archived_at",
    "size_bytes",
    "updated_at",
}
NO_USAGE = {"jobs": [], "generationCount": 0, "lastUsedAt": None}
NO_KNOWLEDGE = {"isPrimary": False, "description": None, "tags": [], "language": None}
CONTENT_LIMIT = 250_000


docs = org_fixture(Docs)
other = org_fixture(Docs, second=True)  # a second tenant, through the same transport


def text_file(*paragraphs: str) -> bytes:
    return "\n\n".join(paragraphs).encode()


def words(text: str) -> str:
    return " ".join(text.split())


# --- the upload flow and the record -----------------------------------------------------------


def test_upload_url_is_this_services_signed_url_under_the_organization(docs, client):
    target = docs.ok(
        "documents.createUploadUrl",
        {"filename": "Field guide.pdf", "fileType": "pdf", "contentLength": 1234},
        role="editor",
    )
    assert set(target) == {"storage_path", "upload_url", "method", "headers", "expires_at"}
    assert target["storage_path"].startswith(f"{docs.org}/")
    assert target["storage_path"].endswith(".pdf")
    base = str(client.base_url).rstrip("/")
    assert target["upload_url"].startswith(f"{base}/v1/uploads/{docs.org}/")
    assert "signature=" in target["upload_url"]
    assert target["method"] == "PUT"
    assert target["headers"] == {"Content-Type": "application/pdf"}
    # Two uploads of one name never share a path.
    again = docs.ok(
        "documents.createUploadUrl",
        {"filename": "Field guide.pdf", "fileType": "pdf", "contentLength": 1234},
        role="editor",
    )
    assert again["storage_path"] != target["storage_path"]


@pytest.mark.own_org
def test_pdf_upload_confirm_and_ingestion_to_ready(docs, settings):
    data = pdf(PROSE * 3, "Crop rotation keeps pests guessing and the soil balanced.")
    path = docs.upload("Soil handbook.pdf", "pdf", data)
    confirmed = docs.confirm("Soil handbook.pdf", "pdf", path)
    assert confirmed.status_code == 200, confirmed.text
    body = confirmed.json()
    assert set(body) == RECORD_FIELDS | {"unchanged"}
    assert body["unchanged"] is False
    assert body["filename"] == "Soil handbook.pdf"
    assert body["file_type"] == "pdf"
    assert body["storage_path"] == path
    assert body["source"] == "upload"
    assert body["status"] in ("pending", "processing", "ready")
    assert body["document_version"] == 1
    assert body["content_hash"] == hashlib.sha256(data).hexdigest()
    assert body["size_bytes"] == len(data)
    assert body["error"] is None
    assert body["archived_at"] is None
    assert body["knowledge"] == NO_KNOWLEDGE
    assert body["usage"] == NO_USAGE
    uuid.UUID(body["id"])

    document = docs.wait(body["id"])
    assert set(document) == RECORD_FIELDS
    assert document["status"] == "ready", document
    assert document["chunk_count"] > 0
    assert document["error"] is None
    assert document["usage"] == NO_USAGE
    assert document["created_at"] == body["created_at"]
    assert {k: document[k] for k in ("id", "content_hash", "storage_path", "document_version")} == {
        k: body[k] for k in ("id", "content_hash", "storage_path", "document_version")
    }

    content = docs.ok("documents.getContent", {"id": body["id"]}, role="member")
    assert set(content) == {"id", "filename", "file_type", "status", "content", "contentError"}
    assert (content["id"], content["filename"], content["file_type"], content["status"]) == (
        body["id"],
        "Soil handbook.pdf",
        "pdf",
        "ready",
    )
    assert content["contentError"] is None
    assert "Composting turns kitchen scraps" in content["content"]
    assert "Crop rotation keeps pests guessing" in words(content["content"])

    listed = docs.list()
    assert listed["total"] == 1
    assert listed["data"] == [document]
    assert docs.ok("documents.getStats", role="member") == {
        "total": 1,
        "pending": 0,
        "processing": 0,
        "ready": 1,
        "error": 0,
    }
    # The credits were reserved once for it, and committed on success.
    assert reservations(settings, docs.tenant_id) == [
        (f"{docs.tenant_id}:{body['id']}:{body['content_hash']}:v1", "committed")
    ]


@pytest.mark.own_org
def test_docx_html_txt_and_md_are_extracted_and_chunked(docs):
    files = {
        "Brand book.docx": docx_file(
            "Brand voice",
            ["We write plainly and warmly.", "Short sentences beat long ones."],
            [["Channel", "Tone"], ["Newsletter", "Friendly"], ["Press", "Formal"]],
        ),
        "Landing.html": html("Garden tools", "Our rakes are forged from recycled steel."),
        "Legacy page.htm": html("Seed library", "Borrow heirloom seeds every spring."),
        "Notes.txt": text_file("Plain notes about watering.", "Water early in the morning."),
        "Readme.md": text_file("# Planting calendar", "Sow peas in March.", "- beans\n- kale"),
    }
    submitted = {name: docs.submit(name, data)["id"] for name, data in files.items()}
    content = {}
    for name, document_id in submitted.items():
        document = docs.wait(document_id)
        assert document["status"] == "ready", document
        assert document["chunk_count"] > 0, document
        content[name] = docs.ok("documents.getContent", {"id": document_id}, role="member")
        assert content[name]["contentError"] is None

    brand = words(content["Brand book.docx"]["content"])
    for text in ("Brand voice", "We write plainly and warmly.", "Newsletter", "Friendly", "Press"):
        assert text in brand
    pages = {"Landing.html": "forged from recycled steel", "Legacy page.htm": "heirloom"}
    for name, text in pages.items():
        page = content[name]["content"]
        assert text in page
        for hidden in ("tracking-code-should-not-appear", "also-not-content", "window.secret"):
            assert hidden not in page
        assert "color: red" not in page
    assert "Water early in the morning." in content["Notes.txt"]["content"]
    assert "Sow peas in March." in content["Readme.md"]["content"]
    assert {d["file_type"] for d in docs.list()["data"]} == {"docx", "html", "htm", "txt", "md"}


@pytest.mark.own_org
def test_legacy_doc_ends_in_error_with_a_reason_and_retry_keeps_its_id(docs, settings):
    antiword = shutil.which("antiword") is not None
    submitted = docs.submit("Old contract.doc", OLE2_DOC)
    key = f"{docs.tenant_id}:{submitted['id']}:{submitted['content_hash']}:v1"
    document = docs.wait(submitted["id"])
    if not antiword:
        assert document["status"] == "error", document
        assert "antiword" in document["error"]
        assert document["chunk_count"] == 0
        content = docs.ok("documents.getContent", {"id": document["id"]}, role="member")
        assert content["content"] == ""
        assert content["status"] == "error"
        assert "antiword" in content["contentError"]
        # Its reservation was released, not spent.
        assert reservations(settings, docs.tenant_id) == [(key, "released")]

    if document["status"] == "error":
        assert docs.ok("documents.retryIngestion", {"id": document["id"]}, role="editor") == {
            "success": True
        }
        retried = docs.wait(document["id"])
        assert retried["id"] == document["id"]
        assert retried["document_version"] == 1
        assert "antiword" in retried["error"]
        # It went through ingestion again: a second attempt with a reservation of its own.
        assert document_row(settings, document["id"]).ingest_attempt == 1
        assert [k for k, _ in reservations(settings, docs.tenant_id)] == [key, f"{key}:retry1"]
        assert docs.list(status="error")["total"] == 1

    # Only a document in error can be retried: a ready one or one never uploaded is 409.
    ready = docs.ingest("Fine.txt", text_file("Nothing wrong here."))
    body = problem(docs.request("documents.retryIngestion", {"id": ready["id"]}), 409, "CONFLICT")
    assert "ready" in body["detail"]
    pending = docs.create("Never uploaded.pdf")
    problem(docs.request("documents.retryIngestion", {"id": pending["id"]}), 409, "CONFLICT")
    assert docs.ok("documents.getById", {"id": ready["id"]})["status"] == "ready"


# --- bounds and enums -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": 100_001}, "offset"),
        ({"offset": -1}, "offset"),
        ({"search": "x" * 256}, "search"),
        ({"status": "done"}, "status"),
        ({"fileType": "exe"}, "fileType"),
        ({"fileType": "html"}, "fileType"),  # the reference's list filter has no html
        ({"source": "email"}, "source"),
        ({"sortBy": "size"}, "sortBy"),
        ({"sortOrder": "up"}, "sortOrder"),
        ({"archived": "yes"}, "archived"),
    ],
)
def test_list_refuses_out_of_bounds_and_unknown_values(docs, query, field):
    body = problem(docs.request("documents.list", query, role="member"), 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == [field], body


@pytest.mark.own_org
def test_list_accepts_its_bounds_and_has_defaults(docs):
    assert docs.list() == {"data": [], "total": 0, "limit": 50, "offset": 0}
    for query in (
        {"limit": 1},
        {"limit": 100},
        {"offset": 100_000},
        {"search": "x" * 255},
        {"status": "processing", "fileType": "url", "source": "website_scan"},
        {"sortBy": "filename", "sortOrder": "asc", "archived": "include"},
    ):
        page = docs.list(**query)
        assert page["data"] == [] and page["total"] == 0
        assert page["limit"] == query.get("limit", 50)
        assert page["offset"] == query.get("offset", 0)


@pytest.mark.own_org
@pytest.mark.parametrize("operation", ["documents.create", "documents.confirmUpload"])
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"filename": "x" * 256}, "filename"),
        ({"filename": ""}, "filename"),
        ({"storagePath": None}, "storagePath"),  # None: 1025 characters under the org's prefix
        ({"storagePath": ""}, "storagePath"),
        ({"fileType": "exe"}, "fileType"),
        ({"fileType": "url"}, "fileType"),
    ],
)
def test_create_and_confirm_refuse_out_of_bounds_input(docs, operation, change, field):
    data = {"filename": "Guide.pdf", "fileType": "pdf", "storagePath": f"{docs.org}/a/guide.pdf"}
    data.update(change)
    if data["storagePath"] is None:
        data["storagePath"] = f"{docs.org}/" + "p" * (1025 - len(docs.org) - 1)
        assert len(data["storagePath"]) == 1025
    body = problem(docs.request(operation, data, role="editor"), 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == [field], body
    missing = {k: v for k, v in data.items() if k != field}
    body = problem(docs.request(operation, missing, role="editor"), 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == [field], body
    assert docs.list()["total"] == 0


@pytest.mark.own_org
def test_create_accepts_the_longest_filename_and_storage_path(docs):
    filename = "f" * 251 + ".pdf"
    path = f"{docs.org}/" + "p" * (1024 - len(docs.org) - 1)
    document = docs.ok(
        "documents.create",
        {"filename": filename, "fileType": "pdf", "storagePath": path},
        role="editor",
    )
    assert (document["filename"], document["storage_path"]) == (filename, path)
    assert document["status"] == "pending"
    assert document["content_hash"] is None and document["size_bytes"] is None
    assert document["knowledge"] == NO_KNOWLEDGE and document["usage"] == NO_USAGE
    assert set(document) == RECORD_FIELDS
    # A storagePath a live document already uses is taken.
    again = {"filename": "other.pdf", "fileType": "pdf", "storagePath": path}
    problem(docs.request("documents.create", again, role="editor"), 409, "CONFLICT")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"filename": "x" * 256}, "filename"),
        ({"fileType": "exe"}, "fileType"),
        ({"contentLength": 0}, "contentLength"),
        ({"contentLength": 50 * 1024 * 1024 + 1}, "contentLength"),
    ],
)
def test_upload_url_refuses_out_of_bounds_input(docs, change, field):
    data = {"filename": "Guide.pdf", "fileType": "pdf", "contentLength": 100, **change}
    body = problem(
        docs.request("documents.createUploadUrl", data, role="editor"), 400, "BAD_REQUEST"
    )
    assert [e["path"] for e in body["errors"]] == [field], body


@pytest.mark.own_org
@pytest.mark.parametrize(
    "make_path",
    [
        pytest.param(lambda org, other: f"{other}/uploads/guide.pdf", id="other-org"),
        pytest.param(lambda org, other: f"{org}/../{other}/guide.pdf", id="dot-dot"),
        pytest.param(lambda org, other: f"{org}/a/../../{other}/guide.pdf", id="dot-dot-deep"),
        pytest.param(lambda org, other: f"{org}\\..\\{other}\\guide.pdf", id="backslash"),
        pytest.param(lambda org, other: f"{org}/a\x00.pdf", id="nul"),
        pytest.param(lambda org, other: f"/{org}/guide.pdf", id="absolute"),
        pytest.param(lambda org, other: f"{org}/%2e%2e/{other}/guide.pdf", id="encoded-dot-dot"),
        pytest.param(lambda org, other: f"{org}%2f..%2f{other}/guide.pdf", id="encoded-slash"),
        pytest.param(lambda org, other: f"{org}_evil/guide.pdf", id="org-prefix-lookalike"),
        pytest.param(lambda org, other: org, id="org-alone"),
    ],
)
def test_storage_path_rules_on_create_and_confirm(docs, make_path):
    path = make_path(docs.org, new_org())
    for operation in ("documents.create", "documents.confirmUpload"):
        data = {"filename": "guide.pdf", "fileType": "pdf", "storagePath": path}
        body = problem(docs.request(operation, data, role="editor"), 400, "BAD_REQUEST")
        assert [e["path"] for e in body["errors"]] == ["storagePath"], (operation, body)
    assert docs.list()["total"] == 0


def test_bulk_delete_takes_1_to_100_uuids(docs):
    for ids, field in (([], "ids"), ([str(uuid.uuid4()) for _ in range(101)], "ids")):
        body = problem(docs.request("documents.bulkDelete", {"ids": ids}), 400, "BAD_REQUEST")
        assert [e["path"] for e in body["errors"]] == [field], body
    body = problem(
        docs.request("documents.bulkDelete", {"ids": [str(uuid.uuid4()), "not-a-uuid"]}),
        400,
        "BAD_REQUEST",
    )
    assert [e["path"] for e in body["errors"]] == ["ids.1"], body
    hundred = [str(uuid.uuid4()) for _ in range(100)]
    assert docs.ok("documents.bulkDelete", {"ids": hundred}) == {"success": True, "deleted": 0}


ID_OPERATIONS = {
    "documents.getById": {},
    "documents.delete": {},
    "documents.getContent": {},
    "documents.updateKnowledgeMetadata": {"metadata": {"description": "x"}},
    "documents.rename": {"filename": "new.pdf"},
    "documents.archive": {},
    "documents.retryIngestion": {},
}


@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
def test_malformed_id_is_400_naming_the_id(docs, operation, bad_id):
    data = {"id": bad_id, **ID_OPERATIONS[operation]}
    body = problem(docs.request(operation, data), 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == ["id"], body


@pytest.mark.parametrize("operation", sorted(ID_OPERATIONS))
def test_unknown_id_is_404(docs, operation):
    data = {"id": str(uuid.uuid4()), **ID_OPERATIONS[operation]}
    problem(docs.request(operation, data), 404, "NOT_FOUND")


# --- identity, roles and tenancy --------------------------------------------------------------


def all_inputs(org: str, document_id: str) -> dict[str, dict]:
    """A valid input for each of the 13 operations."""
    path = f"{org}/uploads/x/guide.txt"
    return {
        "documents.list": {},
        "documents.getStats": {},
        "documents.create": {"filename": "a.txt", "fileType": "txt", "storagePath": path},
        "documents.createUploadUrl": {"filename": "a.txt", "fileType": "txt", "contentLength": 5},
        "documents.confirmUpload": {"filename": "a.txt", "fileType": "txt", "storagePath": path},
        "documents.bulkDelete": {"ids": [document_id]},
        **{op: {"id": document_id, **extra} for op, extra in ID_OPERATIONS.items()},
    }


ALL_OPERATIONS = sorted(all_inputs("org", "id"))
EDITOR_OPERATIONS = {
    "documents.create",
    "documents.createUploadUrl",
    "documents.confirmUpload",
    "documents.updateKnowledgeMetadata",
    "documents.rename",
    "documents.archive",
    "documents.retryIngestion",
}
ADMIN_OPERATIONS = {"documents.delete", "documents.bulkDelete"}


def test_there_are_13_documents_operations(openapi_document):
    found = operation_ids(openapi_document, "documents.")
    assert found == set(ALL_OPERATIONS)
    assert len(found) == 13


@pytest.mark.parametrize("operation", ALL_OPERATIONS)
def test_without_token_is_401(call, org, operation):
    data = all_inputs(org, str(uuid.uuid4()))[operation]
    problem(call(operation, data, org=org), 401, "UNAUTHORIZED")
    problem(call(operation, data, token="not-a-jwt", org=org), 401, "UNAUTHORIZED")


@pytest.mark.own_org
def test_each_role_is_refused_what_it_may_not_do(docs):
    document = docs.create("Plan.txt")
    inputs = all_inputs(docs.org, document["id"])
    for operation in sorted(EDITOR_OPERATIONS | ADMIN_OPERATIONS):
        body = problem(docs.request(operation, inputs[operation], role="member"), 403, "FORBIDDEN")
        assert "member" in body["detail"]
    for operation in sorted(ADMIN_OPERATIONS):
        body = problem(docs.request(operation, inputs[operation], role="editor"), 403, "FORBIDDEN")
        assert "admin" in body["detail"]
    # Nothing happened, and a member still reads everything.
    assert docs.ok("documents.getById", {"id": document["id"]}, role="member") == document
    assert docs.list(role="member")["data"] == [document]
    assert docs.ok("documents.getStats", role="member")["pending"] == 1
    content = docs.ok("documents.getContent", {"id": document["id"]}, role="member")
    assert content["content"] == "" and content["contentError"]
    # An editor does the editor's part.
    renamed = {"id": document["id"], "filename": "Plan B"}
    assert docs.ok("documents.rename", renamed, role="editor") == {"success": True}
    assert docs.ok("documents.archive", {"id": document["id"]}, role="editor") == {"success": True}
    assert docs.ok("documents.delete", {"id": document["id"]}, role="admin") == {"success": True}


@pytest.mark.own_org
def test_a_second_tenant_cannot_see_or_touch_the_first_tenants_documents(docs, other, settings):
    mine = docs.ingest("Secret plan.txt", text_file("The secret ingredient is smoked paprika."))
    pending = docs.create("Pending.pdf")
    theirs = other.create("Theirs.pdf")
    for document in (mine, pending):
        for operation, extra in ID_OPERATIONS.items():
            response = other.request(operation, {"id": document["id"], **extra})
            problem(response, 404, "NOT_FOUND")
    assert other.ok("documents.bulkDelete", {"ids": [mine["id"], pending["id"]]}) == {
        "success": True,
        "deleted": 0,
    }
    assert other.list(archived="include")["data"] == [theirs]
    assert other.list(search="secret")["total"] == 0
    assert other.ok("documents.getStats") == {
        "total": 1,
        "pending": 1,
        "processing": 0,
        "ready": 0,
        "error": 0,
    }
    # Its upload is the first tenant's object: confirming that path is refused.
    response = other.confirm("Secret plan.txt", "txt", mine["storage_path"])
    body = problem(response, 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == ["storagePath"]
    problem(
        other.request(
            "documents.create",
            {"filename": "x.txt", "fileType": "txt", "storagePath": mine["storage_path"]},
            role="editor",
        ),
        400,
        "BAD_REQUEST",
    )
    assert searched(settings, other.tenant_id, "paprika") == set()
    # The first tenant's documents are untouched.
    assert docs.ok("documents.getById", {"id": mine["id"]}) == mine
    assert docs.ok("documents.getById", {"id": pending["id"]}) == pending
    assert searched(settings, docs.tenant_id, "paprika") == {mine["id"]}
    assert docs.ok("documents.bulkDelete", {"ids": [theirs["id"]]})["deleted"] == 0
    assert other.ok("documents.getById", {"id": theirs["id"]}) == theirs


# --- confirmUpload ----------------------------------------------------------------------------


@pytest.mark.own_org
def test_confirm_checks_the_content_not_the_name(docs):
    pdf_bytes = pdf("A real PDF.")
    cases = [
        ("Report.docx", "docx", pdf_bytes),  # PDF bytes confirmed as docx
        ("Notes.pdf", "pdf", b"Just plain text, not a PDF at all.\n"),
        ("Old.doc", "doc", pdf_bytes),
        ("Page.html", "html", b"plain words without any markup\n"),
        ("Notes.txt", "txt", pdf_bytes),
    ]
    for filename, file_type, data in cases:
        path = docs.upload(filename, file_type, data)
        body = problem(docs.confirm(filename, file_type, path), 400, "BAD_REQUEST")
        assert [e["path"] for e in body["errors"]] == ["fileType"], body
        assert file_type in body["detail"]
    assert docs.list()["total"] == 0


def test_confirm_without_an_upload_is_400(docs):
    # A path of the organization where nothing was put, uploaded-to or not.
    never = f"{docs.org}/uploads/{uuid.uuid4()}/ghost.pdf"
    body = problem(docs.confirm("ghost.pdf", "pdf", never), 400, "BAD_REQUEST")
    assert [e["path"] for e in body["errors"]] == ["storagePath"]
    registered = docs.create("Registered.pdf")
    response = docs.confirm("Registered.pdf", "pdf", registered["storage_path"])
    problem(response, 400, "BAD_REQUEST")
    assert docs.ok("documents.getById", {"id": registered["id"]}) == registered


@pytest.mark.own_org
def test_same_content_confirmed_again_is_the_same_document_and_reserves_nothing(docs, settings):
    data = text_file("Quarterly newsletter.", PROSE)
    path = docs.upload("Newsletter.txt", "txt", data)
    first = docs.confirm("Newsletter.txt", "txt", path).json()
    assert first["unchanged"] is False
    # At once, before its ingestion ends: the same path again...
    again = docs.confirm("Newsletter.txt", "txt", path)
    assert again.status_code == 200, again.text
    assert again.json()["unchanged"] is True
    assert again.json()["id"] == first["id"]
    ready = docs.wait(first["id"])
    assert ready["status"] == "ready"
    held = reservations(settings, docs.tenant_id)
    assert len(held) == 1
    credits_before = available_credits(settings, docs.tenant_id)
    # ...then the same bytes at another path, under another name.
    other_path = docs.upload("Copy of newsletter.txt", "txt", data)
    duplicate = docs.confirm("Copy of newsletter.txt", "txt", other_path)
    assert duplicate.status_code == 200, duplicate.text
    body = duplicate.json()
    assert body["unchanged"] is True
    assert body["id"] == first["id"]
    assert body["storage_path"] == path
    assert body["filename"] == "Newsletter.txt"
    assert body["document_version"] == 1
    assert body["status"] == "ready"
    assert reservations(settings, docs.tenant_id) == held
    assert available_credits(settings, docs.tenant_id) == credits_before
    assert docs.list()["total"] == 1
    assert docs.ok("documents.getById", {"id": first["id"]}) == ready


@pytest.mark.own_org
def test_other_content_at_the_same_path_is_the_next_version(docs, settings):
    path = f"{docs.org}/library/handbook.txt"
    registered = docs.create("Handbook.txt", path=path)
    v1 = text_file("Handbook, first edition.", "Our mascot is the pangolin.")
    put_object(settings, path, v1)
    confirmed = docs.confirm("Handbook.txt", "txt", path).json()
    assert confirmed["id"] == registered["id"]
    assert (confirmed["document_version"], confirmed["unchanged"]) == (1, False)
    first = docs.wait(registered["id"])
    assert first["status"] == "ready"
    assert searched(settings, docs.tenant_id, "pangolin") == {registered["id"]}

    v2 = text_file("Handbook, second edition.", "Our mascot is now the axolotl.")
    put_object(settings, path, v2)
    response = docs.confirm("Handbook v2.txt", "txt", path)
    assert response.status_code == 200, response.text
    second = response.json()
    assert second["id"] == registered["id"]
    assert second["unchanged"] is False
    assert second["document_version"] == 2
    assert second["content_hash"] == hashlib.sha256(v2).hexdigest()
    assert second["filename"] == "Handbook v2.txt"
    assert second["created_at"] == registered["created_at"]
    ready = docs.wait(registered["id"])
    assert (ready["status"], ready["document_version"]) == ("ready", 2)
    assert ready["chunk_count"] > 0
    content = docs.ok("documents.getContent", {"id": registered["id"]})["content"]
    assert "axolotl" in content and "pangolin" not in content
    assert searched(settings, docs.tenant_id, "axolotl") == {registered["id"]}
    assert searched(settings, docs.tenant_id, "pangolin") == set()
    assert document_row(settings, registered["id"]).text_path == (
        f"{docs.org}/derived/documents/{registered['id']}/v2.txt"
    )
    tenant = docs.tenant_id
    assert reservations(settings, tenant) == [
        (f"{tenant}:{registered['id']}:{hashlib.sha256(v1).hexdigest()}:v1", "committed"),
        (f"{tenant}:{registered['id']}:{hashlib.sha256(v2).hexdigest()}:v2", "committed"),
    ]
    assert docs.list()["total"] == 1
    # Confirming version 2 again changes nothing.
    same = docs.confirm("Handbook v2.txt", "txt", path).json()
    assert (same["id"], same["unchanged"], same["document_version"]) == (ready["id"], True, 2)
    assert len(reservations(settings, tenant)) == 2


@pytest.mark.own_org
def test_confirm_without_enough_credits_is_402_saying_what_is_left(docs, settings):
    docs.ok("documents.list")  # the tenant exists from here on
    hold_all_but(settings, docs.tenant_id, left=1)
    big = ("Large file. " * 100_000).encode()  # 1.2 MB: 2 credits (one per started megabyte)
    path = docs.upload("Large.txt", "txt", big)
    body = problem(docs.confirm("Large.txt", "txt", path), 402, "PAYMENT_REQUIRED")
    assert "2 credits" in body["detail"] and "1 is available" in body["detail"], body
    assert docs.list()["total"] == 0  # nothing was registered
    assert reservations(settings, docs.tenant_id) == []
    # What is left pays for a small one; then nothing is.
    small = docs.ingest("Small.txt", text_file("Small file."))
    path = docs.upload("Other.txt", "txt", text_file("Another small file."))
    body = problem(docs.confirm("Other.txt", "txt", path), 402, "PAYMENT_REQUIRED")
    assert "0 are available" in body["detail"], body
    assert [d["id"] for d in docs.list()["data"]] == [small["id"]]


@pytest.mark.own_org
def test_racing_confirms_of_the_same_content_make_one_document(docs, settings):
    data = text_file("The same brochure, uploaded from several tabs at once.")
    paths = [docs.upload(f"Brochure {n}.txt", "txt", data) for n in range(8)]
    start = threading.Barrier(len(paths))

    def confirm(path: str):
        start.wait()
        return docs.confirm("Brochure.txt", "txt", path)

    with ThreadPoolExecutor(len(paths)) as pool:
        responses = list(pool.map(confirm, paths))
    assert [r.status_code for r in responses] == [200] * len(paths), [r.text for r in responses]
    bodies = [r.json() for r in responses]
    for body in bodies:
        docs.wait(body["id"])
    assert len({body["id"] for body in bodies}) == 1
    assert [body["unchanged"] for body in bodies].count(False) == 1
    assert docs.list()["total"] == 1


@pytest.mark.own_org
def test_content_of_a_failed_deleted_document_can_be_ingested_again(docs, settings):
    # Markup with no text fails as html; the same bytes are a fine txt file.
    data = b"<html><body><script>var tracking = 1;</script></body></html>\n"
    failed = docs.wait(docs.submit("Empty page.html", data)["id"])
    assert failed["status"] == "error", failed
    assert docs.ok("documents.delete", {"id": failed["id"]}) == {"success": True}
    response = docs.confirm("Snippet.txt", "txt", failed["storage_path"])
    assert response.status_code == 200, response.text
    assert response.json()["unchanged"] is False
    assert response.json()["id"] != failed["id"]
    document = docs.wait(response.json()["id"])
    assert document["status"] == "ready", document
    assert len(reservations(settings, docs.tenant_id)) == 2


# --- stats, filters, sorting, pagination ------------------------------------------------------


@pytest.mark.own_org
def test_stats_and_list_filters_sorting_and_pagination(docs):
    # Created in an order other than the names', so the two sorts differ.
    charlie = docs.create("Charlie plan.pdf")
    alpha = docs.submit("Alpha notes.txt", text_file("Alpha notes."))
    delta = docs.submit("Delta legacy.doc", OLE2_DOC)
    echo = docs.create("Echo brief.docx")
    bravo = docs.submit("Bravo guide.md", text_file("# Bravo", "A guide."))
    for document in (alpha, bravo):
        assert docs.wait(document["id"])["status"] == "ready"
    delta_status = docs.wait(delta["id"])["status"]
    assert delta_status == ("ready" if shutil.which("antiword") else "error")
    created = ["Charlie plan.pdf", "Alpha notes.txt", "Delta legacy.doc", "Echo brief.docx"]
    created.append("Bravo guide.md")
    by_name = sorted(created)

    assert docs.ok("documents.getStats", role="member") == {
        "total": 5,
        "pending": 2,
        "processing": 0,
        "ready": 2 + (delta_status == "ready"),
        "error": int(delta_status == "error"),
    }

    assert docs.names() == created[::-1]  # newest first by default
    assert docs.names(sortBy="created_at", sortOrder="asc") == created
    assert docs.names(sortBy="filename", sortOrder="asc") == by_name
    assert docs.names(sortBy="filename", sortOrder="desc") == by_name[::-1]
    assert docs.names(sortBy="filename") == by_name[::-1]  # desc by default

    assert set(docs.names(status="ready")) >= {"Alpha notes.txt", "Bravo guide.md"}
    assert set(docs.names(status="pending")) == {"Charlie plan.pdf", "Echo brief.docx"}
    assert docs.names(status="error") == ([] if delta_status == "ready" else ["Delta legacy.doc"])
    assert docs.names(status="processing") == []
    assert len(docs.names(status="all")) == 5
    assert docs.names(fileType="txt") == ["Alpha notes.txt"]
    assert docs.names(fileType="md") == ["Bravo guide.md"]
    assert docs.names(fileType="pdf") == ["Charlie plan.pdf"]
    assert docs.names(fileType="docx") == ["Echo brief.docx"]
    assert docs.names(fileType="url") == []
    assert len(docs.names(fileType="all")) == 5
    assert len(docs.names(source="upload")) == 5
    assert docs.names(source="website_scan") == []
    assert docs.names(search="NOTES") == ["Alpha notes.txt"]
    assert docs.names(search="gUiDe") == ["Bravo guide.md"]
    assert docs.names(search=".doc", sortBy="filename", sortOrder="asc") == [
        "Delta legacy.doc",
        "Echo brief.docx",
    ]
    assert docs.names(search="%") == []  # a literal character, not a wildcard
    assert docs.names(search="_") == []
    assert docs.names(search="nowhere") == []
    page = docs.list(search="a", fileType="pdf", status="pending")
    assert [d["id"] for d in page["data"]] == [charlie["id"]] and page["total"] == 1

    pages = [
        docs.list(sortBy="filename", sortOrder="asc", limit=2, offset=offset)
        for offset in (0, 2, 4, 5, 100_000)
    ]
    assert [[d["filename"] for d in p["data"]] for p in pages] == [
        by_name[0:2],
        by_name[2:4],
        by_name[4:],
        [],
        [],
    ]
    assert [(p["total"], p["limit"], p["offset"]) for p in pages] == [
        (5, 2, 0),
        (5, 2, 2),
        (5, 2, 4),
        (5, 2, 5),
        (5, 2, 100_000),
    ]

    # Archived: left out by default (and from the stats), listable on request.
    assert docs.ok("documents.archive", {"id": bravo["id"]}, role="editor") == {"success": True}
    assert docs.ok("documents.archive", {"id": echo["id"]}, role="editor") == {"success": True}
    assert docs.list()["total"] == 3
    assert "Bravo guide.md" not in docs.names()
    assert len(docs.names(archived="include")) == 5
    assert sorted(docs.names(archived="only")) == ["Bravo guide.md", "Echo brief.docx"]
    assert docs.names(archived="only", status="ready") == ["Bravo guide.md"]
    assert docs.names(archived="only", fileType="docx") == ["Echo brief.docx"]
    stats = docs.ok("documents.getStats")
    assert (stats["total"], stats["pending"]) == (3, 1)


@pytest.mark.own_org
def test_search_ignores_case_beyond_ascii(docs):
    docs.create("ÉTÉ Notes.txt")
    docs.create("Ökologie.pdf")
    assert docs.names(search="été") == ["ÉTÉ Notes.txt"]
    assert docs.names(search="ÖKO") == ["Ökologie.pdf"]


# --- knowledge metadata -----------------------------------------------------------------------


@pytest.mark.own_org
def test_search_also_matches_the_description_and_the_tags(docs, other):
    def describe(owner, filename: str, **metadata) -> None:
        document = owner.create(filename)
        update = {"id": document["id"], "metadata": metadata}
        owner.ok("documents.updateKnowledgeMetadata", update, role="editor")

    docs.create("Quarterly report.pdf")
    describe(docs, "Notes 1.pdf", description="Voice and TONE of the Brand")
    describe(docs, "Notes 2.pdf", tags=["Pricing", "Q3 launch"])
    describe(docs, "Notes 3.pdf", tags=["x", "y"], description="zzz", language="en")
    describe(other, "Their notes.pdf", tags=["brand", "pricing"])

    def found(term: str) -> list[str]:
        return sorted(docs.names(search=term))

    assert found("brand") == ["Notes 1.pdf"]
    assert found("tone OF") == ["Notes 1.pdf"]
    assert found("PRICING") == ["Notes 2.pdf"]
    assert found("q3 lau") == ["Notes 2.pdf"]
    assert found("report") == ["Quarterly report.pdf"]
    assert found("notes") == ["Notes 1.pdf", "Notes 2.pdf", "Notes 3.pdf"]
    # What people wrote matches, not the stored JSON's keys, values or punctuation.
    assert found("a") == ["Notes 1.pdf", "Notes 2.pdf", "Quarterly report.pdf"]
    for term in ('"', ",", "[", ":", "{", "tags", "isprimary", "language", "false", "null", "en"):
        assert found(term) == [], term
    assert found("%") == found("_") == []
    # Each tenant searches its own documents only.
    assert other.names(search="brand") == ["Their notes.pdf"]
    assert other.names(search="tone") == []
    assert found("their") == []


@pytest.mark.own_org
def test_knowledge_metadata_and_the_single_primary(docs):
    first = docs.create("Brand guide.pdf")
    second = docs.create("Style sheet.pdf")
    full = {"isPrimary": True, "description": "Voice and tone", "tags": ["brand", "voice"]}
    full["language"] = "en"
    response = docs.ok(
        "documents.updateKnowledgeMetadata",
        {"id": first["id"], "metadata": full},
        role="editor",
    )
    assert response == {"id": first["id"], "knowledge": full}
    stored = docs.ok("documents.getById", {"id": first["id"]})
    assert stored["knowledge"] == full
    assert stored["source_metadata"]["knowledge"] == full

    # A second primary: 409 naming the current one; nothing changes.
    body = problem(
        docs.request(
            "documents.updateKnowledgeMetadata",
            {"id": second["id"], "metadata": {"isPrimary": True, "description": "Mine"}},
            role="editor",
        ),
        409,
        "CONFLICT",
    )
    assert first["id"] in body["detail"] and "Brand guide.pdf" in body["detail"], body
    assert docs.ok("documents.getById", {"id": second["id"]})["knowledge"] == NO_KNOWLEDGE

    # Setting primary on the primary again is fine; a partial update keeps the rest.
    partial = {"id": first["id"], "metadata": {"isPrimary": True, "description": "Updated"}}
    updated = docs.ok("documents.updateKnowledgeMetadata", partial, role="editor")
    assert updated["knowledge"] == {**full, "description": "Updated"}
    tags_only = {"id": first["id"], "metadata": {"tags": ["brand", "tone"]}}
    updated = docs.ok("documents.updateKnowledgeMetadata", tags_only, role="editor")
    assert updated["knowledge"] == {**full, "description": "Updated", "tags": ["brand", "tone"]}

    # Unset it, and another can be primary; then the first cannot.
    unset = {"id": first["id"], "metadata": {"isPrimary": False}}
    updated = docs.ok("documents.updateKnowledgeMetadata", unset, role="editor")
    assert updated["knowledge"]["isPrimary"] is False
    assert updated["knowledge"]["description"] == "Updated"
    take = {"id": second["id"], "metadata": {"isPrimary": True}}
    assert docs.ok("documents.updateKnowledgeMetadata", take, role="editor")["knowledge"] == {
        **NO_KNOWLEDGE,
        "isPrimary": True,
    }
    body = problem(
        docs.request(
            "documents.updateKnowledgeMetadata",
            {"id": first["id"], "metadata": {"isPrimary": True}},
            role="editor",
        ),
        409,
        "CONFLICT",
    )
    assert second["id"] in body["detail"] and "Style sheet.pdf" in body["detail"], body
    # Deleting the primary frees the place.
    docs.ok("documents.delete", {"id": second["id"]})
    again = docs.ok(
        "documents.updateKnowledgeMetadata",
        {"id": first["id"], "metadata": {"isPrimary": True}},
        role="editor",
    )
    assert again["knowledge"]["isPrimary"] is True
    listed = {d["id"]: d["knowledge"] for d in docs.list()["data"]}
    assert listed == {first["id"]: {**full, "description": "Updated", "tags": ["brand", "tone"]}}

    for metadata, field in (
        ({"language": "e"}, "metadata.language"),
        ({"description": "d" * 2001}, "metadata.description"),
        ({"tags": ["t"] * 51}, "metadata.tags"),
        ({"isPrimary": "maybe"}, "metadata.isPrimary"),
        ({"colour": "red"}, "metadata.colour"),
    ):
        body = problem(
            docs.request(
                "documents.updateKnowledgeMetadata",
                {"id": first["id"], "metadata": metadata},
                role="editor",
            ),
            400,
            "BAD_REQUEST",
        )
        assert [e["path"] for e in body["errors"]] == [field], body
    body = problem(
        docs.request("documents.updateKnowledgeMetadata", {"id": first["id"]}, role="editor"),
        400,
        "BAD_REQUEST",
    )
    assert [e["path"] for e in body["errors"]] == ["metadata"]


@pytest.mark.parametrize("field", ["isPrimary", "tags"])
def test_knowledge_null_field_is_not_a_conflict_or_a_crash(docs, field):
    document = docs.create("Brand guide.pdf")
    response = docs.request(
        "documents.updateKnowledgeMetadata",
        {"id": document["id"], "metadata": {field: None}},
        role="editor",
    )
    # Either null means "left as it is" or it is refused as bad input; never 409 or 500.
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        problem(response, 400, "BAD_REQUEST")
    assert docs.ok("documents.getById", {"id": document["id"]})["knowledge"] == NO_KNOWLEDGE


# --- rename -----------------------------------------------------------------------------------


def test_rename_keeps_the_extension_of_the_type(docs):
    document = docs.create("report.pdf")

    def rename(filename: str):
        return docs.request("documents.rename", {"id": document["id"], "filename": filename})

    def current() -> str:
        return docs.ok("documents.getById", {"id": document["id"]})["filename"]

    assert rename("Annual report 2025.pdf").json() == {"success": True}
    assert current() == "Annual report 2025.pdf"
    assert rename("Annual report").json() == {"success": True}
    assert current() == "Annual report.pdf"  # the extension is added
    assert rename("Summary.PDF").status_code == 200
    assert current() == "Summary.PDF"
    for refused in ("Summary.docx", "Summary.txt", "Summary.pdf.exe"):
        body = problem(rename(refused), 400, "BAD_REQUEST")
        assert [e["path"] for e in body["errors"]] == ["filename"], body
    for invalid in ("", "x" * 256):
        body = problem(rename(invalid), 400, "BAD_REQUEST")
        assert [e["path"] for e in body["errors"]] == ["filename"], body
    problem(rename("folder/Summary.pdf"), 400, "BAD_REQUEST")
    problem(rename("x" * 254), 400, "BAD_REQUEST")  # too long once .pdf is added
    longest = "x" * 251 + ".pdf"
    assert rename(longest).status_code == 200
    assert current() == longest

    notes = docs.create("notes.md")
    for allowed in ("Notes.markdown", "Notes.md"):
        response = docs.request("documents.rename", {"id": notes["id"], "filename": allowed})
        assert response.status_code == 200, response.text
        assert docs.ok("documents.getById", {"id": notes["id"]})["filename"] == allowed


# --- archive and delete -----------------------------------------------------------------------


@pytest.mark.own_org
def test_archive_leaves_the_default_list_and_retrieval(docs, settings):
    kept = docs.ingest("Kept.txt", text_file("The quokka lives on Rottnest Island."))
    archived = docs.ingest("Archived.txt", text_file("The quokka smiles for photographs."))
    assert searched(settings, docs.tenant_id, "quokka") == {kept["id"], archived["id"]}

    assert docs.ok("documents.archive", {"id": archived["id"]}, role="editor") == {"success": True}
    after = docs.ok("documents.getById", {"id": archived["id"]})
    assert after["archived_at"] is not None
    assert after["status"] == "ready"
    assert searched(settings, docs.tenant_id, "quokka") == {kept["id"]}
    assert docs.names() == ["Kept.txt"]
    assert docs.names(archived="only") == ["Archived.txt"]
    assert sorted(docs.names(archived="include")) == ["Archived.txt", "Kept.txt"]
    # Archiving again changes nothing; an archived document is still readable.
    assert docs.ok("documents.archive", {"id": archived["id"]}, role="editor") == {"success": True}
    again = docs.ok("documents.getById", {"id": archived["id"]})
    assert again["archived_at"] == after["archived_at"]
    assert "photographs" in docs.ok("documents.getContent", {"id": archived["id"]})["content"]


@pytest.mark.own_org
def test_delete_and_bulk_delete_are_soft_and_count_only_this_tenants_live_ids(
    docs, other, settings
):
    indexed = docs.ingest("Indexed.txt", text_file("Wombats dig burrows with their claws."))
    first, second, third = (docs.create(f"Doc {n}.pdf") for n in (1, 2, 3))
    theirs = other.create("Theirs.pdf")
    assert searched(settings, docs.tenant_id, "wombats") == {indexed["id"]}

    assert docs.ok("documents.delete", {"id": indexed["id"]}) == {"success": True}
    problem(docs.request("documents.getById", {"id": indexed["id"]}), 404, "NOT_FOUND")
    problem(docs.request("documents.getContent", {"id": indexed["id"]}), 404, "NOT_FOUND")
    problem(docs.request("documents.delete", {"id": indexed["id"]}), 404, "NOT_FOUND")
    assert searched(settings, docs.tenant_id, "wombats") == set()
    row = document_row(settings, indexed["id"])
    assert row is not None and row.deleted_at is not None  # soft: the row is still there

    ids = [
        second["id"],
        third["id"],
        third["id"],  # twice
        indexed["id"],  # already deleted
        theirs["id"],  # another tenant's
        str(uuid.uuid4()),  # unknown
    ]
    assert docs.ok("documents.bulkDelete", {"ids": ids}) == {"success": True, "deleted": 2}
    assert docs.ok("documents.bulkDelete", {"ids": ids}) == {"success": True, "deleted": 0}
    for gone in (second, third):
        problem(docs.request("documents.getById", {"id": gone["id"]}), 404, "NOT_FOUND")
        assert document_row(settings, gone["id"]).deleted_at is not None
    assert docs.names(archived="include") == ["Doc 1.pdf"]
    assert docs.list()["total"] == 1
    assert docs.ok("documents.getStats")["total"] == 1
    assert other.ok("documents.getById", {"id": theirs["id"]}) == theirs
    assert docs.ok("documents.getById", {"id": first["id"]}) == first
    # The same content confirmed again after its deletion is a new document, not the old one.
    again = docs.confirm("Indexed.txt", "txt", indexed["storage_path"])
    assert again.status_code == 200, again.text
    assert again.json()["id"] != indexed["id"] and again.json()["unchanged"] is False
    assert docs.wait(again.json()["id"])["status"] == "ready"
    assert searched(settings, docs.tenant_id, "wombats") == {again.json()["id"]}


# --- getContent -------------------------------------------------------------------------------


def test_content_is_truncated_to_250000_bytes_on_a_character_boundary(docs):
    line = " ".join(["Grüße aus 日本, café é."] * 20)
    original = "Multilingual notes, v1\n" + "\n".join([line] * 500)
    encoded = original.encode()
    assert len(encoded) > CONTENT_LIMIT
    # The limit falls two bytes into the three of a "本".
    assert encoded[CONTENT_LIMIT - 2 : CONTENT_LIMIT + 1] == "本".encode()
    document = docs.ingest("Multilingual.txt", encoded)
    assert document["chunk_count"] > 1
    content = docs.ok("documents.getContent", {"id": document["id"]})
    assert content["contentError"] is None
    text = content["content"]
    assert len(text.encode("utf-8")) == CONTENT_LIMIT - 2
    assert original.startswith(text)
    assert text.endswith("日")


@pytest.mark.own_org
def test_content_falls_back_to_the_chunks_when_storage_fails(docs, settings):
    data = text_file(
        "# Orchard care",
        "Prune apple trees in late winter, while they are dormant.",
        "## Pests",
        "Codling moth larvae tunnel into the fruit; pheromone traps help.",
        PROSE * 8,
    )
    document = docs.ingest("Orchard.md", data)
    before = docs.ok("documents.getContent", {"id": document["id"]})
    assert before["contentError"] is None
    text_path = document_row(settings, document["id"]).text_path
    assert text_path == f"{docs.org}/derived/documents/{document['id']}/v1.txt"

    delete_object(settings, text_path)
    after = docs.ok("documents.getContent", {"id": document["id"]})
    assert after["contentError"], after
    assert "chunks" in after["contentError"]
    assert words(after["content"]) == words(before["content"])
    assert "Codling moth larvae" in after["content"]
    assert docs.ok("documents.getById", {"id": document["id"]})["status"] == "ready"


# --- the list cache ---------------------------------------------------------------------------


@pytest.mark.own_org
def test_list_cache_sees_every_write_at_once(docs):
    assert docs.list()["total"] == 0  # an empty list, cached
    first = docs.create("First.pdf")
    assert docs.names() == ["First.pdf"]
    second = docs.create("Second.pdf")
    assert docs.names() == ["Second.pdf", "First.pdf"]

    docs.ok("documents.rename", {"id": first["id"], "filename": "Renamed"}, role="editor")
    assert docs.names() == ["Second.pdf", "Renamed.pdf"]

    metadata = {"id": first["id"], "metadata": {"isPrimary": True, "tags": ["core"]}}
    docs.ok("documents.updateKnowledgeMetadata", metadata, role="editor")
    assert docs.list()["data"][1]["knowledge"]["tags"] == ["core"]

    assert docs.names(archived="only") == []
    docs.ok("documents.archive", {"id": second["id"]}, role="editor")
    assert docs.names() == ["Renamed.pdf"]
    assert docs.names(archived="only") == ["Second.pdf"]

    docs.ok("documents.delete", {"id": first["id"]})
    assert docs.names() == []
    docs.ok("documents.bulkDelete", {"ids": [second["id"]]})
    assert docs.names(archived="only") == []
    assert docs.list(archived="include")["total"] == 0


@pytest.mark.own_org
def test_workflow_status_changes_reach_the_cached_list(docs):
    assert docs.list()["total"] == 0
    confirmed = docs.submit("Fresh.txt", text_file("Freshly ingested text."))
    listed = docs.list()["data"]  # cached while the workflow runs
    assert [d["id"] for d in listed] == [confirmed["id"]]
    assert listed[0]["status"] in ("pending", "processing", "ready")
    ready = docs.wait(confirmed["id"])
    assert ready["status"] == "ready"
    deadline = time.monotonic() + 3
    while (listed := docs.list()["data"])[0]["status"] != "ready":
        assert time.monotonic() < deadline, f"the list still says {listed[0]['status']}"
        time.sleep(0.05)
    assert listed == [ready]
    assert docs.names(status="ready") == ["Fresh.txt"]

    # An error from the workflow reaches it too.
    assert docs.list(status="error")["total"] == 0  # cached
    failing = docs.submit("Broken.doc", OLE2_DOC)
    final = docs.wait(failing["id"])
    deadline = time.monotonic() + 3
    while failing["id"] not in [d["id"] for d in docs.list(status=final["status"])["data"]]:
        assert time.monotonic() < deadline, f"the list missed the change to {final['status']}"
        time.sleep(0.05)
