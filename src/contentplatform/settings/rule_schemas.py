"""Inputs and records of the content rules operations, and each rule type's config (the rule
engine is rules.py). Inputs are camelCase on the wire; records (and a rule's stored `config`)
snake_case; every string goes through kit/text.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from contentplatform.kit.schemas import Input, Listing, Record
from contentplatform.kit.text import (
    JsonObject,
    MultiLine,
    Name,
    PlainText,
)

RuleType = Literal[
    "banned_phrase",
    "required_phrase",
    "regex",
    "max_sentence_words",
    "word_count",
    "heading_structure",
    "link_policy",
    "disclaimer",
    "llm_check",
]
Severity = Literal["error", "warning"]
Stage = Literal["generation", "review", "publish"]
STAGES: list[Stage] = ["generation", "review", "publish"]
MAX_RULES = 100
MAX_PATTERN = 1000
Phrase = Annotated[str, Field(min_length=1, max_length=200)]
Domain = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.-]+$")]


class _Config(BaseModel):
    """A rule type's config: camelCase or snake_case keys in, snake_case stored."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class BannedPhraseConfig(_Config):
    type: Literal["banned_phrase"]
    phrases: list[Phrase] = Field(min_length=1, max_length=200)
    case_sensitive: bool = False


class RequiredPhraseConfig(_Config):
    type: Literal["required_phrase"]
    phrases: list[Phrase] = Field(min_length=1, max_length=50)
    match: Literal["all", "any"] = "all"
    case_sensitive: bool = False


class RegexConfig(_Config):
    type: Literal["regex"]
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN)
    ignore_case: bool = False
    # forbid: every match is a violation; require: no match is one.
    mode: Literal["forbid", "require"] = "forbid"
    message: str | None = Field(None, max_length=300)

    @model_validator(mode="after")
    def _compiles(self) -> RegexConfig:
        try:
            regex.compile(self.pattern, flags(self))
        except regex.error as error:
            raise ValueError(f"pattern does not compile: {error}") from None
        return self


def flags(config: RegexConfig) -> int:
    """The `regex` flags a pattern is compiled with: VERSION1 semantics are not asked for, so
    a pattern means what Python's `re` would make of it."""
    return int(regex.IGNORECASE) if config.ignore_case else 0


class MaxSentenceWordsConfig(_Config):
    type: Literal["max_sentence_words"]
    max_words: int = Field(ge=5, le=500)


class WordCountConfig(_Config):
    type: Literal["word_count"]
    min_words: int | None = Field(None, ge=0, le=50000)
    max_words: int | None = Field(None, ge=1, le=50000)

    @model_validator(mode="after")
    def _a_bound(self) -> WordCountConfig:
        if self.min_words is None and self.max_words is None:
            raise ValueError("give minWords, maxWords or both")
        both = self.min_words is not None and self.max_words is not None
        if both and self.min_words > self.max_words:  # type: ignore[operator]
            raise ValueError("minWords must not exceed maxWords")
        return self


class HeadingStructureConfig(_Config):
    type: Literal["heading_structure"]
    min_h2: int = Field(1, ge=0, le=50)
    # The title is the page's h1: the content should have none.
    allow_h1: bool = False
    no_skipped_levels: bool = True


class LinkPolicyConfig(_Config):
    type: Literal["link_policy"]
    max_links: int | None = Field(None, ge=0, le=1000)
    require_https: bool = False
    blocked_domains: list[Domain] = Field(default_factory=list, max_length=100)
    allowed_domains: list[Domain] | None = Field(None, max_length=100)


class DisclaimerConfig(_Config):
    type: Literal["disclaimer"]
    text: str = Field(min_length=1, max_length=2000)
    position: Literal["start", "end", "anywhere"] = "end"


class LlmCheckConfig(_Config):
    type: Literal["llm_check"]
    instruction: str = Field(min_length=1, max_length=2000)


