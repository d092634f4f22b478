"""The step types a workflow is made of, as plain data: what `workflows.stepTypes` publishes, what
`validate` enforces, and what the generation engine reads (`STEP_TYPES`, `builtin_default()`).

Each type has a config typed by a JSON Schema (Draft 2020-12): `additionalProperties: false`,
a bound on every number, string and list, and the defaults a saved step is filled with (so a
frozen version keeps the values it was published with when a later release changes a default).

Where a type may stand (`positions`) is the ordering rules of validation.py, said as data:
`after` names the types one of which must come earlier (research before an outline, an outline
before the write and the images, the write before optimize, internal_links, fact_check and a
review gate), `before` the types it must not follow; `max_count` how many enabled steps of the
type a definition may hold (`None`: no bound but the 12 steps of a definition).

The built-in default definition is today's fixed pipeline (generation/workflows.py: retrieve ->
outline -> write -> optimize, then score and finalize, which every run appends): the definition
a job runs when neither it nor its organization names a workflow.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

StepTypeName = Literal[
    "research",
    "outline",
    "write",
    "optimize",
    "images",
    "internal_links",
    "fact_check",
    "review_gate",
]
TYPE_NAMES: tuple[str, ...] = get_args(StepTypeName)
OnError = Literal["fail", "skip", "retry"]

# A step's own bounds (the Step input holds them; the engine may rely on them).
MAX_STEPS = 12
MAX_KEY_LENGTH = 40
KEY_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"
MAX_RETRIES = 3
MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS = 10, 1800
DEFAULT_TIMEOUT_SECONDS = 300
# A config is a small object: its JSON at most this many bytes.
MAX_CONFIG_BYTES = 10_000

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Positions:
    """Where a step of a type may stand in a definition (enabled steps only)."""

    after: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    min_count: int = 0
    max_count: int | None = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "after": list(self.after),
            "before": list(self.before),
            "min_count": self.min_count,
            "max_count": self.max_count,
        }


@dataclass(frozen=True)
class StepType:
    type: str
    label: str
    description: str
    properties: dict[str, Any]
    defaults: dict[str, Any]
    positions: Positions
    # Credits a step of this type costs at its defaults, roughly (1 credit per started 1,000
    # model tokens, as generation charges): what `validate` adds up.
    credits_estimate: int
    required: tuple[str, ...] = ()

    @property
    def repeatable(self) -> bool:
        return self.positions.max_count is None or self.positions.max_count > 1

    @property
    def config_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "$schema": SCHEMA_DIALECT,
            "title": f"{self.label} step config",
            "type": "object",
            "additionalProperties": False,
            "properties": copy.deepcopy(self.properties),
        }
        if self.required:
            schema["required"] = list(self.required)
        return schema

    def with_defaults(self, config: dict[str, Any]) -> dict[str, Any]:
        """`config` with this type's defaults for what it leaves out."""
        return {**copy.deepcopy(self.defaults), **config}

    def estimate(self, config: dict[str, Any]) -> int:
        """Credits a step of this type with `config` costs, roughly."""
        if self.type == "write":
            words = config.get("targetWords")
            if not isinstance(words, int) or isinstance(words, bool) or not 1 <= words <= 5000:
                words = self.defaults["targetWords"]
            return math.ceil(words / WORDS_PER_CREDIT)
        return self.credits_estimate

    def as_dict(self) -> dict[str, Any]:
        """As `workflows.stepTypes` shows it."""
        return {
            "type": self.type,
            "label": self.label,
            "description": self.description,
            "config_schema": self.config_schema,
            "defaults": copy.deepcopy(self.defaults),
            "allowed_positions": self.positions.as_dict(),
            "repeatable": self.repeatable,
            "credits_estimate": self.credits_estimate,
        }


# The write step's estimate: about 1 credit per 100 words written (prompts with their passages
# included), so an article at the default 1,500 words is 15.
WORDS_PER_CREDIT = 100


