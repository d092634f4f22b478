"""The text of an HTML page: its main content without the page's furniture or navigation,
as Markdown (documents/parsing.py dispatches here)."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PreformattedString, Tag

from contentplatform.documents import extraction

# Never content. iframe/object/embed/canvas hold only fallback text for other media.
_ALWAYS_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas"}
)
# Page furniture around the content.
_FURNITURE = frozenset({"nav", "footer", "header", "aside", "form"})
# Navigation and tables of contents marked by their class, id or role, as documentation
# generators write them: texinfo's `nav-panel` ("Next: ..., Up: ..."), DocBook's
# `navheader`/`navfooter` tables and `div.toc`, Sphinx's `related` and `sphinxsidebar`. A
# `header` or `footer` class counts when no heading is inside (texinfo's `div.header` is its
# pager; a site's may hold the article's title).
_NAVIGATION = re.compile(
    r"^(?:nav|navbar|navigation|nav-?panel|nav-?header|nav-?footer|breadcrumbs?"
    r"|toc|contents|mini-toc|table-of-contents|related|sphinxsidebar|sidebar|menu|skip-?link)$",
    re.IGNORECASE,
)
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Elements that start a new block; anything else is inline and flows into the current line.
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "blockquote", "body", "dd", "details", "dialog", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "hr", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th",
        "thead", "tr", "ul", "caption", "html",
    }
)  # fmt: skip


class _HtmlText:
    """Walks an element and collects (kind, text) blocks."""

    def __init__(self, skipped: frozenset[str]) -> None:
        self.skipped = skipped
        self.blocks: list[tuple[str, str]] = []
        self.line: list[str | None] = []  # None marks a <br>
        self.item_prefix = ""

    def render(self, element: Tag) -> list[tuple[str, str]]:
        self._walk(element)
        self._flush()
        return self.blocks

    def _flush(self) -> None:
        # A <br> survives as a line break; any other whitespace collapses to single spaces.
        lines: list[str] = []
        current: list[str] = []
        for part in [*self.line, None]:
            if part is None:
                lines.append(extraction.inline("".join(current)))
                current = []
            else:
                current.append(part)
        text = "\n".join(lines).strip()
        self.line = []
        if not text:
            return
        if self.item_prefix:
            self.blocks.append(("item", self.item_prefix + text))
            self.item_prefix = ""
        else:
            self.blocks.append(("paragraph", text))

    def _inline_text(self, element: Tag) -> str:
        """An element's text on one line (a heading, a table cell)."""
        return " ".join(text for _, text in _HtmlText(self.skipped).render(element))

    def _walk(self, element: Tag) -> None:
        for child in element.children:
            if isinstance(child, NavigableString):
                # Comments, CDATA, doctypes and processing instructions are not text.
                if not isinstance(child, PreformattedString):
                    self.line.append(str(child))
                continue
            if (
                not isinstance(child, Tag)
                or child.name in self.skipped
                or child.has_attr("hidden")
                or _is_navigation(child)
            ):
                continue
            name = child.name
            if name in _HEADINGS:
                self._flush()
                if text := extraction.inline(self._inline_text(child)):
                    self.blocks.append(("heading", "#" * _HEADINGS[name] + " " + text))
            elif name == "br":
                self.line.append(None)
            elif name == "li":
                self._flush()
                self.item_prefix = "- "
                self._walk(child)
                self._flush()
            elif name == "pre":
                self._flush()
                if code := child.get_text().strip("\n"):
                    self.blocks.append(("code", f"```\n{code}\n```"))
            elif name == "table" and _is_data_table(child):
                self._flush()
                self._table(child)
            elif name in _BLOCK_TAGS:
                self._flush()
                self._walk(child)
                self._flush()
            else:
                self._walk(child)

    def _table(self, table: Tag) -> None:
        caption = table.find("caption")
        if isinstance(caption, Tag) and (text := self._inline_text(caption)):
            self.blocks.append(("paragraph", text))
        rows: list[list[str]] = []
        for row in table.find_all("tr"):
            cells: list[str] = []
            for cell in row.find_all(["th", "td"], recursive=False):
                span = str(cell.get("colspan") or "1")
                # Keep the columns aligned under a merged cell.
                extra = min(int(span), 50) - 1 if span.isdigit() and int(span) > 1 else 0
                cells += [self._inline_text(cell), *[""] * extra]
            rows.append(cells)
        if text := extraction.markdown_table(rows):
            self.blocks.append(("table", text))


def _is_navigation(element: Tag) -> bool:
    """Links to other pages, not content: an element whose role, class or id says navigation or
    table of contents, or a navigation table (DocBook's `summary="Navigation header"`)."""
    if str(element.get("role", "")).lower() in ("navigation", "doc-toc"):
        return True
    names = [name for name in [*element.get_attribute_list("class"), element.get("id")] if name]
    if any(isinstance(name, str) and _NAVIGATION.match(name) for name in names):
        return True
    if {str(name).lower() for name in names} & {"header", "footer"}:
        return element.find(list(_HEADINGS)) is None
    return element.name == "table" and "navigation" in str(element.get("summary", "")).lower()


def _is_data_table(table: Tag) -> bool:
    """Tables used for page layout (nested tables, headings inside, one column) are walked as
    containers; rendering them as Markdown tables would bury the text in cells."""
    if table.find(["table", *_HEADINGS]) is not None:
        return False
    return any(len(row.find_all(["th", "td"], recursive=False)) > 1 for row in table.find_all("tr"))


def _html_roots(soup: BeautifulSoup) -> list[tuple[Tag, frozenset[str]]]:
    """Where to look for the text, best first, each with the elements to skip there."""
    roots: list[tuple[Tag, frozenset[str]]] = []
    main = soup.find("main") or soup.find(True, {"role": "main"})
    articles = [a for a in soup.find_all("article") if a.find_parent("article") is None]
    # Inside <main> or an <article>, a <header> holds the article's title: keep it.
    content_skipped = _ALWAYS_SKIPPED | (_FURNITURE - {"header"})
    if isinstance(main, Tag):
        roots.append((main, content_skipped))
    elif len(articles) == 1:
        roots.append((articles[0], content_skipped))
    body = soup.body or soup
    roots.append((body, _ALWAYS_SKIPPED | _FURNITURE))
    # Some pages put everything in a <form> (ASP.NET) or a <header>: better furniture than nothing.
    roots.append((body, _ALWAYS_SKIPPED))
    return roots


def extract(data: bytes) -> str:
    # Given bytes, BeautifulSoup honours a <meta charset> and otherwise guesses the encoding.
    soup = BeautifulSoup(data, "html.parser")
    for root, skipped in _html_roots(soup):
        text = extraction.tidy(
            extraction.join_blocks(_HtmlText(skipped).render(root)), collapse_spaces=False
        )
        if text:
            return text
    raise extraction.ExtractionError("The page has no readable text.")
