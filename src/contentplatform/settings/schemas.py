"""Inputs and records of the settings operations (the content rules': rule_schemas.py).

Inputs are camelCase on the wire; records (and a rule's stored `config`) snake_case. Every
string goes through kit/text (an Input's fields, nested ones included): names and titles are
plain text, NUL and control characters are refused, every list and string is bounded.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator, model_validator

from contentplatform.kit.schemas import Input, Listing, Record
from contentplatform.kit.text import (
    Identifier,
    MultiLine,
    Name,
    PlainMultiLine,
    PlainText,
)

# --- tenant settings ----------------------------------------------------------------------------

EmailDigest = Literal["off", "daily", "weekly"]
MAX_DEFAULT_DOCUMENTS = 50
MAX_REDIRECT_ORIGINS = 20
# BCP 47, as far as a form needs: a language, then subtags ("en", "en-GB", "zh-Hant-TW").
_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def _https_url(value: str | None, *, origin: bool) -> str | None:
    """`value` when it is an https URL (an origin: nothing after the host and port)."""
    if value is None:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("must be an https URL")
    if origin:
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError("must be an origin (https://host[:port]), without a path")
        return f"https://{parts.netloc.lower()}"
    return value.strip()


class BlogSettings(BaseModel):
    title: str
    description: str
    canonical_base_url: str | None
    public_feed_enabled: bool
    posts_per_page: int


class ReviewSettings(BaseModel):
    allow_self_approval: bool
    default_reviewer_id: str | None = Field(
        description="The identity provider's user id of the member who reviews by default."
    )


class GenerationSettings(BaseModel):
    target_word_count: int
    include_citations: bool
    default_document_ids: list[uuid.UUID]


class PublishingSettings(BaseModel):
    default_publisher_connection_id: uuid.UUID | None


class SecuritySettings(BaseModel):
    allowed_redirect_origins: list[str]
    api_keys_enabled: bool


class NotificationSettings(BaseModel):
    email_digest: EmailDigest


class TenantSettings(BaseModel):
    tenant_id: uuid.UUID
    name: str
    default_language: str
    blog: BlogSettings
    review: ReviewSettings
    generation: GenerationSettings
    publishing: PublishingSettings
    security: SecuritySettings
    notifications: NotificationSettings
    updated_at: datetime | None
    updated_by: str | None


# What a tenant that never changed its settings has (the stored values override these).
DEFAULT_SETTINGS: dict[str, Any] = {
    "default_language": "en",
    "blog": {
        "title": "",
        "description": "",
        "canonical_base_url": None,
        "public_feed_enabled": True,
        "posts_per_page": 10,
    },
    "review": {"allow_self_approval": True, "default_reviewer_id": None},
    "generation": {
        "target_word_count": 1200,
        "include_citations": True,
        "default_document_ids": [],
    },
    "publishing": {"default_publisher_connection_id": None},
    "security": {"allowed_redirect_origins": [], "api_keys_enabled": True},
    "notifications": {"email_digest": "off"},
}


class BlogPatch(Input):
    title: PlainText | None = Field(None, max_length=200)
    description: PlainMultiLine | None = Field(None, max_length=1000)
    canonical_base_url: Identifier | None = Field(
        None, max_length=2000, description="An https URL; null clears it."
    )
    public_feed_enabled: bool | None = None
    posts_per_page: int | None = Field(None, ge=1, le=50)

    @field_validator("canonical_base_url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        return _https_url(value, origin=False)


class ReviewPatch(Input):
    allow_self_approval: bool | None = None
    default_reviewer_id: Identifier | None = Field(
        None,
        max_length=255,
        description="A member of the organization (their identity provider user id, or our "
        "user id); null clears it. Anyone else is 400.",
    )


class GenerationPatch(Input):
    target_word_count: int | None = Field(None, ge=300, le=5000)
    include_citations: bool | None = None
    default_document_ids: list[uuid.UUID] | None = Field(
        None,
        max_length=MAX_DEFAULT_DOCUMENTS,
        description="Documents of the organization; one that is not is 400, naming it.",
    )


class PublishingPatch(Input):
    default_publisher_connection_id: uuid.UUID | None = Field(
        None, description="A connection of the organization (else 400); null clears it."
    )


class SecurityPatch(Input):
    allowed_redirect_origins: list[Identifier] | None = Field(
        None, max_length=MAX_REDIRECT_ORIGINS, description="https origins."
    )
    api_keys_enabled: bool | None = None

    @field_validator("allowed_redirect_origins")
    @classmethod
    def _origins(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        origins = [_https_url(origin[:2000], origin=True) or "" for origin in value]
        return list(dict.fromkeys(origins))


class NotificationsPatch(Input):
    email_digest: EmailDigest | None = None


class UpdateSettingsInput(Input):
    """Only the fields sent change (within a group too); null leaves a field as it is, but for
    the nullable ones (canonicalBaseUrl, defaultReviewerId, defaultPublisherConnectionId),
    which it clears."""

    name: Name | None = Field(None, min_length=1, max_length=100)
    default_language: Identifier | None = Field(None, max_length=35, examples=["en-GB"])
    blog: BlogPatch | None = None
    review: ReviewPatch | None = None
    generation: GenerationPatch | None = None
    publishing: PublishingPatch | None = None
    security: SecurityPatch | None = None
    notifications: NotificationsPatch | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("default_language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is not None and not _LANGUAGE_TAG.match(value):
            raise ValueError("must be a BCP 47 language tag (en, en-GB, pt-BR)")
        return value


# --- brand voice --------------------------------------------------------------------------------

Formality = Literal["casual", "neutral", "formal"]
Person = Literal["first_plural", "second", "third"]
Term = Annotated[str, Field(min_length=1, max_length=100)]


class Audience(BaseModel):
    name: str
    description: str


class PreferredTerm(BaseModel):
    term: str
    instead_of: str


class Vocabulary(BaseModel):
    preferred: list[PreferredTerm]
    banned: list[str]


class VoiceExample(BaseModel):
    title: str
    content: str


class BrandVoice(BaseModel):
    tone: list[str]
    formality: Formality
    person: Person
    reading_grade: int
    audiences: list[Audience]
    style_guide: str
    vocabulary: Vocabulary
    examples: list[VoiceExample]
    version: int = Field(description="0 until an admin sets the voice (the defaults).")
    updated_at: datetime | None
    updated_by: str | None


DEFAULT_VOICE: dict[str, Any] = {
    "tone": [],
    "formality": "neutral",
    "person": "second",
    "reading_grade": 9,
    "audiences": [],
    "style_guide": "",
    "vocabulary": {"preferred": [], "banned": []},
    "examples": [],
}


class AudienceInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    description: PlainMultiLine = Field("", max_length=1000)


class PreferredTermInput(Input):
    term: PlainText = Field(min_length=1, max_length=100)
    instead_of: PlainText = Field(min_length=1, max_length=100)


class VocabularyInput(Input):
    preferred: list[PreferredTermInput] = Field(default_factory=list, max_length=200)
    banned: list[Annotated[PlainText, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=200
    )


class ExampleInput(Input):
    title: PlainText = Field(min_length=1, max_length=200)
    content: MultiLine = Field(min_length=1, max_length=5000)


class UpdateBrandVoiceInput(Input):
    """The whole voice (what is not sent takes its default)."""

    tone: list[Annotated[PlainText, Field(min_length=1, max_length=50)]] = Field(
        default_factory=list, max_length=5, examples=[["warm", "practical"]]
    )
    formality: Formality = "neutral"
    person: Person = "second"
    reading_grade: int = Field(9, ge=5, le=16)
    audiences: list[AudienceInput] = Field(default_factory=list, max_length=10)
    style_guide: MultiLine = Field("", max_length=10000)
    vocabulary: VocabularyInput = Field(default_factory=VocabularyInput)
    examples: list[ExampleInput] = Field(default_factory=list, max_length=5)
    expected_version: int | None = Field(
        None, ge=0, description="The version this replaces; another current version is 409."
    )


# --- content strategy ---------------------------------------------------------------------------


class Pillar(BaseModel):
    name: str
    description: str
    keywords: list[str]
    weight: float


class Persona(BaseModel):
    name: str
    pains: str
    goals: str


class FunnelMix(BaseModel):
    awareness: int
    consideration: int
    decision: int


class Cadence(BaseModel):
    posts_per_week: int


class Competitor(BaseModel):
    name: str
    url: str


class ContentStrategy(BaseModel):
    goals: list[str]
    pillars: list[Pillar]
    personas: list[Persona]
    funnel_mix: FunnelMix
    cadence: Cadence
    competitors: list[Competitor]
    excluded_topics: list[str]
    version: int = Field(description="0 until an admin sets the strategy (the defaults).")
    updated_at: datetime | None
    updated_by: str | None


DEFAULT_STRATEGY: dict[str, Any] = {
    "goals": [],
    "pillars": [],
    "personas": [],
    "funnel_mix": {"awareness": 50, "consideration": 30, "decision": 20},
    "cadence": {"posts_per_week": 2},
    "competitors": [],
    "excluded_topics": [],
}


class PillarInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    description: PlainMultiLine = Field("", max_length=1000)
    keywords: list[Annotated[PlainText, Field(min_length=1, max_length=100)]] = Field(
        default_factory=list, max_length=30
    )
    weight: float = Field(0.5, ge=0, le=1, description="How much it steers topic suggestions.")


class PersonaInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    pains: PlainMultiLine = Field("", max_length=1000)
    goals: PlainMultiLine = Field("", max_length=1000)


class FunnelMixInput(Input):
    awareness: int = Field(ge=0, le=100)
    consideration: int = Field(ge=0, le=100)
    decision: int = Field(ge=0, le=100)

    @model_validator(mode="after")
    def _sums_to_100(self) -> FunnelMixInput:
        if self.awareness + self.consideration + self.decision != 100:
            raise ValueError("awareness, consideration and decision must sum to 100")
        return self


class CadenceInput(Input):
    posts_per_week: int = Field(ge=0, le=50)


class CompetitorInput(Input):
    name: Name = Field(min_length=1, max_length=100)
    url: Identifier = Field(max_length=2000)

    @field_validator("url")
    @classmethod
    def _web_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL")
        return value


class UpdateStrategyInput(Input):
    """The whole strategy (what is not sent takes its default)."""

    goals: list[Annotated[PlainText, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list, max_length=10
    )
    pillars: list[PillarInput] = Field(default_factory=list, max_length=12)
    personas: list[PersonaInput] = Field(default_factory=list, max_length=10)
    funnel_mix: FunnelMixInput = Field(
        default_factory=lambda: FunnelMixInput(awareness=50, consideration=30, decision=20)
    )
    cadence: CadenceInput = Field(default_factory=lambda: CadenceInput(posts_per_week=2))
    competitors: list[CompetitorInput] = Field(default_factory=list, max_length=20)
    excluded_topics: list[Annotated[PlainText, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list,
        max_length=100,
        description="Never suggested, never rotated into a job: a topic holding every word of "
        "one of these is left out.",
    )
    expected_version: int | None = Field(
        None, ge=0, description="The version this replaces; another current version is 409."
    )


# --- API keys -----------------------------------------------------------------------------------

KeyRole = Literal["member", "editor"]


class ApiKey(Record):
    """An API key as lists show it: never its secret."""

    id: uuid.UUID
    name: str
    prefix: str = Field(examples=["cpk_live_3f9a"])
    role: KeyRole
    created_by: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


class CreatedApiKey(ApiKey):
    """A new key with its secret, shown this once: only its hash is kept."""

    secret: str = Field(examples=["cpk_live_3f9aQ0m2..."])


class ApiKeyList(Listing[ApiKey]):
    """The organization's API keys, revoked ones included, newest first."""


class CreateApiKeyInput(Input):
    name: Name = Field(min_length=1, max_length=100, examples=["Nightly export"])
    role: KeyRole = Field("member", description="What the key may do: never more than editor.")
    expires_in_days: int | None = Field(
        None, ge=1, le=365, description="Days until it stops working; none: until revoked."
    )


class ApiKeyIdInput(Input):
    id: uuid.UUID
