"""drafts.html.without_private_citations: what of a draft's content may be published. A Sources
list naming the tenant's files (as drafts generated before citations moved to the provenance end
with) goes, with the links citing it; public sources' links stay; anything else stays as it is."""

from __future__ import annotations

from contentplatform.drafts.html import sanitize, without_private_citations


def cite(number: int) -> str:
    return f'<sup class="citation"><a href="#source-{number}">[{number}]</a></sup>'


PRIVATE_LIST = (
    '<h2 id="sources">Sources</h2><ol>'
    '<li id="source-1">coffee-guide.pdf, Brewing &gt; Water</li>'
    '<li id="source-2">coffee-guide.pdf</li></ol>'
)


def published(content: str) -> str:
    """As a stored draft holds it (sanitized), then as it is published."""
    return without_private_citations(sanitize(content))


def test_a_private_sources_list_and_its_citations_go_and_the_prose_stays() -> None:
    content = f"<h2>Brewing</h2><p>Use water at 94 degrees.{cite(1)} Grind fresh.{cite(2)}</p>"

    assert published(content + PRIVATE_LIST) == (
        "<h2>Brewing</h2><p>Use water at 94 degrees. Grind fresh.</p>"
    )


def test_content_without_citations_is_returned_as_it_is() -> None:
    content = sanitize('<h2 id="steps">Steps</h2><p>Rinse <a href="#steps">the rice</a>.</p>')

    assert without_private_citations(content) is content


def test_a_sources_heading_whose_id_an_editor_dropped_goes_with_its_list() -> None:
    content = f"<p>Fact.{cite(1)}</p><h3>Sources</h3>" + PRIVATE_LIST.split("</h2>")[1]

    assert published(content) == "<p>Fact.</p>"


def test_public_sources_stay_linked_and_private_ones_go() -> None:
    content = (
        f"<p>Beans keep a month.{cite(1)} Water matters.{cite(2)}</p>"
        '<h2 id="sources">Sources</h2><ol>'
        '<li id="source-1"><a href="https://beans.example/keep">beans.example/keep</a>'
        " from notes.docx</li>"
        '<li id="source-2">coffee-guide.pdf</li></ol>'
    )

    out = published(content)

    assert "coffee-guide" not in out and "notes.docx" not in out
    assert 'href="#source-2"' not in out
    assert 'href="#source-1"' in out
    assert '<li id="source-1"><a href="https://beans.example/keep"' in out
    assert '<h2 id="sources">Sources</h2>' in out


def test_a_list_of_public_links_alone_is_kept_exactly() -> None:
    content = sanitize(
        f"<p>Beans keep a month.{cite(1)}</p>"
        '<h2 id="sources">Sources</h2><ol>'
        '<li id="source-1"><a href="https://beans.example/keep">beans.example/keep</a></li></ol>'
    )

    assert without_private_citations(content) is content


def test_a_writers_own_sources_section_is_left_alone() -> None:
    content = sanitize(
        '<p>See below.</p><h2 id="sources">Sources</h2>'
        '<ul><li>Our field notes from 2023</li><li><a href="https://example.com">Example</a></li></ul>'
    )

    assert without_private_citations(content) == content
