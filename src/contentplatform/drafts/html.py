"""Draft content is HTML: sanitized on every write, read back as text, headings and links.

`sanitize` keeps what an article needs and nothing a browser could run. The allow-list:

- tags: p, br, hr, h1-h6, strong, b, em, i, u, s, mark, small, sub, sup, blockquote, q, cite,
  code, pre, kbd, abbr, ul, ol, li, dl, dt, dd, a, img, figure, figcaption, table, thead, tbody,
  tfoot, tr, th, td, caption, span, div, section (a references or FAQ block);
- attributes: a: href, title, name, id; img: src, alt, title, width, height, loading (lazy or
  eager); th and td: colspan, rowspan, scope (row, col, rowgroup, colgroup); ol: start, reversed;
  abbr: title; h1-h6, sup, li, section: id (anchors and footnotes). No style, no event handlers;
- class: only `citation`, and only on sup and a, so citation markers
  (`<sup class="citation"><a class="citation" href="#ref-1">[1]</a></sup>`) keep their look;
- URLs (href, src): http, https, mailto, tel, relative paths and `#fragment` links; anything else
  (javascript:, data:, vbscript:, however cased or entity-encoded) loses the attribute;
- every link gets rel="noopener noreferrer"; `target` is dropped, because whether links open a new
  tab is the publishing site's choice, not something each draft should carry;
- comments are dropped; script, style and other tags whose content is code or fallback markup
  (iframe, object, svg, math, noscript, template, textarea, select, title) go with their content.

Ids are kept as written (no prefix), so `#fragment` links within the article keep working.
"""

from __future__ import annotations

import re
import unicodedata

import nh3
from bs4 import BeautifulSoup
from bs4.element import NavigableString, PreformattedString, Tag

EMPTY_CONTENT = "<p></p>"

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

_TAGS = {
    *("p", "br", "hr", "div", "span", "section"),
    *_HEADINGS,
    *("strong", "b", "em", "i", "u", "s", "mark", "small", "sub", "sup", "abbr"),
    *("blockquote", "q", "cite", "code", "pre", "kbd"),
    *("ul", "ol", "li", "dl", "dt", "dd"),
    *("a", "img", "figure", "figcaption"),
    *("table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption"),
}

_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={
        *("script", "style", "noscript", "template", "title"),
        *("iframe", "object", "svg", "math", "textarea", "select"),
    },
    attributes={
        "a": {"href", "title", "name", "id"},
        "img": {"src", "alt", "title", "width", "height"},
        "th": {"colspan", "rowspan"},
        "td": {"colspan", "rowspan"},
        "ol": {"start", "reversed"},
        "abbr": {"title"},
        **{tag: {"id"} for tag in (*_HEADINGS, "sup", "li", "section")},
    },
    # Attributes with a fixed vocabulary: any other value is dropped.
    tag_attribute_values={
        "img": {"loading": {"lazy", "eager"}},
        "th": {"scope": {"row", "col", "rowgroup", "colgroup"}},
        "td": {"scope": {"row", "col", "rowgroup", "colgroup"}},
    },
    allowed_classes={"a": {"citation"}, "sup": {"citation"}},
    url_schemes={"http", "https", "mailto", "tel"},
    link_rel="noopener noreferrer",
    strip_comments=True,
)

# A clean pass is not always a fixed point: markup the HTML parser repaired (a heading inside a
# heading, a list item outside a list, a newline right after <pre>) serializes into HTML that
# parses differently again. Real content settles in one or two passes; the cap only guards
# against pathological nesting.
_MAX_PASSES = 8


def sanitize(html: str) -> str:
    """`html` reduced to the article allow-list; blank or fully removed content is `<p></p>`."""
    clean = html.strip()
    for _ in range(_MAX_PASSES):
        again = _CLEANER.clean(clean).strip()
        if again == clean:
            break
        clean = again
    return clean or EMPTY_CONTENT


# Elements that start a paragraph of their own in plain text, and those that start a new line.
_PARAGRAPHS = _HEADINGS | {
    *("p", "div", "section", "article", "header", "footer", "aside", "main", "nav", "address"),
    *("blockquote", "pre", "ul", "ol", "dl", "table", "figure", "figcaption", "caption", "hr"),
    *("details", "summary"),
}
_LINES = frozenset({"li", "dt", "dd", "tr", "br"})
# Content that is never reader-visible text (plain_text may be given unsanitized HTML).
_INVISIBLE = frozenset(
    {"script", "style", "noscript", "template", "head", "title", "iframe", "object", "svg", "math"}
    | {"textarea", "select"}
)
# Control characters as structure markers while walking: a plain "\n" marker would be
# indistinguishable from two line breaks in a row.
_PARAGRAPH_MARK = "\x1d"
_LINE_MARK = "\x1e"


def plain_text(html: str, *, include_headings: bool = True) -> str:
    """The readable text of `html`: one line per list item or table row, a blank line between
    paragraphs, whitespace inside a line collapsed (in <pre> too)."""
    return _render(_parse(html), include_headings=include_headings)