RuleConfig = Annotated[
    BannedPhraseConfig
    | RequiredPhraseConfig
    | RegexConfig
    | MaxSentenceWordsConfig
    | WordCountConfig
    | HeadingStructureConfig
    | LinkPolicyConfig
    | DisclaimerConfig
    | LlmCheckConfig,
    Field(discriminator="type"),
]

CONFIG_DESCRIPTION = (
    "Validated for the type. banned_phrase {phrases (1-200), caseSensitive}; required_phrase "
    "{phrases (1-50), match all|any, caseSensitive}; regex {pattern (<= 1000, compiled), "
    "ignoreCase, mode forbid|require, message}; max_sentence_words {maxWords 5-500}; word_count "
    "{minWords, maxWords}; heading_structure {minH2, allowH1, noSkippedLevels}; link_policy "
    "{maxLinks, requireHttps, blockedDomains, allowedDomains}; disclaimer {text, position "
    "start|end|anywhere}; llm_check {instruction}."
)


class ContentRule(Record):
    id: uuid.UUID
    name: str
    type: RuleType
    config: dict[str, Any]
    severity: Severity
    stages: list[Stage]
    enabled: bool
    created_at: datetime
    updated_at: datetime


class RuleList(Listing[ContentRule]):
    """The organization's content rules, oldest first."""


class ListRulesInput(Input):
    enabled: bool | None = None
    type: RuleType | None = None


class RuleIdInput(Input):
    id: uuid.UUID


def in_order(stages: list[Stage] | None) -> list[Stage] | None:
    """The stages once each, in the order they come."""
    return None if stages is None else [stage for stage in STAGES if stage in stages]


class CreateRuleInput(Input):
    name: Name = Field(min_length=1, max_length=100, examples=["No hype"])
    type: RuleType
    config: JsonObject = Field(
        description=CONFIG_DESCRIPTION, examples=[{"phrases": ["world-class", "synergy"]}]
    )
    severity: Severity = "warning"
    stages: list[Stage] = Field(default_factory=lambda: list(STAGES), min_length=1, max_length=3)
    enabled: bool = True

    @field_validator("stages")
    @classmethod
    def _stages_in_order(cls, value: list[Stage]) -> list[Stage] | None:
        return in_order(value)


class UpdateRuleInput(Input):
    id: uuid.UUID
    name: Name | None = Field(None, min_length=1, max_length=100)
    config: JsonObject | None = Field(None, description=CONFIG_DESCRIPTION)
    severity: Severity | None = None
    stages: list[Stage] | None = Field(None, min_length=1, max_length=3)
    enabled: bool | None = None

    @field_validator("stages")
    @classmethod
    def _stages_in_order(cls, value: list[Stage] | None) -> list[Stage] | None:
        return in_order(value)


MAX_CHECK_CONTENT = 200_000


class CheckRulesInput(Input):
    draft_id: uuid.UUID | None = Field(None, description="A draft of the organization.")
    title: PlainText | None = Field(None, max_length=500)
    content: MultiLine | None = Field(
        None, max_length=MAX_CHECK_CONTENT, description="HTML; its text is linted."
    )
    stage: Stage = "review"

    @model_validator(mode="after")
    def _one_of(self) -> CheckRulesInput:
        if (self.draft_id is None) == (self.content is None):
            raise ValueError("give draftId, or content (with an optional title), not both")
        return self


class Violation(BaseModel):
    rule_id: uuid.UUID
    rule_name: str
    severity: Severity
    message: str
    excerpt: str
    start: int | None = Field(
        description="Character offsets in the checked text (the title, a blank line, then the "
        "content's text); null when what breaks the rule has no place in it (a missing phrase, "
        "a link, the length)."
    )
    end: int | None


class Skipped(BaseModel):
    rule_id: uuid.UUID
    rule_name: str
    reason: str


class CheckResult(BaseModel):
    passed: bool = Field(description="No error-level rule is broken (warnings do not fail).")
    violations: list[Violation]
    checked: int = Field(description="How many rules were checked (the skipped ones are not).")
    skipped: list[Skipped]
