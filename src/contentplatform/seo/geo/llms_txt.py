"""llms.txt as llmstxt.org proposes it: an H1 with the site's name, an optional blockquote
summary, then H2 sections of markdown links (`- [title](url): description`), the section named
`Optional` holding what a model may skip. `parse` reads one (the site's live file, or ours back)
and names what breaks the format; `generate` writes one from the pages of a scan."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

OPTIONAL = "Optional"
# Pages deeper than this go to the Optional section, when there is one.
PRIMARY_DEPTH = 2
_LINK = re.compile(
    r"^[-*+]\s+\[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<url>[^)\s]+)\)(?::\s*(?P<desc>.*))?$"
)
_SPACE = re.compile(r"\s+")


@dataclass
class Link:
    title: str
    url: str
    description: str | None = None


@dataclass
class Section:
    title: str
    links: list[Link] = field(default_factory=list)


@dataclass
class Parsed:
    title: str | None
    summary: str | None
    sections: list[Section]
    problems: list[str]

    @property
    def link_count(self) -> int:
        return sum(len(section.links) for section in self.sections)


def parse(text: str) -> Parsed:
    """The file's title, summary and sections, and every way it departs from the format."""
    problems: list[str] = []
    title: str | None = None
    summary: str | None = None
    sections: list[Section] = []
    lines = text.lstrip("\ufeff").splitlines()
    body = [(number, line.rstrip()) for number, line in enumerate(lines, 1) if line.strip()]
    if not body or not body[0][1].startswith("# "):
        problems.append("The file must start with an H1 title (`# Site name`).")
    for number, line in body:
        if line.startswith("# "):
            if title is not None or sections:
                problems.append(f"Line {number}: a second H1; only the first line is the title.")
            else:
                title = line[2:].strip()
        elif line.startswith("## "):
            sections.append(Section(line[3:].strip()))
        elif line.startswith(">") and not sections:
            part = line[1:].strip()
            summary = f"{summary} {part}".strip() if summary else part
        elif sections and line.lstrip().startswith(("-", "*", "+")):
            found = _LINK.match(line.strip())
            if found is None:
                problems.append(f"Line {number}: a list item that is not `- [title](url)`.")
                continue
            url = found["url"]
            if urlsplit(url).scheme not in ("http", "https"):
                problems.append(f"Line {number}: the link is not an absolute http(s) URL.")
            sections[-1].links.append(
                Link(_unescape(found["title"]), url, (found["desc"] or "").strip() or None)
            )
    if not sections:
        problems.append("No H2 section of links (`## Docs` then `- [title](url)`).")
    elif not any(section.links for section in sections):
        problems.append("The sections hold no links.")
    return Parsed(title, summary, sections, problems)


@dataclass(frozen=True)
class SourcePage:
    url: str
    title: str | None
    description: str | None
    depth: int


@dataclass(frozen=True)
class SectionRule:
    title: str
    url_patterns: tuple[str, ...]  # globs over the URL's path (`/blog/*`)


def generate(
    name: str,
    summary: str | None,
    pages: list[SourcePage],
    *,
    rules: list[SectionRule],
    max_links: int,
    optional_section: bool,
) -> tuple[str, list[Section]]:
    """The file and its sections: pages in order of depth then URL, each in the first section
    whose pattern matches its path (or, without rules, a section per top-level path, the
    site's root pages under `Pages`); deeper than PRIMARY_DEPTH under `Optional` when asked;
    at most `max_links` links in all."""
    sections: dict[str, Section] = {rule.title: Section(rule.title) for rule in rules}
    optional = Section(OPTIONAL)
    taken = 0
    for page in sorted(pages, key=lambda p: (p.depth, p.url)):
        if taken >= max_links:
            break
        path = urlsplit(page.url).path or "/"
        if rules:
            home = next((rule.title for rule in rules if _matches(rule, path)), None)
            if home is None:
                continue
        else:
            segment = path.strip("/").split("/", 1)[0]
            home = _heading(segment) if segment and "/" in path.strip("/") else "Pages"
        link = Link(_one_line(page.title) or page.url, page.url, _one_line(page.description))
        target = optional if optional_section and page.depth > PRIMARY_DEPTH else None
        (target or sections.setdefault(home, Section(home))).links.append(link)
        taken += 1
    kept = [section for section in sections.values() if section.links]
    if optional.links:
        kept.append(optional)
    lines = [f"# {_one_line(name) or 'Site'}", ""]
    if summary and _one_line(summary):
        lines += [f"> {_one_line(summary)}", ""]
    for section in kept:
        lines += [f"## {section.title}", ""]
        lines += [_link_line(link) for link in section.links]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n", kept


def _matches(rule: SectionRule, path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in rule.url_patterns)


def _link_line(link: Link) -> str:
    title = link.title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    url = quote(link.url, safe=":/?#[]@!$&'*+,;=%~")  # spaces and parentheses escaped
    return f"- [{title}]({url})" + (f": {link.description}" if link.description else "")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _one_line(text: str | None, limit: int = 300) -> str:
    return _SPACE.sub(" ", text or "").strip()[:limit]


def _heading(segment: str) -> str:
    words = re.split(r"[-_]+", segment)
    return " ".join(word.capitalize() for word in words if word)[:100] or "Pages"
