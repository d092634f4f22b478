"""An export's file formats: CSV (the stdlib `csv`, RFC 4180: comma, double quotes where needed,
CRLF line ends, a header row) and JSON Lines (one JSON object per row, named by the columns).

CSV cells are guarded against formula injection (OWASP, "CSV Injection"): a text cell that
starts with `=`, `+`, `-`, `@`, a tab or a carriage return would be read by a spreadsheet as a
formula, so it is written with a single quote before it (`=1+1` -> `'=1+1`), which the
spreadsheet shows as text. Numbers are written as numbers (a negative number is no formula);
JSON Lines needs no guard and carries every value as it is.

Instants are RFC 3339 in UTC with `Z`, ids their canonical text, nothing an empty cell (CSV) or
null (JSON Lines).
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

from contentplatform.kit.db import utc_text

Format = Literal["csv", "jsonl"]

# What a text cell may not start with in a CSV file (OWASP's list), and what goes before it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FORMULA_GUARD = "'"

EXTENSIONS: dict[str, str] = {"csv": "csv", "jsonl": "jsonl"}
CONTENT_TYPES: dict[str, str] = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/jsonl; charset=utf-8",
}


def plain(value: Any) -> Any:
    """A value as JSON carries it: instants and dates as text, ids as text."""
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: text that starts like a formula gets a leading single quote."""
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return FORMULA_GUARD + value
    return value


class Encoder:
    """Turns batches of rows (values in the columns' order) into the bytes of one format."""

    def __init__(self, format: Format, columns: Sequence[str]) -> None:
        self.format = format
        self.columns = tuple(columns)

    def header(self) -> bytes:
        if self.format != "csv":
            return b""
        return self._csv([self.columns], guard=False)

    def rows(self, rows: Sequence[Sequence[Any]]) -> bytes:
        if self.format == "csv":
            return self._csv(rows, guard=True)
        lines = [
            json.dumps(
                {column: plain(value) for column, value in zip(self.columns, row, strict=True)},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            for row in rows
        ]
        return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""

    @staticmethod
    def _csv(rows: Sequence[Sequence[Any]], *, guard: bool) -> bytes:
        buffer = io.StringIO()
        writer = csv.writer(buffer)  # excel dialect: RFC 4180's commas, quotes and CRLF
        for row in rows:
            writer.writerow([csv_cell(value) for value in row] if guard else row)
        return buffer.getvalue().encode("utf-8")
