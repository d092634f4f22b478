"""Draft HTML: what survives sanitizing, and the text, headings, links and slugs read from it."""

from __future__ import annotations

import random

import pytest

from contentplatform.drafts.html import (
    count_words,
    first_paragraph,
    headings,
    links,
    plain_text,
    sanitize,
    slugify,
    word_count,
)

REL = 'rel="noopener noreferrer"'

# --- sanitize: nothing a browser could run ---


def test_script_is_removed_with_its_text() -> None:
    out = sanitize("<p>Hello</p><script>alert('pwned')</script><p>world</p>")
    assert out == "<p>Hello</p><p>world</p>"


def test_style_is_removed_with_its_text() -> None:
    assert sanitize("<style>p { color: red }</style><p>Hi</p>") == "<p>Hi</p>"


def test_iframe_and_embedded_documents_are_removed() -> None:
    out = sanitize(
        '<iframe src="https://evil.example">fallback</iframe><object data="x.swf">obj</object>'
        "<svg><script>alert(1)</script></svg><p>kept</p>"
    )
    assert out == "<p>kept</p>"


@pytest.mark.parametrize(
    "html",
    [
        '<p onclick="steal()">Hi</p>',
        '<p onmouseover="steal()" style="color:red">Hi</p>',
    ],
)
def test_event_handlers_and_styles_are_removed(html: str) -> None:
    assert sanitize(html) == "<p>Hi</p>"


def test_onerror_on_image_is_removed_but_image_stays() -> None:
    out = sanitize('<img src="/cat.png" alt="A cat" onerror="steal()">')
    assert out == '<img src="/cat.png" alt="A cat">'


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "&#106;avascript:alert(1)",
        "&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1)",
        "java&#x09;script:alert(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "vbscript:msgbox(1)",
    ],
)
def test_dangerous_link_urls_are_removed(href: str) -> None:
    out = sanitize(f'<p><a href="{href}">click</a></p>')
    assert "href" not in out
    assert "script" not in out.lower()
    assert "click" in out


def test_data_url_images_lose_their_source() -> None:
    assert "data:" not in sanitize('<img src="data:image/svg+xml;base64,PHN2Zz4=" alt="x">')


def test_unknown_tags_are_unwrapped_keeping_text() -> None:
    assert sanitize("<p>Go <button>now</button></p><form>!</form>") == "<p>Go now</p>!"


def test_comments_are_stripped() -> None:
    assert sanitize("<!-- editor note --><p>Text</p>") == "<p>Text</p>"


# --- sanitize: what an article keeps ---


def test_article_formatting_is_kept() -> None:
    html = (
        '<h2 id="intro">Intro</h2>'
        "<p><strong>Bold</strong>, <em>italic</em>, <u>u</u>, <s>s</s>, <mark>m</mark>, "
        "<small>sm</small>, H<sub>2</sub>O, x<sup>2</sup>, <code>code</code>, <kbd>Ctrl</kbd>, "
        '<abbr title="HyperText Markup Language">HTML</abbr>, <q>quote</q>, <cite>Book</cite></p>'
        "<blockquote><p>Quoted</p></blockquote>"
        "<pre>  indented\n  code</pre>"
        '<ol start="3" reversed=""><li id="step-3">Three</li></ol><ul><li>Item</li></ul>'
        "<dl><dt>Term</dt><dd>Definition</dd></dl>"
        '<figure><img src="https://cdn.example/a.png" alt="Chart" width="640" height="480" '
        'loading="lazy"><figcaption>Caption</figcaption></figure>'
        '<table><caption>Prices</caption><thead><tr><th scope="col">A</th></tr></thead>'
        '<tbody><tr><td colspan="2">1</td></tr></tbody><tfoot><tr><td>Total</td></tr></tfoot>'
        "</table>"
        '<section id="references"><div><span>x</span></div></section><hr>'
        "<p>line<br>break</p>"
    )
    assert sanitize(html) == html


def test_links_are_kept_with_rel_and_target_is_dropped() -> None:
    out = sanitize('<a href="https://example.com/guide" title="Guide" target="_blank">Guide</a>')
    assert out == f'<a href="https://example.com/guide" title="Guide" {REL}>Guide</a>'


@pytest.mark.parametrize(
    "href",
    [
        "/blog/post",
        "../post",
        "post",
        "#section-2",
        "mailto:hi@example.com",
        "tel:+4930123",
        "//cdn.example/x",
    ],
)
def test_safe_link_kinds_are_kept(href: str) -> None:
    assert sanitize(f'<a href="{href}">x</a>') == f'<a href="{href}" {REL}>x</a>'


def test_a_rel_given_by_the_writer_is_replaced() -> None:
    assert sanitize('<a href="/x" rel="opener">x</a>') == f'<a href="/x" {REL}>x</a>'


def test_only_the_citation_class_survives() -> None:
    out = sanitize(
        '<p class="lead">Fact<sup class="citation big" id="cite-ref-1">'
        '<a class="citation" href="#cite-1">[1]</a></sup></p>'
    )
    assert out == (
        '<p>Fact<sup class="citation" id="cite-ref-1">'
        f'<a class="citation" href="#cite-1" {REL}>[1]</a></sup></p>'
    )


def test_attribute_values_outside_their_vocabulary_are_dropped() -> None:
    assert sanitize('<img src="/a.png" loading="whenever">') == '<img src="/a.png">'
    assert sanitize('<table><tr><th scope="x">A</th></tr></table>') == (
        "<table><tbody><tr><th>A</th></tr></tbody></table>"
    )


