"""The content words of a text: what the fact check, the internal links and the images compare
(a claim's words against its sources', a title's against the article's)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?", re.UNICODE)
_MARKER = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
# Words that carry no claim of their own.
STOP_WORDS = """
a an and are as at be been but by can could did do does for from had has have he her his how i if
in into is it its may might more most must no not of on or our she should so such than that the
their them then there these they this those to too under up us was we were what when where which
while who why will with would you your also very just about over
"""


_STOP = frozenset(STOP_WORDS.split())


def claim_words(text: str) -> set[str]:
    return {
        w
        for w in (m.group().lower() for m in _WORD.finditer(_MARKER.sub(" ", text)))
        if w not in _STOP and len(w) > 1
    }
