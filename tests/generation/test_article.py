"""How an article is put together from its parts (generation/article.py) and which of its sources
may be named in it: the tenant's own files are cited in the provenance only, a public page
(a document the website scan read, with its address) as a link; documents.public_urls says which
documents have such an address."""

from __future__ import annotations

import uuid
from typing import Any

from contentplatform.ai.base import Source
from contentplatform.documents import service as documents
from contentplatform.documents.models import Document
from contentplatform.generation.article import Part, assemble
from contentplatform.kit.db import Database
from tests.support.orgs import new_tenant

GUIDE = "coffee-guide.pdf"
PAGE = "https://beans.example/storage/"


def source(ref: int, *, url: str | None = None, name: str = GUIDE) -> Source:
    return Source(ref, f"chunk-{ref}", f"doc-{name}", name, f"Brewing > Step {ref}", "…", url)


SOURCES = [source(1), source(2, url=PAGE, name="Bean storage"), source(3, url=PAGE, name="x")]
PARTS = [
    Part(kind="intro", heading=None, sources=[1], points=[]),
    Part(kind="section", heading="Storing beans", sources=[2, 3], points=[]),
]


def test_private_citations_leave_no_mark_and_are_kept_with_their_passage() -> None:
    article = assemble(
        "Better coffee",
        PARTS[:1],
        ["<p>Use water at <strong>94</strong> degrees. [1] Grind fresh. [1, 7]</p>"],
        SOURCES,
    )

    assert article.content == "<p>Use water at <strong>94</strong> degrees. Grind fresh.</p>"
    assert GUIDE not in article.content
    [cited] = article.sources
    assert (cited.number, cited.document_name, cited.heading) == (1, GUIDE, "Brewing > Step 1")
    assert (cited.url, cited.published_as) == (None, None)
    assert [c.model_dump() for c in article.citations] == [
        {"section": "Introduction", "text": "Use water at 94 degrees.", "sources": [1]},
        {"section": "Introduction", "text": "Grind fresh.", "sources": [1]},  # [7]: unknown
    ]
    assert article.sections[0].chunk_ids == ["chunk-1"]


def test_a_public_source_is_cited_as_a_link_numbered_among_the_public_ones() -> None:
    article = assemble(
        "Better coffee",
        PARTS,
        [
            "<p>Use water at 94 degrees. [1]</p>",
            "<p>Beans keep a month. [2]</p><ul><li>Keep them dark [3, 1]</li></ul>",
        ],
        SOURCES,
    )

    link = '<sup class="citation"><a href="#source-1">[1]</a></sup>'
    assert article.content == (
        "<p>Use water at 94 degrees.</p>\n"
        '<h2 id="storing-beans">Storing beans</h2>\n'
        f"<p>Beans keep a month. {link}</p><ul><li>Keep them dark {link}</li></ul>\n"
        '<h2 id="sources">Sources</h2><ol><li id="source-1">'
        f'<a href="{PAGE}">beans.example/storage</a></li></ol>'
    )
    # The provenance numbers every source by first use, and says which number each public
    # one carries in the article.
    assert [(s.number, s.chunk_id, s.published_as) for s in article.sources] == [
        (1, "chunk-1", None),
        (2, "chunk-2", 1),
        (3, "chunk-3", 1),
    ]
    assert [c.sources for c in article.citations] == [[1], [2], [3, 1]]
    assert article.citations[-1].section == "Storing beans"


def test_only_a_scanned_page_with_a_web_address_is_public(run) -> None:
    made: dict[str, uuid.UUID] = {}

    def document(tenant_id: uuid.UUID, name: str, source: str, metadata: dict[str, Any]):
        made[name] = uuid.uuid4()
        return Document(
            id=made[name],
            tenant_id=tenant_id,
            filename=name,
            file_type="html",
            storage_path=f"org/{name}",
            source=source,
            source_metadata=metadata,
            status="ready",
        )

    async def scenario(db: Database) -> dict[uuid.UUID, str]:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            session.add_all(
                [
                    document(tenant_id, "page", "website_scan", {"url": PAGE}),
                    document(tenant_id, "upload", "upload", {"url": PAGE}),
                    document(tenant_id, "odd", "website_scan", {"url": "file:///etc/x"}),
                    document(tenant_id, "bare", "website_scan", {}),
                ]
            )
        async with db.unit_of_work() as session:
            return await documents.public_urls(session, tenant_id, [*made.values(), uuid.uuid4()])

    assert run(scenario) == {made["page"]: PAGE}
