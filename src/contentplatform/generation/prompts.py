"""What the article pipeline asks a model, for each task; PROMPT_VERSION is in every provenance.

Each request carries the rendered messages (what a real model reads) and the same inputs as data
(for the offline writer). Sources are numbered; the model cites them as [n].
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from contentplatform.ai.base import CompletionRequest, Message, Source, Task
from contentplatform.generation.article import Part

PROMPT_VERSION = "blog-2026-11.3"
MAX_SECTIONS = 5

SYSTEM = (
    "You are a careful writer for a content team. Write only from the numbered sources you are "
    "given: every claim must come from them, and each sentence that uses a source ends with its "
    "number in square brackets, like [2]. Never invent facts, figures, names, quotes or links, "
    "and never name the files or documents the sources come from: cite them by number only. "
    "Write clearly for a general business reader, in the language of the sources."
)

OUTLINE_FORMAT = {
    "title": "the article's title",
    "intro": {"sources": [1], "points": ["what the introduction says"]},
    "sections": [{"heading": "a section heading", "sources": [1, 2], "points": ["..."]}],
    "conclusion": {"heading": "Key takeaways", "points": ["..."]},
}


class Brief(TypedDict):
    """What the article is about, as the run was asked. Plain data: the steps are given it."""

    topic: str
    keywords: list[str]
    instructions: str | None
    document_ids: list[str] | None
    # A part's brief: the sentences the article already has, not to be written again.
    used_sentences: NotRequired[list[str]]
    # The organization's brand voice and the rules a writer can follow, as `begin` read them
    # (settings.generation_guidance): {version, voice (None: the defaults), constraints}.
    guidance: NotRequired[dict[str, Any]]


# How much of the brand voice a prompt carries: enough to write in it, never a prompt that
# outgrows the sources it is about.
MAX_STYLE_GUIDE = 2000
MAX_AUDIENCES = 5
MAX_PREFERRED = 30
MAX_BANNED = 50
MAX_EXAMPLES = 2
MAX_EXAMPLE = 800
MAX_CONSTRAINTS = 20
MAX_VOICE = 6000
PERSONS = {
    "first_plural": 'Write as the organization, in the first person plural ("we").',
    "second": 'Address the reader directly ("you").',
    "third": "Write in the third person, without addressing the reader.",
}


def render_voice(guidance: dict[str, Any] | None) -> str:
    """The brand voice and the editorial rules, as the system prompt's last paragraphs ("" for
    an organization that set neither)."""
    voice = (guidance or {}).get("voice")
    constraints = (guidance or {}).get("constraints") or []
    lines: list[str] = []
    if voice:
        lines.append("Write in the organization's brand voice:")
        if voice["tone"]:
            lines.append(f"- Tone: {', '.join(voice['tone'])}.")
        lines.append(f"- Formality: {voice['formality']}. {PERSONS[voice['person']]}")
        lines.append(f"- Reading level: about US school grade {voice['reading_grade']}.")
        audiences = [
            f"{a['name']} ({a['description'][:200]})" if a["description"] else a["name"]
            for a in voice["audiences"][:MAX_AUDIENCES]
        ]
        if audiences:
            lines.append(f"- Written for: {'; '.join(audiences)}.")
        if voice["style_guide"].strip():
            lines.append(
                f"- Style guide: {' '.join(voice['style_guide'][:MAX_STYLE_GUIDE].split())}"
            )
        for term in voice["vocabulary"]["preferred"][:MAX_PREFERRED]:
            lines.append(f'- Say "{term["term"]}", not "{term["instead_of"]}".')
        banned = voice["vocabulary"]["banned"][:MAX_BANNED]
        if banned:
            lines.append(f"- Never use: {', '.join(f'{b!r}' for b in banned)}.")
        for example in voice["examples"][:MAX_EXAMPLES]:
            content = " ".join(example["content"][:MAX_EXAMPLE].split())
            lines.append(f'- An example of the voice ("{example["title"]}"): {content}')
    if constraints:
        lines.append("Editorial rules:")
        lines.extend(f"- {constraint}" for constraint in constraints[:MAX_CONSTRAINTS])
    return "\n".join(lines)[:MAX_VOICE]


def system_prompt(guidance: dict[str, Any] | None) -> str:
    voice = render_voice(guidance)
    return f"{SYSTEM}\n\n{voice}" if voice else SYSTEM


def render_sources(sources: Sequence[Source]) -> str:
    """Each source under its number and heading. Not its document's name: the tenant's files
    are private, and a model shown a name may write it into the article."""
    blocks = []
    for source in sources:
        where = f" ({source.heading})" if source.heading else ""
        blocks.append(f"[{source.ref}]{where}\n{source.text.strip()}")
    return "\n\n".join(blocks)


def _brief_lines(brief: Brief) -> str:
    lines = [f"Topic: {brief['topic']}"]
    if brief.get("keywords"):
        lines.append("Keywords (the first is the focus keyword): " + ", ".join(brief["keywords"]))
    if brief.get("instructions"):
        lines.append(f"Instructions from the content team: {brief['instructions']}")
    return "\n".join(lines)


def outline(brief: Brief, sources: Sequence[Source]) -> CompletionRequest:
    data = {**brief, "max_sections": MAX_SECTIONS}
    user = (
        f"{_brief_lines(brief)}\n\nSources:\n{render_sources(sources)}\n\n"
        f"Plan an article on the topic from these sources: a title, an introduction, 2 to "
        f"{MAX_SECTIONS} sections and a short conclusion. For each part list the numbers of the "
        "sources it draws on and the points it makes. Answer with one JSON object shaped like "
        f"{json.dumps(OUTLINE_FORMAT)}"
    )
    return _request(
        "outline", user, data, sources, max_tokens=1200, temperature=0.3, json_object=True
    )


def section(
    brief: Brief,
    *,
    title: str,
    part: Part,
    sources: Sequence[Source],
    index: int,
    count: int,
    previous_headings: list[str],
) -> CompletionRequest:
    heading = part.heading
    data = {
        **brief,
        "title": title,
        "heading": heading,
        "points": part.points,
        "index": index,
        "count": count,
        "previous_headings": previous_headings,
        "kind": part.kind,
    }
    if part.kind == "intro":
        task = "Write the introduction (no heading): one or two short paragraphs."
    elif part.kind == "conclusion":
        task = f'Write the section "{heading}" (no heading): a <ul> of 3 to 5 one-sentence points.'
    else:
        task = f'Write the section "{heading}" (no heading): one to three paragraphs.'
    if previous_headings:
        # The offline writer is given the sentences written so far (`used_sentences`); a model
        # is asked. Either way the article drops a sentence it already has (article.py).
        task += " Do not repeat what the sections before this one said."
    points = "\n".join(f"- {point}" for point in part.points)
    user = (
        f"{_brief_lines(brief)}\nArticle title: {title}\n"
        f"Sections before this one: {', '.join(previous_headings) or 'none'}\n"
        f"Points to make:\n{points or '- (choose from the sources)'}\n\n"
        f"Sources:\n{render_sources(sources)}\n\n"
        f"{task} Answer with HTML only (<p>, <ul>, <li>, <strong>, <em>), citing sources as [n]."
    )
    return _request("section", user, data, sources, max_tokens=900, temperature=0.4)


def seo(brief: Brief, *, title: str, text: str, first_paragraph: str) -> CompletionRequest:
    data = {**brief, "title": title, "text": text, "first_paragraph": first_paragraph}
    user = (
        f"{_brief_lines(brief)}\nTitle: {title}\n\nArticle:\n{text[:12000]}\n\n"
        "Write its search metadata. Answer with one JSON object: "
        '{"seo_title": "at most 60 characters, with the focus keyword", '
        '"meta_description": "120 to 160 characters, with the focus keyword", '
        '"slug": "lowercase-words-with-hyphens", "focus_keywords": ["1 to 5 phrases"], '
        '"excerpt": "one or two sentences, at most 300 characters"}'
    )
    return _request("seo", user, data, (), max_tokens=400, temperature=0.2, json_object=True)


def _request(
    task: Task,
    user: str,
    data: dict[str, Any],
    sources: Sequence[Source],
    *,
    max_tokens: int,
    temperature: float,
    json_object: bool = False,
) -> CompletionRequest:
    """The task asked with the system prompt, as `user` (for a model) and as `data` (offline)."""
    return CompletionRequest(
        task=task,
        messages=[Message("system", system_prompt(data.get("guidance"))), Message("user", user)],
        brief=data,
        sources=sources,
        max_tokens=max_tokens,
        temperature=temperature,
        json=json_object,
    )
