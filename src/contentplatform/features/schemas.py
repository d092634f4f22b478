"""Inputs and answers of the features operations: inputs camelCase on the wire, the flag as
the catalog names its fields (snake_case, as every record)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from contentplatform.features.flags import Source, Stage
from contentplatform.kit.schemas import Input, Listing
from contentplatform.kit.text import Identifier


class Feature(BaseModel):
    key: str = Field(examples=["topic_suggestions"])
    enabled: bool = Field(description="Whether it is on for this organization.")
    source: Source = Field(
        description="What decided it: `override` (the operator, for this organization), "
        "`opt_in` (this organization's admin), `rollout` (the operator's percentage of "
        "organizations), `default` (the operator's setting for everyone, or the flag's own), "
        "`plan` (the organization's plan; not used yet)."
    )
    stage: Stage
    opt_in_allowed: bool = Field(
        description="Whether an admin may opt in or out of it (features.setOptIn)."
    )
    description: str


class FeatureList(Listing[Feature]):
    pass


class SetOptInInput(Input):
    key: Identifier = Field(
        max_length=100,
        description="The flag's key (features.list).",
        examples=["topic_suggestions"],
    )
    enabled: bool = Field(description="true: opt in; false: opt out.")
