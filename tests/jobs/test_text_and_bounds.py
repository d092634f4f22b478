"""Jobs and their instances hold text to the kit's rule and numbers to bounds, over REST and RPC:
a job's name is plain visible text, instructions may span lines, a control character anywhere is
a 400 naming its field, a page past any bound is a 400 and past the last an empty page."""

from __future__ import annotations

import pytest

from contentplatform.kit.schemas import MAX_PAGE
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

HUGE = "99999999999999999999"


def paths(response) -> list[str]:
    return [error["path"] for error in problem(response, 400, "BAD_REQUEST")["errors"]]


def new_job(tenant, **fields):
    return tenant.ok("jobs.create", {"name": "Weekly", "topics": ["Coffee"], **fields})


def test_a_jobs_name_is_plain_text_and_its_instructions_may_span_lines(tenant):
    job = new_job(
        tenant, name="<b>Weekly</b> roundup", contentInstructions="Short.\n\tFriendly tone."
    )
    assert (job["name"], job["content_instructions"]) == (
        "Weekly roundup",
        "Short.\n\tFriendly tone.",
    )
    assert tenant.ok("jobs.update", {"id": job["id"], "name": "Daily &amp; fresh"})["name"] == (
        "Daily & fresh"
    )
    assert tenant.ok("jobs.clone", {"id": job["id"], "name": "<i>Copy</i>"})["name"] == "Copy"


@pytest.mark.parametrize("name", ["Weekly\u202eroundup", "Weekly\u200b", "Weekly\x00", "Week\nly"])
def test_a_name_with_a_control_or_invisible_character_is_a_400(tenant, name):
    assert paths(tenant.request("jobs.create", {"name": name, "topics": ["Coffee"]})) == ["name"]
    job = new_job(tenant)
    assert paths(tenant.request("jobs.update", {"id": job["id"], "name": name})) == ["name"]
    assert paths(tenant.request("jobs.clone", {"id": job["id"], "name": name})) == ["name"]


def test_a_control_character_in_a_topic_keyword_or_instruction_is_a_400(tenant):
    cases = {
        "topics": {"topics": ["fine", "bad\x00"]},
        "keywords": {"keywords": ["bad\x1b"]},
        "contentInstructions": {"contentInstructions": "bad\x00"},
        "cronExpression": {"jobType": "recurring", "cronExpression": "0 9 * * 1\x00"},
    }
    for field, fields in cases.items():
        data = {"name": "Weekly", "topics": ["Coffee"], **fields}
        assert paths(tenant.request("jobs.create", data)) == [field], field


def test_a_page_past_any_bound_is_a_400_and_past_the_last_empty(tenant):
    new_job(tenant)
    for operation in ("jobs.page", "jobInstances.list"):
        for page in (HUGE, str(MAX_PAGE + 1)):
            assert paths(tenant.request(operation, {"page": page})) == ["page"], operation
    assert tenant.ok("jobs.page", {"page": MAX_PAGE})["data"] == []
    assert tenant.ok("jobInstances.list", {"page": MAX_PAGE}) == []