def _integer(minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _number(minimum: float, maximum: float, description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": minimum, "maximum": maximum, "description": description}


def _choice(values: tuple[str, ...], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _flag(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


TONES = ("brand_voice", "neutral", "friendly", "professional", "conversational", "authoritative")
LINK_SOURCES = ("posts", "site_pages")

STEP_TYPES: Final[tuple[StepType, ...]] = (
    StepType(
        type="research",
        label="Research",
        description="Search the organization's knowledge (its documents, the primary one always, "
        "and pages the website scan imported) for passages on the topic and keywords; every "
        "later step writes from what it finds. Finding nothing fails the run (NO_SOURCES).",
        properties={
            "maxSources": _integer(1, 20, "Passages kept at most, best first."),
            "useWebsitePages": _flag("Search the website pages imported as knowledge too."),
            "minRelevance": _number(
                0, 1, "Passages scoring below this share of the best one are dropped."
            ),
        },
        defaults={"maxSources": 8, "useWebsitePages": True, "minRelevance": 0.3},
        positions=Positions(before=("outline",)),
        credits_estimate=0,
    ),
    StepType(
        type="outline",
        label="Outline",
        description="Plan the article from the research: title, introduction, sections (each "
        "naming its sources) and key takeaways; each section is then researched on its own.",
        properties={
            "minSections": _integer(2, 12, "Sections planned at least."),
            "maxSections": _integer(2, 12, "Sections planned at most (not below minSections)."),
            "keyTakeaways": _flag("End with a list of key takeaways."),
        },
        defaults={"minSections": 2, "maxSections": 5, "keyTakeaways": True},
        positions=Positions(after=("research",), before=("write",)),
        credits_estimate=2,
    ),
    StepType(
        type="write",
        label="Write",
        description="Write the article part by part from the outline and its sources, citing "
        "them; a sentence an earlier part has is dropped from a later one. Exactly one per "
        "definition.",
        properties={
            "targetWords": _integer(300, 5000, "Words the article aims at."),
            "tone": _choice(
                TONES, "The voice to write in; brand_voice (the default): the organization's."
            ),
        },
        defaults={"targetWords": 1500, "tone": "brand_voice"},
        positions=Positions(after=("outline",), min_count=1, max_count=1),
        credits_estimate=15,
    ),
    StepType(
        type="optimize",
        label="Optimize",
        description="Write the SEO title (at most 60 characters), meta description (at most "
        "160), slug, focus keywords and excerpt; the SEO score follows.",
        properties={
            "targetKeywords": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 100},
                "maxItems": 20,
                "uniqueItems": True,
                "description": "Keywords to optimize for, after the job's own (at most 20).",
            },
            "minSeoScore": _integer(
                0, 100, "The SEO score a draft should reach; below it the run says so."
            ),
        },
        defaults={"targetKeywords": [], "minSeoScore": 0},
        positions=Positions(after=("write",)),
        credits_estimate=1,
    ),
    StepType(
        type="images",
        label="Images",
        description="Choose images for the article: from the organization's media library, or "
        "from a stock provider whose terms allow an automated choice (none does yet: Unsplash "
        "requires a person to choose). May appear twice (a featured image and inline ones).",
        properties={
            "source": _choice(("media_library", "stock"), "Where images come from."),
            "provider": {
                "type": "string",
                "minLength": 1,
                "maxLength": 40,
                "pattern": "^[a-z0-9_]+$",
                "description": "The stock provider (source stock only).",
            },
            "count": _integer(0, 5, "Images placed in the article."),
            "featured": _flag("Also choose the featured image."),
        },
        defaults={"source": "media_library", "count": 1, "featured": True},
        positions=Positions(after=("outline",), max_count=2),
        credits_estimate=0,
    ),
    StepType(
        type="internal_links",
        label="Internal links",
        description="Link the article to the organization's own posts and site pages where "
        "they are on topic.",
        properties={
            "maxLinks": _integer(0, 10, "Links added at most."),
            "sources": {
                "type": "array",
                "items": {"type": "string", "enum": list(LINK_SOURCES)},
                "minItems": 1,
                "maxItems": len(LINK_SOURCES),
                "uniqueItems": True,
                "description": "What may be linked to: published posts, scanned site pages.",
            },
        },
        defaults={"maxLinks": 3, "sources": list(LINK_SOURCES)},
        positions=Positions(after=("write",)),
        credits_estimate=1,
    ),
    StepType(
        type="fact_check",
        label="Fact check",
        description="Check each claim of the article against its sources; a claim they do not "
        "support is flagged for the reviewer, or fails the run.",
        properties={
            "onUnsupported": _choice(
                ("flag", "fail"), "flag: mark unsupported claims; fail: fail the run."
            ),
            "minSupport": _number(0, 1, "Share of a claim's words its sources must support."),
        },
        defaults={"onUnsupported": "flag", "minSupport": 0.5},
        positions=Positions(after=("write",)),
        credits_estimate=3,
    ),
    StepType(
        type="review_gate",
        label="Review gate",
        description="Wait for a person: the run waits (waiting_review) until the draft is "
        "approved (the run goes on) or rejected (it fails), at most timeoutHours (then it "
        "fails). At most two per definition.",
        properties={
            "timeoutHours": _integer(1, 720, "Hours the run waits at most."),
        },
        defaults={"timeoutHours": 72},
        positions=Positions(after=("write",), max_count=2),
        credits_estimate=0,
    ),
)

BY_TYPE: Final[dict[str, StepType]] = {step_type.type: step_type for step_type in STEP_TYPES}


def catalog() -> list[dict[str, Any]]:
    """Every step type as `workflows.stepTypes` shows it (fresh copies)."""
    return [step_type.as_dict() for step_type in STEP_TYPES]


def step(
    key: str,
    type: str,
    *,
    name: str | None = None,
    enabled: bool = True,
    config: dict[str, Any] | None = None,
    on_error: str = "fail",
    retries: int = 0,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """A step as definitions store it: its type's label for a name it lacks, its config filled
    with its type's defaults."""
    step_type = BY_TYPE[type]
    return {
        "key": key,
        "type": type,
        "name": name or step_type.label,
        "enabled": enabled,
        "config": step_type.with_defaults(config or {}),
        "on_error": on_error,
        "retries": retries,
        "timeout_seconds": timeout_seconds,
    }


BUILTIN_DEFAULT_NAME: Final = "Standard article"
BUILTIN_DEFAULT_DESCRIPTION: Final = (
    "The built-in pipeline: research, outline, write and optimize (then score and finalize)."
)
_BUILTIN_STEPS: Final[tuple[dict[str, Any], ...]] = (
    # Today's retrieval: up to 16 passages, cut by the search's own relative cut alone.
    step("research", "research", config={"maxSources": 16, "minRelevance": 0}),
    step("outline", "outline"),
    step("write", "write"),
    step("optimize", "optimize"),
)


def builtin_default() -> dict[str, Any]:
    """The built-in default definition as plain data (a fresh copy): `{name, description,
    steps}`, what runs when neither the job nor its organization names a workflow."""
    return {
        "name": BUILTIN_DEFAULT_NAME,
        "description": BUILTIN_DEFAULT_DESCRIPTION,
        "steps": copy.deepcopy(list(_BUILTIN_STEPS)),
    }
