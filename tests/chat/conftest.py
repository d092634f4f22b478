"""Fixtures of the chat tests: the test's organization chatting (`chatter`), a second one
(`other`), and a user of the first organization who is not the conversation's creator."""

from __future__ import annotations

from tests.chat.support import Chatter
from tests.support.orgs import org_fixture

chatter = org_fixture(Chatter)
other = org_fixture(Chatter, second=True)
