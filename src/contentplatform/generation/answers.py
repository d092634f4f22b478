"""What the model answers, typed: its outline and its search metadata, read leniently.

A model's JSON is taken as far as it fits: a field of the wrong type counts as left out, a list
keeps only its items of the right type, and text is cut to its bound. Only an answer that is not
a JSON object (fenced or not), or an outline without a section, is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationInfo

from contentplatform.drafts import html
from contentplatform.generation import prompts
from contentplatform.generation.prompts import Brief

TITLE_MAX = 500
HEADING_MAX = 200
POINTS_MAX = 5
KEY_TAKEAWAYS = "Key takeaways"
SEO_TITLE_MAX = 60
META_DESCRIPTION_MAX = 160
EXCERPT_MAX = 300
FOCUS_KEYWORDS_MAX = 5
# An answer wrapped whole in a Markdown code fence (```html ... ```), as chat models like to.
_FENCED = re.compile(r"```[\w-]*[ \t]*\n?(.*?)\n?[ \t]*(?:```)?", re.S)


class InvalidModelOutput(Exception):
    """The model answered in a shape the pipeline cannot use."""


def unfenced(text: str) -> str:
    """The answer without the code fence a model may have wrapped it in."""
    cleaned = text.strip()
    fenced = _FENCED.fullmatch(cleaned)
    return fenced.group(1).strip() if fenced else cleaned


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(unfenced(text))
    except ValueError:
        raise InvalidModelOutput(f"The model's {what} was not valid JSON.") from None
    if not isinstance(value, dict):
        raise InvalidModelOutput(f"The model's {what} was not a JSON object.")
    return value


# --- the outline --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Asked:
    """The validation context of an outline: its topic (the title when the model gives none)
    and how many sources it was given (those it may cite)."""

    topic: str
    sources: int


def _asked(info: ValidationInfo) -> _Asked:
    if not isinstance(info.context, _Asked):
        raise TypeError("an outline is read with Outline.read")
    return info.context


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _refs(value: Any, info: ValidationInfo) -> list[int]:
    if not isinstance(value, list):
        return []
    count = _asked(info).sources
    return [ref for ref in value if isinstance(ref, int) and 1 <= ref <= count]


def _points(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [point for point in value if isinstance(point, str)][:POINTS_MAX]


def _title(value: Any, info: ValidationInfo) -> str:
    given = value.strip() if isinstance(value, str) else ""
    return (given or _asked(info).topic)[:TITLE_MAX]


def _named(value: Any) -> list[Any]:
    """The sections with a heading, at most MAX_SECTIONS."""
    named = [
        section
        for section in value or []
        if isinstance(section, dict)
        and isinstance(section.get("heading"), str)
        and section["heading"].strip()
    ]
    return named[: prompts.MAX_SECTIONS]


def _heading(value: str) -> str:
    return value.strip()[:HEADING_MAX]


def _conclusion_heading(value: Any) -> str:
    return str(value or KEY_TAKEAWAYS)[:HEADING_MAX]


# Source numbers the outline cites: only those of the sources it was given.
Refs = Annotated[list[int], BeforeValidator(_refs)]
Points = Annotated[list[str], BeforeValidator(_points)]


class Intro(BaseModel):
    sources: Refs = []
    points: Points = []


class Section(BaseModel):
    heading: Annotated[str, AfterValidator(_heading)]
    sources: Refs = []
    points: Points = []


class Conclusion(BaseModel):
    heading: Annotated[str, BeforeValidator(_conclusion_heading)] = KEY_TAKEAWAYS
    points: Points = []


class Outline(BaseModel):
    """The plan of the article, as prompts.outline asks for it (prompts.OUTLINE_FORMAT)."""

    # Validated when left out too: the topic stands in for it.
    title: Annotated[str, BeforeValidator(_title)] = Field("", validate_default=True)
    intro: Annotated[Intro, BeforeValidator(_object)] = Field(default_factory=Intro)
    sections: Annotated[list[Section], BeforeValidator(_named)] = []
    conclusion: Annotated[Conclusion, BeforeValidator(_object)] = Field(default_factory=Conclusion)

    @classmethod
    def read(cls, answer: str, *, topic: str, sources: int) -> Outline:
        """The outline in the model's `answer`, written from `sources` sources on `topic`."""
        data = _json_object(answer, "outline")
        outline = cls.model_validate(data, context=_Asked(topic, sources))
        if not outline.sections:
            raise InvalidModelOutput("The model's outline has no sections.")
        return outline


# --- the search metadata ------------------------------------------------------------------------


def _given(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _keywords(value: Any) -> list[str]:
    return [k for k in value if isinstance(k, str) and k.strip()] if value else []


# A text the model may leave out: anything but a non-blank string counts as left out (None).
Given = Annotated[str | None, BeforeValidator(_given)]


class SeoAnswer(BaseModel):
    """The search metadata as prompts.seo asks for it, before it is held to its bounds."""

    seo_title: Given = None
    meta_description: Given = None
    slug: Given = None
    focus_keywords: Annotated[list[str], BeforeValidator(_keywords)] = []
    excerpt: Given = None

    @classmethod
    def read(cls, answer: str) -> SeoAnswer:
        return cls.model_validate(_json_object(answer, "search metadata"))


class SeoMeta(BaseModel):
    """A generated draft's seo_meta."""

    seo_title: str
    meta_description: str
    slug: str
    focus_keywords: list[str]


def seo_meta_from(answer: SeoAnswer, brief: Brief, *, title: str, first_paragraph: str) -> SeoMeta:
    """The model's metadata held to the bounds: SEO title <= 60, meta description <= 160
    (120-160 scores best), a slug, 1-5 focus keywords led by the caller's first keyword."""
    given = [k for k in brief["keywords"] if k.strip()]
    focus = list(dict.fromkeys([*given[:1], *answer.focus_keywords, *given[1:]]))
    seo_title = _clip(answer.seo_title or title, SEO_TITLE_MAX)
    return SeoMeta(
        seo_title=seo_title,
        meta_description=_clip(answer.meta_description or first_paragraph, META_DESCRIPTION_MAX),
        slug=html.slugify(answer.slug or seo_title),
        focus_keywords=focus[:FOCUS_KEYWORDS_MAX] or [brief["topic"]],
    )


def excerpt_from(answer: SeoAnswer, first_paragraph: str) -> str:
    return _clip(answer.excerpt or first_paragraph, EXCERPT_MAX)


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0]
    return (cut if cut and len(cut) <= limit else text[:limit]).rstrip(" ,;:-")
