"""Documents hold text to the kit's rule and numbers to bounds, over REST and RPC: a filename or
storage path that would read other than it is (a right-to-left override, a zero-width character)
is a 400 naming it, a control character anywhere is a 400 naming its field, tags are plain text,
and an offset or size past any bound is a 400."""

from __future__ import annotations

import pytest

from tests.documents.support import Docs
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HUGE = "99999999999999999999"  # past 64 bits

docs = org_fixture(Docs)

# "invoice\u202efdp.exe" shows as "invoiceexe.pdf": an executable dressed as a PDF.
DISGUISED = ["invoice\u202efdp.exe", "report\u200b.pdf", "\ufeffnotes.txt", "a\u2066b.md"]


def paths(response) -> list[str]:
    return [error["path"] for error in problem(response, 400, "BAD_REQUEST")["errors"]]


@pytest.mark.own_org
@pytest.mark.parametrize("filename", DISGUISED)
def test_a_filename_with_an_invisible_or_direction_changing_character_is_a_400(docs, filename):
    upload = {"filename": filename, "fileType": "pdf", "contentLength": 10}
    assert paths(docs.request("documents.createUploadUrl", upload, role="editor")) == ["filename"]
    path = f"{docs.org}/library/{filename}"
    create = {"filename": filename, "fileType": "pdf", "storagePath": f"{docs.org}/library/a.pdf"}
    assert paths(docs.request("documents.create", create, role="editor")) == ["filename"]
    create = {"filename": "a.pdf", "fileType": "pdf", "storagePath": path}
    assert paths(docs.request("documents.create", create, role="editor")) == ["storagePath"]
    assert paths(docs.request("documents.confirmUpload", create, role="editor")) == ["storagePath"]
    document = docs.create("plain.pdf")
    renamed = {"id": document["id"], "filename": filename}
    assert paths(docs.request("documents.rename", renamed, role="editor")) == ["filename"]
    assert docs.names() == ["plain.pdf"]


def test_a_filename_keeps_any_visible_character(docs):
    for filename in ("Résumé (final) [2].pdf", "日本語の資料.pdf", "a <b> & c.pdf"):
        assert docs.create(filename)["filename"] == filename


@pytest.mark.parametrize("character", ["\x00", "\n", "\x1b"])
def test_a_control_character_is_a_400_naming_its_field(docs, character):
    upload = {"filename": f"a{character}b.pdf", "fileType": "pdf", "contentLength": 10}
    assert paths(docs.request("documents.createUploadUrl", upload, role="editor")) == ["filename"]
    assert paths(docs.request("documents.list", {"search": f"a{character}"})) == ["search"]


def test_knowledge_tags_are_plain_visible_text_and_the_description_may_span_lines(docs):
    document = docs.create("guide.pdf")
    metadata = {"description": "Line one.\n\tLine two.", "tags": ["<b>coffee</b>", "beans"]}
    answer = docs.ok(
        "documents.updateKnowledgeMetadata", {"id": document["id"], "metadata": metadata}
    )
    assert answer["knowledge"]["tags"] == ["coffee", "beans"]
    assert answer["knowledge"]["description"] == "Line one.\n\tLine two."

    for tags in (["good", "b\u200bad"], ["nul\x00"]):
        data = {"id": document["id"], "metadata": {"tags": tags}}
        assert paths(docs.request("documents.updateKnowledgeMetadata", data)) == [
            "metadata.tags"
        ], tags


@pytest.mark.own_org
def test_an_offset_or_size_past_any_bound_is_a_400(docs):
    assert paths(docs.request("documents.list", {"offset": HUGE})) == ["offset"]
    assert paths(docs.request("documents.list", {"limit": HUGE})) == ["limit"]
    upload = {"filename": "a.pdf", "fileType": "pdf", "contentLength": int(HUGE)}
    assert paths(docs.request("documents.createUploadUrl", upload, role="editor")) == [
        "contentLength"
    ]
    docs.create("only.pdf")
    assert docs.list(offset=100_000) == {"data": [], "total": 1, "limit": 50, "offset": 100_000}
