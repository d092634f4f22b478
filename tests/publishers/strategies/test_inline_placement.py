"""Where inline images go in an article's body (base.with_inline_images), one rule for every
target: the n-th after the first paragraph under the n-th section heading, the rest at the end
before the Related reading or Sources list."""

from __future__ import annotations

from bs4 import BeautifulSoup

from contentplatform.publishers.strategies.base import with_inline_images

BODY = (
    "<p>Intro.</p>"
    "<h2>One</h2><p>First of one.</p><p>Second of one.</p>"
    "<h2>Two</h2><ul><li>A list first</li></ul><p>Then a paragraph.</p>"
    "<h2>Three</h2><h3>No paragraph</h3>"
    '<h2 id="related-reading">Related reading</h2><ul><li>x</li></ul>'
    '<h2 id="sources">Sources</h2><ol><li>y</li></ol>'
)


def order(html: str) -> list[str]:
    """The body's blocks in order, a figure by its alt text."""
    soup = BeautifulSoup(html, "html.parser")
    return [
        f"figure:{block.img['alt']}" if block.name == "figure" else block.get_text()
        for block in soup.find_all(["p", "h2", "figure", "h3"], recursive=False)
    ]


def figure(name: str) -> str:
    return f'<figure><img src="https://cdn.example/{name}.png" alt="{name}"></figure>'


def test_each_image_follows_the_first_paragraph_of_its_section() -> None:
    placed = with_inline_images(BODY, [figure("a"), figure("b"), figure("c")])
    assert order(placed) == [
        "Intro.",
        "One",
        "First of one.",
        "figure:a",
        "Second of one.",
        "Two",
        "Then a paragraph.",
        "figure:b",
        "Three",
        "figure:c",  # a section that opens without a paragraph: right after its heading
        "No paragraph",
        "Related reading",
        "Sources",
    ]


def test_images_beyond_the_sections_go_before_the_closing_lists_or_at_the_end() -> None:
    five = [figure(name) for name in "abcde"]
    placed = order(with_inline_images(BODY, five))
    assert placed[placed.index("Related reading") - 2 :][:3] == [
        "figure:d",
        "figure:e",
        "Related reading",
    ]
    bare = order(with_inline_images("<p>Only a paragraph.</p>", [figure("a")]))
    assert bare == ["Only a paragraph.", "figure:a"]
    assert with_inline_images(BODY, []) == BODY
