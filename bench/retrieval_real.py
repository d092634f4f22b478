"""The retrieval bench's real corpus: 34 documents as Debian packages ship them (Markdown, HTML,
DOCX, PDF, plain text; `real_corpus/README.md` says which package and licence each came from),
and 109 questions written by hand, each naming its document and the passage that answers it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent / "real_corpus"
KINDS = ("md", "html", "docx", "pdf", "txt")


class Question(NamedTuple):
    document: str  # its path under real_corpus/, the folder being its kind ("pdf/bzip2-manual.pdf")
    question: str
    answer: str  # a passage of the document, compared after retrieval_corpus.normalize

    @property
    def kind(self) -> str:
        return self.document.split("/", 1)[0]


def files(kinds: tuple[str, ...] = KINDS) -> list[Path]:
    return sorted(path for kind in kinds for path in (ROOT / kind).glob(f"*.{kind}"))


def load_questions(kinds: tuple[str, ...] = KINDS) -> list[Question]:
    every = json.loads((ROOT / "questions.json").read_text(encoding="utf-8"))
    return [q for q in (Question(**each) for each in every) if q.kind in kinds]
