"""Inputs and answers of the site profile: inputs camelCase on the wire, answers with the
catalog's (snake_case) field names.

The site profile's fields are bounded plain text wherever they come from (the extractive
reading or a language model: profiles/inference.py makes them so); `ProfileFields` is what is
stored in `SiteProfile.profile`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from contentplatform.kit.schemas import Input

ProfileStatus = Literal["none", "generating", "ready", "failed"]
Person = Literal["first", "second", "third"]


class Business(BaseModel):
    name: str | None = None
    summary: str | None = None
    industry: str | None = None
    locations: list[str] = Field(default_factory=list)


class Product(BaseModel):
    name: str
    description: str | None = None
    url: str | None = None


class Tone(BaseModel):
    descriptors: list[str] = Field(default_factory=list)
    formality: float | None = Field(None, ge=0, le=1, description="0 casual - 1 formal.")
    person: Person | None = Field(None, description="Who the site's text speaks as, or to.")
    sample_phrases: list[str] = Field(default_factory=list)


class ProfileFields(BaseModel):
    """What a site profile says about the business (stored as it is)."""

    business: Business = Field(default_factory=Business)
    products: list[Product] = Field(default_factory=list)
    audiences: list[str] = Field(default_factory=list)
    tone: Tone = Field(default_factory=Tone)
    topics: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    confidence: float = Field(0.0, ge=0, le=1)
    evidence_page_ids: list[uuid.UUID] = Field(
        default_factory=list, description="The pages of the snapshot it was read from."
    )


class SiteProfile(ProfileFields):
    """A suggestion only: nothing applies it to the brand voice by itself."""

    config_id: uuid.UUID
    snapshot_id: uuid.UUID | None
    status: ProfileStatus
    error: str | None = Field(None, description="Why the last refresh failed.")
    generated_at: datetime | None


class RefreshProfileInput(Input):
    id: uuid.UUID = Field(description="The crawl configuration.")
    snapshot_id: uuid.UUID | None = Field(
        None,
        description="A finished snapshot of this configuration; default: its latest finished, "
        "non-partial one.",
    )


class ProfileConfigInput(Input):
    id: uuid.UUID = Field(description="The crawl configuration.")
