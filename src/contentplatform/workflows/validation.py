"""Whether a definition can run: each step's config against its type's JSON Schema (jsonschema,
Draft 2020-12, the schemas `workflows.stepTypes` publishes), then the rules between steps. Every
violation is listed, each with the step it is about, where (`steps.2.config.maxSources`) and a
stable code (`RULES`); warnings say what will run other than one may think. Pure: no database.

Steps are read as definitions store them (catalog.step: snake_case keys, configs filled with
their type's defaults). The ordering rules count enabled steps only (a disabled step is kept but
not run); a config is checked whether its step is enabled or not (it may be enabled later), and
keys are unique among all steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

# No stubs for jsonschema in the dev tools yet (types-jsonschema would give them).
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from contentplatform.workflows.catalog import BY_TYPE, STEP_TYPES

# Stock providers whose terms allow an automated choice of image, which an `images` step with
# `source: stock` may name. None yet: Unsplash's API terms require a person to choose each
# image (its `allowsAutomatedSelection` is false). The media domain keeps the provider registry
# (media/providers.py AUTOMATED_SELECTION_PROVIDERS); this copy keeps workflows independent of
# it until a provider that allows it lands there, and must then name it here too.
AUTOMATED_SELECTION_PROVIDERS: Final[frozenset[str]] = frozenset()

# Error codes, one per rule.
CONFIG_INVALID = "CONFIG_INVALID"
SECTIONS_RANGE = "SECTIONS_RANGE"
DUPLICATE_KEY = "DUPLICATE_KEY"
EXACTLY_ONE_WRITE = "EXACTLY_ONE_WRITE"
NOT_REPEATABLE = "NOT_REPEATABLE"
RESEARCH_BEFORE_OUTLINE = "RESEARCH_BEFORE_OUTLINE"
OUTLINE_BEFORE_WRITE = "OUTLINE_BEFORE_WRITE"
AFTER_WRITE = "AFTER_WRITE"
IMAGES_AFTER_OUTLINE = "IMAGES_AFTER_OUTLINE"
REVIEW_GATE_LIMIT = "REVIEW_GATE_LIMIT"
REVIEW_GATE_AFTER_WRITE = "REVIEW_GATE_AFTER_WRITE"
STOCK_PROVIDER_NOT_ALLOWED = "STOCK_PROVIDER_NOT_ALLOWED"
# Warning codes.
STEP_DISABLED = "STEP_DISABLED"
NO_OPTIMIZE = "NO_OPTIMIZE"
RETRIES_UNUSED = "RETRIES_UNUSED"
NO_RETRIES = "NO_RETRIES"

RULES: Final[dict[str, str]] = {
    CONFIG_INVALID: "A step's config breaks its type's JSON Schema (the path names the setting).",
    SECTIONS_RANGE: "An outline's minSections is above its maxSections.",
    DUPLICATE_KEY: "Two steps have the same key; keys are unique within a definition.",
    EXACTLY_ONE_WRITE: "A definition has exactly one enabled write step.",
    NOT_REPEATABLE: "A step type that is not repeatable appears more than once.",
    RESEARCH_BEFORE_OUTLINE: "An outline needs a research step before it.",
    OUTLINE_BEFORE_WRITE: "The write step needs an outline step before it.",
    AFTER_WRITE: "optimize, internal_links and fact_check steps come after the write step.",
    IMAGES_AFTER_OUTLINE: "An images step comes after an outline step.",
    REVIEW_GATE_LIMIT: "A definition has at most 2 enabled review gates.",
    REVIEW_GATE_AFTER_WRITE: "A review gate comes after the write step.",
    STOCK_PROVIDER_NOT_ALLOWED: "An images step takes stock images only from a provider whose "
    "terms allow an automated choice (none does yet; Unsplash requires a person to choose).",
}
WARNINGS: Final[dict[str, str]] = {
    STEP_DISABLED: "A disabled step is kept in the definition but not run.",
    NO_OPTIMIZE: "Without an optimize step the draft gets no SEO title, meta description or slug.",
    RETRIES_UNUSED: "retries are set but onError is not retry: they are not used.",
    NO_RETRIES: "onError is retry but retries is 0: the step fails at its first error.",
}

MAX_REVIEW_GATES = 2
MAX_MESSAGE = 300

_VALIDATORS: Final[dict[str, Draft202012Validator]] = {}
for _type in STEP_TYPES:
    Draft202012Validator.check_schema(_type.config_schema)
    _VALIDATORS[_type.type] = Draft202012Validator(_type.config_schema)


@dataclass(frozen=True)
class Violation:
    """Something that keeps a definition from being published."""

    step_key: str | None
    path: str
    code: str
    message: str


@dataclass(frozen=True)
class Notice:
    """Something worth knowing that does not keep a definition from being published."""

    step_key: str | None
    code: str
    message: str


@dataclass(frozen=True)
class Report:
    errors: tuple[Violation, ...]
    warnings: tuple[Notice, ...]
    estimated_credits: int

    @property
    def valid(self) -> bool:
        return not self.errors


def validate(steps: Sequence[Mapping[str, Any]]) -> Report:
    """Every violation of `steps` (in the order of the steps, configs first), its warnings, and
    the credits its enabled steps cost, roughly."""
    errors = sorted([*_configs(steps), *_keys(steps), *_order(steps)], key=_rank)
    return Report(tuple(errors), tuple(_warnings(steps)), estimated(steps))


def _rank(violation: Violation) -> tuple[int, int]:
    """Steps in order (a definition-wide violation first), configs before the rules."""
    parts = violation.path.split(".")
    index = int(parts[1]) if len(parts) > 1 else -1
    return index, 0 if ".config" in violation.path else 1


def _at(index: int, *rest: str | int) -> str:
    return ".".join(["steps", str(index), *(str(part) for part in rest)])


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


# --- configs -----------------------------------------------------------------------------------


def _configs(steps: Sequence[Mapping[str, Any]]) -> Iterator[Violation]:
    for index, step in enumerate(steps):
        key, config = step["key"], step["config"]
        errors = sorted(
            _VALIDATORS[step["type"]].iter_errors(config),
            key=lambda error: [str(part) for part in error.absolute_path],
        )
        for error in errors:
            yield from _schema_violations(index, key, step["type"], error)
        wrong = {str(error.absolute_path[0]) for error in errors if error.absolute_path}
        if step["type"] == "outline" and not {"minSections", "maxSections"} & wrong:
            low, high = config.get("minSections"), config.get("maxSections")
            if isinstance(low, int) and isinstance(high, int) and low > high:
                yield Violation(
                    key,
                    _at(index, "config", "maxSections"),
                    SECTIONS_RANGE,
                    f"maxSections ({high}) is below minSections ({low}).",
                )
        if step["type"] == "images" and config.get("source") == "stock" and "provider" not in wrong:
            yield from _stock(index, key, config)


def _schema_violations(
    index: int, key: str, type: str, error: ValidationError
) -> Iterator[Violation]:
    where = [str(part) for part in error.absolute_path]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(BY_TYPE[type].properties)
        for name in sorted(set(error.instance) - known):
            yield Violation(
                key,
                _at(index, "config", *where, name),
                CONFIG_INVALID,
                _short(
                    f"{name!r} is not a setting of {type} steps "
                    f"(its settings: {', '.join(sorted(known))})."
                ),
            )
        return
    setting = ".".join(where)
    message = error.message if not setting else f"{setting}: {error.message}"
    yield Violation(key, _at(index, "config", *where), CONFIG_INVALID, _short(message))


def _stock(index: int, key: str, config: Mapping[str, Any]) -> Iterator[Violation]:
    provider = config.get("provider")
    if isinstance(provider, str) and provider in AUTOMATED_SELECTION_PROVIDERS:
        return
    allowed = ", ".join(sorted(AUTOMATED_SELECTION_PROVIDERS)) or "none yet"
    if provider is None:
        message = (
            "Stock images need a provider whose terms allow an automated choice "
            f"(providers that do: {allowed}); use source media_library."
        )
        path = _at(index, "config", "source")
    else:
        message = (
            f"The stock provider {provider!r} does not allow an automated choice of images "
            f"(its terms require a person to choose; providers that do: {allowed})."
        )
        path = _at(index, "config", "provider")
    yield Violation(key, path, STOCK_PROVIDER_NOT_ALLOWED, message)


# --- the rules between steps ---------------------------------------------------------------------


def _keys(steps: Sequence[Mapping[str, Any]]) -> Iterator[Violation]:
    seen: dict[str, int] = {}
    for index, step in enumerate(steps):
        key = step["key"]
        if key in seen:
            yield Violation(
                key,
                _at(index, "key"),
                DUPLICATE_KEY,
                f"The key {key!r} is already the key of step {seen[key] + 1}.",
            )
        else:
            seen[key] = index


def _order(steps: Sequence[Mapping[str, Any]]) -> Iterator[Violation]:
    """The ordering rules over the enabled steps."""
    at: dict[str, list[int]] = {name: [] for name in BY_TYPE}
    for index, step in enumerate(steps):
        if step["enabled"]:
            at[step["type"]].append(index)

    def violation(index: int, code: str, message: str) -> Violation:
        return Violation(steps[index]["key"], _at(index), code, message)

    def label(index: int) -> str:
        return repr(steps[index]["key"])

    writes, outlines, researches = at["write"], at["outline"], at["research"]
    write = writes[0] if writes else None
    outline = outlines[0] if outlines else None

    if not writes:
        yield Violation(
            None, "steps", EXACTLY_ONE_WRITE, "The definition has no enabled write step."
        )
    for index in writes[1:]:
        yield violation(
            index, EXACTLY_ONE_WRITE, f"A second write step: {label(writes[0])} writes already."
        )
    for name, indexes in at.items():
        limit = BY_TYPE[name].positions.max_count
        if name in ("write", "review_gate") or limit is None:
            continue
        for index in indexes[limit:]:
            yield violation(
                index,
                NOT_REPEATABLE,
                f"Only one {name} step runs per definition; {label(indexes[0])} is one already.",
            )

    # research -> outline
    if outline is not None and not researches:
        yield violation(
            outline,
            RESEARCH_BEFORE_OUTLINE,
            "The outline needs a research step "
            "before it: an article is planned from what research finds.",
        )
    for index in researches:
        if outline is not None and index > outline:
            yield violation(
                index,
                RESEARCH_BEFORE_OUTLINE,
                f"Research comes before the outline ({label(outline)}).",
            )

    # outline -> write
    if write is not None and outline is None:
        yield violation(
            write, OUTLINE_BEFORE_WRITE, "The write step needs an outline step before it."
        )
    for index in outlines:
        if write is not None and index > write:
            yield violation(
                index, OUTLINE_BEFORE_WRITE, f"The outline comes before the write ({label(write)})."
            )

    # write -> optimize, internal_links, fact_check
    for name in ("optimize", "internal_links", "fact_check"):
        for index in at[name]:
            if write is not None and index < write:
                yield violation(
                    index,
                    AFTER_WRITE,
                    f"The {name} step comes after the write step ({label(write)}).",
                )

    # outline -> images
    for index in at["images"]:
        if outline is None or index < outline:
            yield violation(
                index,
                IMAGES_AFTER_OUTLINE,
                "An images step comes after an outline step (images are chosen for its sections).",
            )

    # review gates: at most 2, after the write
    gates = at["review_gate"]
    for index in gates[MAX_REVIEW_GATES:]:
        yield violation(
            index, REVIEW_GATE_LIMIT, f"At most {MAX_REVIEW_GATES} review gates per definition."
        )
    for index in gates:
        if write is not None and index < write:
            yield violation(
                index,
                REVIEW_GATE_AFTER_WRITE,
                f"A review gate comes after the write step ({label(write)}): there is nothing "
                "to review before it.",
            )


# --- warnings ----------------------------------------------------------------------------------


def _warnings(steps: Sequence[Mapping[str, Any]]) -> Iterator[Notice]:
    for step in steps:
        key = step["key"]
        if not step["enabled"]:
            yield Notice(key, STEP_DISABLED, f"The step {key!r} is disabled: it will not run.")
            continue
        if step["retries"] > 0 and step["on_error"] != "retry":
            yield Notice(
                key,
                RETRIES_UNUSED,
                f"retries is {step['retries']} but onError is {step['on_error']}: the step is "
                "not retried.",
            )
        if step["on_error"] == "retry" and step["retries"] == 0:
            yield Notice(
                key, NO_RETRIES, "onError is retry but retries is 0: the step is not retried."
            )
    if not any(step["enabled"] and step["type"] == "optimize" for step in steps):
        yield Notice(None, NO_OPTIMIZE, WARNINGS[NO_OPTIMIZE])


def estimated(steps: Sequence[Mapping[str, Any]]) -> int:
    """Credits the enabled steps cost, roughly."""
    return sum(BY_TYPE[step["type"]].estimate(step["config"]) for step in steps if step["enabled"])
