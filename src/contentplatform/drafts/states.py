"""The draft state machine: the one table of allowed moves, and what an edit does to a status.

    generating -> reviewing        the generation pipeline finished
    generating -> rejected         the generation failed or was cancelled (its reason kept)
    rejected   -> generating       generation.retryRun, generation.regenerateDraft
    reviewing  -> generating       generation.regenerateDraft
    approved   -> generating       generation.regenerateDraft (it needs approving again)
    reviewing  -> approved         drafts.approve
    reviewing  -> rejected         drafts.reject (a reason is required)
    rejected   -> reviewing        an edit
    approved   -> reviewing        an edit of its content (it needs approving again)
    approved   -> published        publishing (the publishers issue)
    published  -> approved         drafts.unpublish, once no target keeps it live
    archived   -> reviewing        drafts.unarchive (it needs approving again)
    any but generating -> archived

Editing a published draft keeps it published: it is live on the target, the edit is a new
revision, and republishing sends it. Generating and archived drafts cannot be edited.
The two moves out of generating are the pipeline's alone; the moves into it are a generation
run's, started by the generation operations. Any other move is a 409 CONFLICT naming the
current status.
"""

from __future__ import annotations

from enum import StrEnum

from contentplatform.drafts.errors import IllegalDraftTransition


class Status(StrEnum):
    generating = "generating"
    reviewing = "reviewing"
    approved = "approved"
    rejected = "rejected"
    published = "published"
    archived = "archived"


S = Status

MOVES: frozenset[tuple[Status, Status]] = frozenset(
    {
        (S.generating, S.reviewing),
        (S.generating, S.rejected),
        (S.reviewing, S.approved),
        (S.reviewing, S.rejected),
        (S.rejected, S.reviewing),
        (S.approved, S.reviewing),
        (S.approved, S.published),
        (S.published, S.approved),
        (S.archived, S.reviewing),
        (S.rejected, S.generating),
        (S.reviewing, S.generating),
        (S.approved, S.generating),
        *((status, S.archived) for status in S if status not in (S.generating, S.archived)),
    }
)

# Moves only the generation pipeline makes: a person cannot approve or reject a draft mid-writing.
PIPELINE_MOVES: frozenset[tuple[Status, Status]] = frozenset(
    {(S.generating, S.reviewing), (S.generating, S.rejected)}
)

# The move only drafts.unpublish makes (a person cannot "approve" a live draft back).
UNPUBLISH_MOVES: frozenset[tuple[Status, Status]] = frozenset({(S.published, S.approved)})

# Where an edit of the content takes a draft; statuses missing here cannot be edited.
AFTER_EDIT: dict[Status, Status] = {
    S.reviewing: S.reviewing,
    S.rejected: S.reviewing,
    S.approved: S.reviewing,
    S.published: S.published,
}

_VERBS = {
    S.reviewing: "sent to review",
    S.approved: "approved",
    S.rejected: "rejected",
    S.published: "published",
    S.archived: "archived",
    S.generating: "generated again",
}


def allowed(
    current: Status | str,
    target: Status | str,
    *,
    by_pipeline: bool = False,
    unpublishing: bool = False,
) -> bool:
    move = (Status(current), Status(target))
    return (
        move in MOVES
        and (by_pipeline or move not in PIPELINE_MOVES)
        and (unpublishing or move not in UNPUBLISH_MOVES)
    )


def check_move(
    current: Status | str,
    target: Status | str,
    *,
    by_pipeline: bool = False,
    unpublishing: bool = False,
) -> Status:
    """The target status; IllegalDraftTransition when the table has no such move (for this
    mover)."""
    if not allowed(current, target, by_pipeline=by_pipeline, unpublishing=unpublishing):
        raise IllegalDraftTransition(
            f"The draft is {current}; it cannot be {_VERBS[Status(target)]}."
        )
    return Status(target)


def after_edit(current: Status | str) -> Status:
    """The status a draft has once its content is edited; IllegalDraftTransition when it cannot
    be edited."""
    status = Status(current)
    if status not in AFTER_EDIT:
        raise IllegalDraftTransition(f"The draft is {status}; it cannot be edited.")
    return AFTER_EDIT[status]
