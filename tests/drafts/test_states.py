"""The draft state machine, move by move: every pair of statuses is either in the table or 409."""

from __future__ import annotations

import itertools

import pytest

from contentplatform.drafts import states
from contentplatform.drafts.states import Status
from contentplatform.kit.errors import Conflict

S = Status
ALLOWED = {
    (S.generating, S.reviewing),
    (S.generating, S.rejected),
    (S.reviewing, S.approved),
    (S.reviewing, S.rejected),
    (S.rejected, S.reviewing),
    (S.approved, S.reviewing),
    (S.approved, S.published),
    # generation.retryRun and generation.regenerateDraft
    (S.rejected, S.generating),
    (S.reviewing, S.generating),
    (S.approved, S.generating),
    (S.reviewing, S.archived),
    (S.approved, S.archived),
    (S.rejected, S.archived),
    (S.published, S.archived),
    # drafts.unarchive
    (S.archived, S.reviewing),
    # drafts.unpublish alone
    (S.published, S.approved),
}
ALL_PAIRS = list(itertools.product(Status, Status))


PIPELINE = {(S.generating, S.reviewing), (S.generating, S.rejected)}
UNPUBLISH = {(S.published, S.approved)}


@pytest.mark.parametrize(("current", "target"), sorted(ALLOWED - PIPELINE - UNPUBLISH))
def test_an_allowed_move_returns_its_target(current: Status, target: Status) -> None:
    assert states.check_move(current, target) is target


@pytest.mark.parametrize(("current", "target"), sorted(PIPELINE))
def test_only_the_pipeline_moves_a_draft_out_of_generating(current: Status, target: Status) -> None:
    assert states.check_move(current, target, by_pipeline=True) is target
    with pytest.raises(Conflict, match="The draft is generating;"):
        states.check_move(current, target)


def test_only_unpublishing_takes_a_published_draft_back_to_approved() -> None:
    assert states.check_move(S.published, S.approved, unpublishing=True) is S.approved
    with pytest.raises(Conflict, match="The draft is published; it cannot be approved"):
        states.check_move(S.published, S.approved, by_pipeline=True)


@pytest.mark.parametrize(("current", "target"), [p for p in ALL_PAIRS if p not in ALLOWED])
def test_any_other_move_is_a_conflict_naming_the_current_status(
    current: Status, target: Status
) -> None:
    with pytest.raises(Conflict) as refused:
        states.check_move(current, target, by_pipeline=True)
    assert f"The draft is {current.value};" in refused.value.detail


@pytest.mark.parametrize(
    ("current", "after"),
    [
        (S.reviewing, S.reviewing),
        (S.rejected, S.reviewing),
        (S.approved, S.reviewing),
        (S.published, S.published),
    ],
)
def test_an_edit_sends_rejected_and_approved_drafts_back_to_review(
    current: Status, after: Status
) -> None:
    assert states.after_edit(current) is after


@pytest.mark.parametrize("current", [S.generating, S.archived])
def test_generating_and_archived_drafts_cannot_be_edited(current: Status) -> None:
    with pytest.raises(Conflict, match=f"The draft is {current.value}; it cannot be edited"):
        states.after_edit(current)