def _render(root: Tag, *, include_headings: bool = True) -> str:
    pieces: list[str] = []
    # Iterative, not recursive: unclosed inline tags can nest thousands deep.
    todo: list[object] = list(reversed(root.contents))
    while todo:
        node = todo.pop()
        if type(node) is str:  # the closing marker of a block pushed below
            pieces.append(node)
        elif isinstance(node, PreformattedString):  # comments, doctypes, CDATA
            continue
        elif isinstance(node, NavigableString):
            # Source newlines are plain whitespace; only the markers are structure. (`\s` covers
            # the marker characters too, so text can never fake one.)
            pieces.append(re.sub(r"\s+", " ", node))
        elif isinstance(node, Tag) and node.name not in _INVISIBLE:
            if not include_headings and node.name in _HEADINGS:
                continue
            if node.name in _PARAGRAPHS:
                marker = _PARAGRAPH_MARK
            elif node.name in _LINES:
                marker = _LINE_MARK
            else:
                marker = " " if node.name in {"td", "th"} else ""
            pieces.append(marker)
            todo.append(marker)
            todo.extend(reversed(node.contents))

    # Nested blocks leave runs of markers; empty lines and paragraphs are dropped here.
    paragraphs = []
    for chunk in "".join(pieces).split(_PARAGRAPH_MARK):
        lines = (" ".join(line.split()) for line in chunk.split(_LINE_MARK))
        paragraph = "\n".join(line for line in lines if line)
        if paragraph:
            paragraphs.append(paragraph)
    return "\n\n".join(paragraphs)


_WORD = re.compile(r"\w+(?:[-'\u2019]\w+)*")


def count_words(text: str) -> int:
    """Words in plain text; hyphenated words and contractions count once ("state-of-the-art")."""
    return len(_WORD.findall(text))


def word_count(html_or_text: str) -> int:
    """Words a reader sees in HTML (or plain text, which parses as itself)."""
    return count_words(plain_text(html_or_text))


def first_paragraph(html: str) -> str:
    """The text of the first <p> that has any, whitespace collapsed; "" when there is none."""
    for p in _parse(html).find_all("p"):
        text = _text(p)
        if text:
            return text
    return ""


def headings(html: str) -> list[tuple[int, str]]:
    """(level, text) of each non-empty h1-h6, in document order."""
    found = []
    for tag in _parse(html).find_all(list(_HEADINGS)):
        text = _text(tag)
        if text:
            found.append((int(tag.name[1]), text))
    return found


def links(html: str) -> list[str]:
    """The href of each <a> that has one, in document order."""
    hrefs = []
    for a in _parse(html).find_all("a"):
        href = a.get("href")
        if isinstance(href, str) and href.strip():
            hrefs.append(href.strip())
    return hrefs


# Letters NFKD does not decompose into ASCII.
_ASCII_FOLD = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "đ": "d"}
    | {"Đ": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D"}
)


def slugify(text: str, max_length: int = 75) -> str:
    """A URL slug: lowercase ASCII words joined by hyphens, at most `max_length` characters, cut
    at a word boundary when possible; "draft" when nothing is left."""
    if max_length < 1:
        raise ValueError("max_length must be at least 1")
    folded = unicodedata.normalize("NFKD", text.translate(_ASCII_FOLD))
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").lower()
    # "don't" -> "dont", not "don-t" (a typographic apostrophe is already gone: not ASCII).
    ascii_text = ascii_text.replace("'", "")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    if len(slug) > max_length:
        cut = slug[:max_length]
        # Keep whole words unless the first word alone is longer than the limit.
        if slug[max_length] != "-" and "-" in cut:
            cut = cut.rsplit("-", 1)[0]
        slug = cut.strip("-")
    return slug or "draft"


def _parse(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _text(tag: Tag) -> str:
    """The text of one element on a single line."""
    return " ".join(_render(tag).split())


# --- what is published -------------------------------------------------------------------------

# The marks generated articles carry (generation/article.py): a Sources list of
# `<li id="source-n">` items under `<h2 id="sources">`, cited by `<a href="#source-n">` links.
_SOURCE_ITEM = re.compile(r"^source-\d+$")
_SOURCE_LINK = re.compile(r"^#source-\d+$")
_PUBLIC_URL = re.compile(r"^https?://", re.IGNORECASE)
_LISTS = frozenset({"ol", "ul"})


def without_private_citations(content: str) -> str:
    """`content` as it may be published: Sources-list items that name no public URL (the tenant's
    own files and their headings, as drafts generated before citations moved to the provenance
    list them) removed with the citation links to them, and the Sources heading once nothing is
    left under it. A public item keeps only its links. Content without such items is returned
    as it is."""
    if "source-" not in content:
        return content
    soup = _parse(content)
    changed = False
    emptied: list[Tag] = []
    for item in soup.find_all("li", id=_SOURCE_ITEM):
        public = [a for a in item.find_all("a") if _PUBLIC_URL.match(str(a.get("href", "")))]
        if public:
            if item.get_text(" ", strip=True) != " ".join(a.get_text(strip=True) for a in public):
                item.clear()  # whatever else the item says may name a private file
                for number, link in enumerate(public):
                    item.append(link)
                    if number < len(public) - 1:
                        item.append(" ")
                changed = True
            continue
        holder = item.parent
        item.decompose()
        changed = True
        if isinstance(holder, Tag) and holder.name in _LISTS and not holder.find("li"):
            emptied.append(holder)
    for holder in emptied:
        heading = holder.find_previous_sibling(True)
        if isinstance(heading, Tag) and _is_sources_heading(heading):
            heading.decompose()
        holder.decompose()
    for heading in soup.find_all(list(_HEADINGS), id="sources"):
        after = heading.find_next_sibling(True)
        if not (isinstance(after, Tag) and after.name in _LISTS and after.find("li")):
            heading.decompose()
            changed = True
    for link in soup.find_all("a", href=_SOURCE_LINK):
        if soup.find(id=str(link["href"])[1:]) is not None:
            continue  # a public source's citation
        holder = link.parent
        link.decompose()
        changed = True
        if isinstance(holder, Tag) and holder.name == "sup" and not holder.get_text(strip=True):
            holder.decompose()
    return sanitize(str(soup)) if changed else content


def _is_sources_heading(tag: Tag) -> bool:
    return tag.name in _HEADINGS and (
        tag.get("id") == "sources" or _text(tag).casefold() == "sources"
    )
