"""Comments on a draft (drafts.listComments, drafts.addComment): threads one reply deep,
resolving, @mentions of members, and the events that tell of them. Never commits."""

from __future__ import annotations

import re
import uuid
from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.drafts import repository, schemas, service
from contentplatform.drafts.errors import (
    AnchorOutOfRange,
    CommentNotFound,
    CommentThreadFull,
    MentionNotMember,
    ReplyToReply,
)
from contentplatform.drafts.models import Draft, DraftComment
from contentplatform.events import service as events
from contentplatform.kit import text
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.kit.schemas import offset_of
from contentplatform.tenants import service as tenants

# `@` and a user id (the identity provider's, e.g. `@user_2abc`, or ours), not inside a word
# (`ann@example.com` mentions no one); a trailing `.`, `:`, `|` or `-` ends the sentence.
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9](?:[A-Za-z0-9_.:|-]*[A-Za-z0-9_])?)")
# The most replies one thread holds: a page of threads stays bounded.
MAX_REPLIES = 100
# The most of a comment's body its events carry.
EXCERPT = 200


async def add_comment(
    session: AsyncSession, tenant_id: uuid.UUID, author: str, data: schemas.AddCommentInput
) -> schemas.Comment:
    """A comment on the draft, or a reply to one of its threads (which `resolve` resolves, and
    any other reply reopens). Comments never move the draft."""
    draft = await service.require(session, tenant_id, data.id)
    parent = await _thread(session, tenant_id, draft, data.parent_id)
    mentions = await _mentions(session, tenant_id, data.body)
    anchor = None
    if data.anchor is not None:
        if data.anchor.end > len(draft.content_text):
            raise AnchorOutOfRange(
                f"The anchor ends at {data.anchor.end}, past the end of the draft's text "
                f"({len(draft.content_text)} characters at version {draft.version}).",
                errors=[FieldError("anchor.end", "must not be past the end of the draft's text")],
            )
        anchor = {**data.anchor.model_dump(), "version": draft.version}
    now = utcnow()
    comment = DraftComment(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        draft_id=draft.id,
        parent_id=parent.id if parent is not None else None,
        author_id=author,
        body=data.body,
        anchor=anchor,
        mentions=mentions,
        created_at=now,
        updated_at=now,
    )
    session.add(comment)
    if parent is not None:
        parent.resolved_at = now if data.resolve else None
        parent.resolved_by = author if data.resolve else None
        parent.updated_at = now
    said = {
        **service.event_payload(draft),
        "comment_id": comment.id,
        "parent_id": comment.parent_id,
        "excerpt": _excerpt(comment.body),
    }
    events.emit(
        session,
        tenant_id,
        "draft.commented",
        resource_id=draft.id,
        payload={**said, "resolved_thread": data.resolve},
    )
    if mentions:
        events.emit(
            session,
            tenant_id,
            "comment.mentioned",
            resource_id=draft.id,
            payload={**said, "mentions": mentions},
        )
    await session.flush()
    return schemas.Comment.model_validate(comment)


async def _thread(
    session: AsyncSession, tenant_id: uuid.UUID, draft: Draft, parent_id: uuid.UUID | None
) -> DraftComment | None:
    """The thread a reply goes to, locked (a reply may resolve it); None for a new thread."""
    if parent_id is None:
        return None
    parent = await repository.comment(session, tenant_id, parent_id, for_update=True)
    if parent is None or parent.draft_id != draft.id:
        raise CommentNotFound(parent_id)
    if parent.parent_id is not None:
        raise ReplyToReply(
            "That comment is a reply; replies are one level deep: reply to its thread "
            f"({parent.parent_id}).",
            errors=[FieldError("parentId", "must be the first comment of a thread")],
        )
    if await repository.reply_count(session, tenant_id, parent.id) >= MAX_REPLIES:
        raise CommentThreadFull(
            f"The thread has {MAX_REPLIES} replies, the most a thread holds; start a new comment."
        )
    return parent


async def _mentions(session: AsyncSession, tenant_id: uuid.UUID, body: str) -> list[str]:
    """The members the body @mentions, by the identity provider's user id, in order; 400 naming
    each mention that is not an active member."""
    named = list(dict.fromkeys(MENTION.findall(body)))
    if len(named) > schemas.MAX_MENTIONS:
        raise MentionNotMember(
            f"A comment mentions at most {schemas.MAX_MENTIONS} people; this one mentions "
            f"{len(named)}.",
            errors=[FieldError("body", f"must mention at most {schemas.MAX_MENTIONS} people")],
        )
    found: list[str] = []
    strangers: list[str] = []
    for ref in named:
        subject = await tenants.member_subject(session, tenant_id, ref)
        if subject is None:
            strangers.append(f"@{ref}")
        elif subject not in found:
            found.append(subject)
    if strangers:
        listed = ", ".join(strangers)
        raise MentionNotMember(
            f"Not members of this organization: {listed}.",
            errors=[FieldError("body", f"mentions people who are not members: {listed}")],
        )
    return found


def _excerpt(body: str) -> str:
    """The start of a comment as its events show it: plain text, cut after the markup went, so
    no half tag is left at the cut."""
    words = str(text.sent_as_text(body))
    return words if len(words) <= EXCERPT else words[: EXCERPT - 1].rstrip() + "…"


async def list_comments(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListCommentsInput
) -> schemas.CommentPage:
    """A page of the draft's threads, oldest first, each first comment followed by its replies
    (oldest first); resolved threads only with `include_resolved`. `total` counts threads."""
    await service.require(session, tenant_id, data.id)
    threads, total = await repository.threads(
        session,
        tenant_id,
        data.id,
        include_resolved=data.include_resolved,
        limit=data.limit,
        offset=offset_of(data.page, data.limit),
    )
    replies: defaultdict[uuid.UUID, list[DraftComment]] = defaultdict(list)
    for reply in await repository.replies(session, tenant_id, [t.id for t in threads]):
        assert reply.parent_id is not None
        replies[reply.parent_id].append(reply)
    ordered = [comment for thread in threads for comment in (thread, *replies[thread.id])]
    return schemas.CommentPage.model_validate({"data": ordered, "total": total})
