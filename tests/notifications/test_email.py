"""The notification `email` channel: a watch that chooses email sends the notification as a
mail (through the outbox, over SMTP to the session's loopback server) to the member's email,
once per event and recipient; email-only adds nothing in-app; in-app-only sends no mail; a
member of a second organization never gets the first's mail."""

from __future__ import annotations

from sqlalchemy import select

from contentplatform.core import runtime
from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from contentplatform.mail import smtp
from contentplatform.mail.models import OutboxMail
from contentplatform.notifications import service
from tests.conftest import Run
from tests.notifications.support import Members, emit, settled
from tests.support.mailbox import Mailbox


def address(members: Members, role: str) -> str:
    # The dev token's email (auth/devkeys.py), which the service stored for the member.
    return f"{members.subject(role)}@example.test"


def test_an_email_watch_sends_the_notification_as_a_mail(
    members: Members, run: Run, mailbox: Mailbox
) -> None:
    draft_id = members.draft("Mailed launch")
    settled(run, members.tenant_id)  # its draft.created told before anyone watched
    members.watch("admin", resourceType="draft", resourceId=draft_id, channels=["email"])
    members.watch(resourceType="draft", resourceId=draft_id, channels=["in_app", "email"])
    payload = {"draft_id": draft_id, "title": "Mailed launch"}
    event_id = emit(
        run, members.tenant_id, "draft.published", resource_id=draft_id, payload=payload
    )

    for role in ("admin", "member"):
        received = mailbox.wait_for(to=address(members, role), subject_contains="Draft published")
        text = received.get_content()
        assert "Mailed launch" in text and f"/drafts/{draft_id}" in text
        assert received["Auto-Submitted"] == "auto-generated"
    # Email only: nothing in-app; both channels: in-app too.
    assert members.types("admin") == []
    assert members.types("member") == ["draft.published"]
    # Once per event and recipient, whatever handles the batch again.
    recipient = address(members, "admin")
    assert len(mailbox.matching(to=recipient)) == 1

    # The batch handled again (a dispatcher's retry): the outbox still holds one mail for it.
    async def handle_again(db: Database) -> int:
        async with db.unit_of_work() as session:
            event = await session.get(Event, event_id)
            assert event is not None
            await service.notify(session, [event])
        async with db.unit_of_work() as session:
            return len(
                (
                    await session.execute(
                        select(OutboxMail).where(OutboxMail.to_address == recipient)
                    )
                ).all()
            )

    assert run(handle_again) == 1


def test_in_app_only_sends_no_mail_and_another_organization_gets_none(
    members: Members, others: Members, run: Run, mailbox: Mailbox
) -> None:
    draft_id = members.draft("Quiet launch")
    settled(run, members.tenant_id)
    members.watch("editor", resourceType="draft", resourceId=draft_id, channels=["in_app"])
    members.watch("admin", resourceType="draft", resourceId=draft_id, channels=["email"])
    others.watch(resourceType="tenant", events=["draft.published"], channels=["email"])
    payload = {"draft_id": draft_id, "title": "Quiet launch"}
    emit(run, members.tenant_id, "draft.published", resource_id=draft_id, payload=payload)
    # The admin's mail arrives: by then the editor's would have been queued in the same batch.
    mailbox.wait_for(to=address(members, "admin"), subject_contains="Draft published")
    assert members.types("editor") == ["draft.published"]
    assert mailbox.matching(to=address(members, "editor")) == []
    for role in ("member", "editor", "admin"):
        assert mailbox.matching(to=address(others, role)) == []


def test_the_message_id_header_is_the_outboxs(members: Members, run: Run, mailbox: Mailbox):
    draft_id = members.draft("Header check")
    settled(run, members.tenant_id)
    members.watch("admin", resourceType="draft", resourceId=draft_id, channels=["email"])
    payload = {"draft_id": draft_id, "title": "Header check"}
    emit(run, members.tenant_id, "draft.published", resource_id=draft_id, payload=payload)
    received = mailbox.wait_for(to=address(members, "admin"))
    sender = runtime.current().settings.mail_from
    assert received["Message-ID"].endswith(f"@{smtp.header_message_id('x', sender).split('@')[1]}")
    assert mailbox.count(received["Message-ID"]) == 1
