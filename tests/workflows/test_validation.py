"""workflows.stepTypes and workflows.validate over REST and RPC, and publishVersion refusing what
validate refuses: each ordering rule with its code (and validate listing all of them at once), a
config against its type's JSON Schema reported by its path, warnings and the credits estimate.
The step catalog itself is checked as data: every schema Draft 2020-12, closed and bounded."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from contentplatform.workflows import catalog, validation
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.workflows.support import STANDARD, Designer, codes, steps

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

designer = org_fixture(Designer)
other = org_fixture(Designer, second=True)

TYPES = [
    "research",
    "outline",
    "write",
    "optimize",
    "images",
    "internal_links",
    "fact_check",
    "review_gate",
]
TYPE_FIELDS = {
    *("type", "label", "description", "config_schema", "defaults", "allowed_positions"),
    *("repeatable", "credits_estimate"),
}


def _walk(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = [schema]
    for child in schema.get("properties", {}).values():
        found += _walk(child)
    if isinstance(schema.get("items"), dict):
        found += _walk(schema["items"])
    return found


def test_every_step_type_is_published_with_a_closed_bounded_schema(designer: Designer) -> None:
    answer = designer.ok("workflows.stepTypes", role="member")
    assert [entry["type"] for entry in answer["data"]] == TYPES
    for entry in answer["data"]:
        assert set(entry) == TYPE_FIELDS
        schema = entry["config_schema"]
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["additionalProperties"] is False
        for part in _walk(schema)[1:]:
            kind = part.get("type")
            if kind in ("integer", "number"):
                assert {"minimum", "maximum"} <= part.keys(), (entry["type"], part)
            elif kind == "string":
                assert "enum" in part or "maxLength" in part, (entry["type"], part)
            elif kind == "array":
                assert "maxItems" in part, (entry["type"], part)
        # The defaults pass the schema they are defaults of.
        assert Draft202012Validator(schema).is_valid(entry["defaults"]), entry["type"]
    by_type = {entry["type"]: entry for entry in answer["data"]}
    assert by_type["research"]["config_schema"]["properties"]["maxSources"] | {} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 20,
        "description": "Passages kept at most, best first.",
    }
    assert by_type["write"]["allowed_positions"] == {
        "after": ["outline"],
        "before": [],
        "min_count": 1,
        "max_count": 1,
    }
    assert by_type["review_gate"]["repeatable"] is True
    assert by_type["review_gate"]["allowed_positions"]["max_count"] == 2
    assert by_type["research"]["repeatable"] is False
    assert by_type["images"]["defaults"]["source"] == "media_library"
    assert {rule["code"] for rule in answer["rules"]} == {
        *validation.RULES,
        *validation.WARNINGS,
    }
    builtin = answer["builtin_default"]
    assert builtin["name"] == "Standard article"
    assert [step["type"] for step in builtin["steps"]] == [
        "research",
        "outline",
        "write",
        "optimize",
    ]
    assert builtin["steps"] == catalog.builtin_default()["steps"]
    assert designer.validate(steps=builtin["steps"])["valid"] is True


def test_a_valid_definition_validates_with_its_estimate(designer: Designer) -> None:
    report = designer.validate(steps=steps())
    assert report == {"valid": True, "errors": [], "warnings": [], "estimated_credits": 18}
    longer = [
        *steps(base=STANDARD[:2]),
        {"key": "write", "type": "write", "config": {"targetWords": 3000}},
        {"key": "check", "type": "fact_check"},
        {"key": "images", "type": "images"},
        {"key": "links", "type": "internal_links"},
        {"key": "review", "type": "review_gate"},
        {"key": "final-review", "type": "review_gate"},
        {"key": "optimize", "type": "optimize"},
    ]
    report = designer.validate(steps=longer)
    assert (report["valid"], report["errors"]) == (True, [])
    # outline 2 + write 30 + fact_check 3 + links 1 + optimize 1
    assert report["estimated_credits"] == 37


# One definition per rule, each breaking that rule alone: (steps, [(step_key, code), ...]).
RULE_CASES: dict[str, tuple[list[dict[str, Any]], list[tuple[str | None, str]]]] = {
    "no write": (
        [*steps(base=STANDARD[:2]), {"key": "optimize", "type": "optimize"}],
        [(None, "EXACTLY_ONE_WRITE")],
    ),
    "two writes": (
        steps({"key": "rewrite", "type": "write"}),
        [("rewrite", "EXACTLY_ONE_WRITE")],
    ),
    "a disabled write is no write": (
        [*steps(base=STANDARD[:2]), {"key": "write", "type": "write", "enabled": False}],
        [(None, "EXACTLY_ONE_WRITE")],
    ),
    "no outline before the write": (
        [{"key": "research", "type": "research"}, {"key": "write", "type": "write"}],
        [("write", "OUTLINE_BEFORE_WRITE")],
    ),
    "the outline after the write": (
        [STANDARD[0], STANDARD[2], STANDARD[1]],
        [("outline", "OUTLINE_BEFORE_WRITE")],
    ),
    "no research before the outline": (
        steps(base=STANDARD[1:]),
        [("outline", "RESEARCH_BEFORE_OUTLINE")],
    ),
    "research after the outline": (
        [STANDARD[1], STANDARD[0], STANDARD[2]],
        [("research", "RESEARCH_BEFORE_OUTLINE")],
    ),
    "optimize before the write": (
        [STANDARD[0], STANDARD[1], STANDARD[3], STANDARD[2]],
        [("optimize", "AFTER_WRITE")],
    ),
    "internal links before the write": (
        [*steps(base=STANDARD[:2]), {"key": "links", "type": "internal_links"}, STANDARD[2]],
        [("links", "AFTER_WRITE")],
    ),
    "fact check before the write": (
        [*steps(base=STANDARD[:2]), {"key": "check", "type": "fact_check"}, STANDARD[2]],
        [("check", "AFTER_WRITE")],
    ),
    "images before the outline": (
        [STANDARD[0], {"key": "images", "type": "images"}, STANDARD[1], STANDARD[2]],
        [("images", "IMAGES_AFTER_OUTLINE")],
    ),
    "three review gates": (
        steps(*({"key": f"review-{i}", "type": "review_gate"} for i in range(3))),
        [("review-2", "REVIEW_GATE_LIMIT")],
    ),
    "a review gate before the write": (
        [*steps(base=STANDARD[:2]), {"key": "review", "type": "review_gate"}, STANDARD[2]],
        [("review", "REVIEW_GATE_AFTER_WRITE")],
    ),
    "two research steps": (
        [STANDARD[0], {"key": "more-research", "type": "research"}, *STANDARD[1:]],
        [("more-research", "NOT_REPEATABLE")],
    ),
    "a duplicate key": (
        steps({"key": "write", "type": "fact_check"}),
        [("write", "DUPLICATE_KEY")],
    ),
    "stock images from Unsplash": (
        steps(
            {
                "key": "images",
                "type": "images",
                "config": {"source": "stock", "provider": "unsplash"},
            }
        ),
        [("images", "STOCK_PROVIDER_NOT_ALLOWED")],
    ),
    "stock images from no provider": (
        steps({"key": "images", "type": "images", "config": {"source": "stock"}}),
        [("images", "STOCK_PROVIDER_NOT_ALLOWED")],
    ),
    "an outline with more minimum sections than maximum": (
        [
            STANDARD[0],
            {"key": "outline", "type": "outline", "config": {"minSections": 8, "maxSections": 4}},
            *STANDARD[2:],
        ],
        [("outline", "SECTIONS_RANGE")],
    ),
}


@pytest.mark.parametrize("case", list(RULE_CASES))
def test_each_rule_is_refused_at_publish_with_its_code(designer: Designer, case: str) -> None:
    broken, expected = RULE_CASES[case]
    report = designer.validate(steps=broken)
    assert report["valid"] is False
    assert codes(report) == expected

    created = designer.workflow(steps=broken)
    assert designer.validate(workflowId=created["id"]) == report
    body = designer.refused(
        "workflows.publishVersion", {"id": created["id"]}, 400, "BAD_REQUEST", role="editor"
    )
    assert [(v["step_key"], v["code"]) for v in body["violations"]] == expected
    assert body["violations"] == report["errors"]
    assert [error["path"] for error in body["errors"]] == [e["path"] for e in report["errors"]]
    assert all(
        error["message"].startswith(code)
        for error, (_, code) in zip(body["errors"], expected, strict=True)
    )
    after = designer.get(created["id"])
    assert (after["published_version"], after["latest_version"]) == (None, 0)
    assert designer.versions(created["id"])["total"] == 0


def test_validate_lists_every_violation_at_once(designer: Designer) -> None:
    broken = [
        {"key": "write", "type": "write", "config": {"targetWords": 100}},
        {"key": "optimize", "type": "optimize", "config": {"minSeoScore": 101}},
        {"key": "outline", "type": "outline"},
        {"key": "review", "type": "review_gate"},
        {"key": "review", "type": "review_gate"},
        {"key": "review-3", "type": "review_gate"},
        {"key": "images", "type": "images", "config": {"source": "stock", "provider": "unsplash"}},
        {"key": "research", "type": "research"},
    ]
    report = designer.validate(steps=broken)
    assert report["valid"] is False
    # In the order of the steps, a step's config before the rules about it.
    assert [(e["step_key"], e["path"], e["code"]) for e in report["errors"]] == [
        ("write", "steps.0.config.targetWords", "CONFIG_INVALID"),
        ("optimize", "steps.1.config.minSeoScore", "CONFIG_INVALID"),
        ("outline", "steps.2", "OUTLINE_BEFORE_WRITE"),
        ("review", "steps.4.key", "DUPLICATE_KEY"),
        ("review-3", "steps.5", "REVIEW_GATE_LIMIT"),
        ("images", "steps.6.config.provider", "STOCK_PROVIDER_NOT_ALLOWED"),
        ("research", "steps.7", "RESEARCH_BEFORE_OUTLINE"),
    ]


@pytest.mark.parametrize(
    ("step", "path", "words"),
    [
        ({"type": "research", "config": {"maxSources": 21}}, "config.maxSources", "maximum of 20"),
        ({"type": "research", "config": {"maxSources": 0}}, "config.maxSources", "minimum of 1"),
        (
            {"type": "research", "config": {"useWebsitePages": "yes"}},
            "config.useWebsitePages",
            "boolean",
        ),
        ({"type": "research", "config": {"minRelevance": 1.5}}, "config.minRelevance", "maximum"),
        ({"type": "outline", "config": {"minSections": 1}}, "config.minSections", "minimum of 2"),
        ({"type": "outline", "config": {"maxSections": 13}}, "config.maxSections", "maximum of 12"),
        ({"type": "write", "config": {"targetWords": 299}}, "config.targetWords", "minimum of 300"),
        (
            {"type": "write", "config": {"targetWords": 5001}},
            "config.targetWords",
            "maximum of 5000",
        ),
        ({"type": "write", "config": {"tone": "sarcastic"}}, "config.tone", "is not one of"),
        ({"type": "write", "config": {"length": 9}}, "config.length", "not a setting"),
        (
            {"type": "optimize", "config": {"targetKeywords": [f"k{i}" for i in range(21)]}},
            "config.targetKeywords",
            "too long",
        ),
        (
            {"type": "optimize", "config": {"targetKeywords": ["ok", "k" * 101]}},
            "config.targetKeywords.1",
            "too long",
        ),
        (
            {"type": "optimize", "config": {"targetKeywords": [3]}},
            "config.targetKeywords.0",
            "string",
        ),
        ({"type": "optimize", "config": {"minSeoScore": -1}}, "config.minSeoScore", "minimum of 0"),
        ({"type": "images", "config": {"count": 6}}, "config.count", "maximum of 5"),
        ({"type": "images", "config": {"source": "web"}}, "config.source", "is not one of"),
        ({"type": "images", "config": {"provider": "Un splash"}}, "config.provider", "match"),
        (
            {"type": "internal_links", "config": {"maxLinks": 11}},
            "config.maxLinks",
            "maximum of 10",
        ),
        (
            {"type": "internal_links", "config": {"sources": ["tweets"]}},
            "config.sources.0",
            "is not one of",
        ),
        (
            {"type": "internal_links", "config": {"sources": []}},
            "config.sources",
            "should be non-empty",
        ),
        (
            {"type": "fact_check", "config": {"onUnsupported": "ignore"}},
            "config.onUnsupported",
            "is not one of",
        ),
        ({"type": "fact_check", "config": {"minSupport": 2}}, "config.minSupport", "maximum of 1"),
        (
            {"type": "review_gate", "config": {"timeoutHours": 721}},
            "config.timeoutHours",
            "maximum of 720",
        ),
        (
            {"type": "review_gate", "config": {"timeoutHours": 1.5}},
            "config.timeoutHours",
            "integer",
        ),
    ],
)
def test_a_config_failing_its_schema_is_reported_with_its_path(
    designer: Designer, step: dict[str, Any], path: str, words: str
) -> None:
    definition = steps()
    place = {"research": 0, "outline": 1, "write": 2, "optimize": 3}.get(step["type"])
    if place is None:
        definition.append({"key": "extra-step", **step})
    else:
        definition[place] = {"key": "extra-step", **step}
    report = designer.validate(steps=definition)
    index = next(i for i, s in enumerate(definition) if s["key"] == "extra-step")
    assert codes(report) == [("extra-step", "CONFIG_INVALID")], report
    (error,) = report["errors"]
    assert error["path"] == f"steps.{index}.{path}"
    assert words in error["message"], error


def test_warnings_do_not_keep_a_definition_from_being_published(designer: Designer) -> None:
    definition = [
        *steps(base=STANDARD[:3]),
        {"key": "check", "type": "fact_check", "retries": 2},
        {"key": "links", "type": "internal_links", "onError": "retry"},
        {"key": "optimize", "type": "optimize", "enabled": False},
    ]
    report = designer.validate(steps=definition)
    assert report["valid"] is True
    assert [(w["step_key"], w["code"]) for w in report["warnings"]] == [
        ("check", "RETRIES_UNUSED"),
        ("links", "NO_RETRIES"),
        ("optimize", "STEP_DISABLED"),
        (None, "NO_OPTIMIZE"),
    ]
    # A disabled step costs nothing.
    assert report["estimated_credits"] == 2 + 15 + 3 + 1
    created = designer.workflow(steps=definition)
    assert designer.publish(created["id"])["version"] == 1


def test_validate_needs_steps_or_a_workflow_id_but_not_both(designer: Designer) -> None:
    created = designer.workflow()
    for data in ({}, {"steps": steps(), "workflowId": created["id"]}):
        body = designer.refused("workflows.validate", data, 400, "BAD_REQUEST", role="editor")
        assert [error["path"] for error in body["errors"]] == ["steps"]
    missing = {"workflowId": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}
    designer.refused("workflows.validate", missing, 404, "NOT_FOUND", role="editor")
    for data, path in (
        ({"steps": []}, "steps"),
        ({"steps": [{"key": "bad key", "type": "write"}]}, "steps.0.key"),
        ({"workflowId": "not-a-uuid"}, "workflowId"),
    ):
        body = designer.refused("workflows.validate", data, 400, "BAD_REQUEST", role="editor")
        assert path in {error["path"] for error in body["errors"]}


def test_validate_of_another_organizations_workflow_is_404(
    designer: Designer, other: Designer
) -> None:
    created = designer.workflow()
    response = other.request("workflows.validate", {"workflowId": created["id"]}, role="admin")
    problem(response, 404, "NOT_FOUND")


# --- the rules as a function (no service) -------------------------------------------------------


def test_the_builtin_definition_passes_and_rules_read_enabled_steps_only() -> None:
    builtin = catalog.builtin_default()["steps"]
    assert validation.validate(builtin).valid
    assert catalog.builtin_default() == catalog.builtin_default()
    builtin[0]["config"]["maxSources"] = 1  # a copy: the next one is untouched
    assert catalog.builtin_default()["steps"][0]["config"]["maxSources"] == 16

    disabled_outline = catalog.step("outline-2", "outline", enabled=False)
    assert validation.validate([*catalog.builtin_default()["steps"], disabled_outline]).valid


def test_no_provider_allows_an_automated_choice_yet() -> None:
    assert not validation.AUTOMATED_SELECTION_PROVIDERS


def test_a_config_of_the_wrong_shape_never_breaks_the_rules() -> None:
    """What jsonschema refuses is reported; the rules that read a setting pass it over."""
    broken = [
        catalog.step("research", "research"),
        {**catalog.step("outline", "outline"), "config": {"minSections": "x", "maxSections": []}},
        {**catalog.step("write", "write"), "config": {"targetWords": True}},
        {**catalog.step("images", "images"), "config": {"source": "stock", "provider": ["x"]}},
    ]
    report = validation.validate(broken)
    assert {violation.code for violation in report.errors} == {"CONFIG_INVALID"}
    assert report.estimated_credits == 2 + 15