@pytest.mark.parametrize("html", ["", "   ", "\n\t", "<script>alert(1)</script>", "<!-- x -->"])
def test_empty_content_becomes_an_empty_paragraph(html: str) -> None:
    assert sanitize(html) == "<p></p>"


def test_plain_text_input_stays_text() -> None:
    assert sanitize("Fish & chips < 5") == "Fish &amp; chips &lt; 5"


@pytest.mark.parametrize(
    "html",
    [
        "<p>Hello <b>world</b></p>",
        "<p>unclosed <b>bold",
        "<h2>a<h2>nested</h2></h2>",
        "<li>loose<li>items",
        "<pre>\n\n\ncode</pre>",
        "<table><tr><td><p>cell",
        '<a href="/a"><a href="/b">nested</a></a>',
        "<div></p><p id='a b'><h2><table><tr></p><h2>",
    ],
)
def test_sanitize_is_idempotent(html: str) -> None:
    once = sanitize(html)
    assert sanitize(once) == once


def test_sanitize_is_idempotent_on_random_tag_soup() -> None:
    pieces = [
        *("<p>", "</p>", '<a href="/x">', "</a>", "<b>", "</b>", "<table>", "<tr>", "<td>"),
        *("</td>", "text", "&amp;", "<", ">", "<script>", "</script>", "<ul>", "<li>", "<br>"),
        *("<!--", "-->", '"', "<img src=x>", "<pre>", "\n ", "<h2>", "</h2>", "<h3>", "<div>"),
    ]
    rng = random.Random(7)
    for _ in range(2000):
        html = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        once = sanitize(html)
        assert sanitize(once) == once, html


# --- reading content ---

ARTICLE = """
<h2>Why   brew
at home</h2>
<p>
  Fresh coffee <em>tastes</em> better.
  It is cheaper too.
</p>
<!-- a note -->
<ul><li>Beans</li><li>Grinder</li></ul>
<h3>Tools</h3>
<p>Line one<br>line two</p>
<table><tr><th>Tool</th><th>Price</th></tr><tr><td>Kettle</td><td>$20</td></tr></table>
<script>var hidden = 1;</script>
<p>See <a href="https://example.com/guide">the guide</a> and <a href="#tools">tools</a>.</p>
"""


def test_plain_text_separates_blocks_and_collapses_whitespace() -> None:
    assert plain_text(ARTICLE) == (
        "Why brew at home\n\n"
        "Fresh coffee tastes better. It is cheaper too.\n\n"
        "Beans\nGrinder\n\n"
        "Tools\n\n"
        "Line one\nline two\n\n"
        "Tool Price\nKettle $20\n\n"
        "See the guide and tools."
    )


def test_plain_text_can_leave_out_headings() -> None:
    text = plain_text(ARTICLE, include_headings=False)
    assert "Why brew" not in text
    assert "Tools\n" not in text
    assert text.startswith("Fresh coffee")


def test_plain_text_keeps_inline_words_together() -> None:
    assert plain_text("<p>un<b>believ</b>able</p>") == "unbelievable"


def test_plain_text_of_deeply_nested_markup() -> None:
    assert plain_text("<b>" * 5000 + "deep") == "deep"


def test_word_count() -> None:
    assert word_count(ARTICLE) == 28  # the words of plain_text(ARTICLE); no script, no comment
    assert word_count("A state-of-the-art tool, isn't it?") == 5
    assert word_count("<p>one</p><p>two</p>") == 2
    assert word_count("") == 0
    assert count_words("one, two — three") == 3


def test_first_paragraph_skips_empty_ones() -> None:
    html = "<h2>Heading</h2><p> </p><p><br></p><p>The <b>real</b>\n intro.</p><p>Next.</p>"
    assert first_paragraph(html) == "The real intro."
    assert first_paragraph("<h2>Only a heading</h2>") == ""


def test_headings_in_order_with_levels() -> None:
    html = "<h1>Top</h1><h2>Why <em>brew</em></h2><h2></h2><h4>Deep</h4><h3>Tools</h3>"
    assert headings(html) == [(1, "Top"), (2, "Why brew"), (4, "Deep"), (3, "Tools")]


def test_links_lists_hrefs_in_order() -> None:
    assert links(ARTICLE) == ["https://example.com/guide", "#tools"]
    assert links('<a name="anchor">x</a><a href=" /a ">a</a>') == ["/a"]


# --- slugs ---


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("  How to Brew Coffee at Home  ", "how-to-brew-coffee-at-home"),
        ("Crème brûlée für Anfänger", "creme-brulee-fur-anfanger"),
        ("Die Straße", "die-strasse"),
        ("Don't panic \u2014 it\u2019s fine", "dont-panic-its-fine"),
        ("Top 10 tips (2024)", "top-10-tips-2024"),
        ("--already--hyphenated--", "already-hyphenated"),
        ("日本語", "draft"),
        ("", "draft"),
        ("!!!", "draft"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_slugify_cuts_at_a_word_boundary() -> None:
    assert slugify("alpha beta gamma delta", max_length=14) == "alpha-beta"
    assert slugify("alpha beta gamma delta", max_length=16) == "alpha-beta-gamma"
    assert slugify("alpha beta gamma delta", max_length=10) == "alpha-beta"


def test_slugify_default_limit_is_75() -> None:
    slug = slugify("word " * 40)
    assert len(slug) <= 75
    assert slug.endswith("word")
    assert not slug.endswith("-")


def test_slugify_cuts_a_single_long_word() -> None:
    assert slugify("a" * 100) == "a" * 75
