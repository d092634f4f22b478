"""Which object paths a tenant may use: only its own, and only plain ones."""

from __future__ import annotations

import re

import pytest

from contentplatform.kit.errors import BadRequest
from contentplatform.storage.paths import new_upload_path, safe_filename, validate_storage_path

ORG = "org_a"

GOOD = [
    "org_a/report.pdf",
    "org_a/uploads/5f0c8a52-0b8e-4d8e-9c1e-1f0f6a1d2b3c/report.pdf",
    "org_a/deep/er/still/fine.txt",
    "org_a/a..b/c.txt",  # dots inside a name are not a '..' segment
    "org_a/.hidden",
    "org_a/with space inside.md",
    "org_a/ünïcödé/文件.txt",
    "org_a/" + "x" * (1024 - len("org_a/")),  # exactly 1024 bytes
]

BAD = {
    "empty": "",
    "too long": "org_a/" + "x" * (1025 - len("org_a/")),
    "too long in UTF-8 bytes": "org_a/" + "é" * 510,
    "another organization": "org_b/report.pdf",
    "org id as a mere prefix": "org_ab/report.pdf",
    "no org prefix": "report.pdf",
    "org alone": "org_a",
    "org with trailing slash only": "org_a/",
    "absolute": "/org_a/report.pdf",
    "absolute elsewhere": "/etc/passwd",
    "drive letter": "C:/org_a/x",
    "drive letter inside": "org_a/C:/x",
    "url scheme": "file:///org_a/x",
    "parent segment": "org_a/../org_b/x",
    "parent segment at the end": "org_a/x/..",
    "current segment": "org_a/./x",
    "empty segment": "org_a//x",
    "trailing slash": "org_a/x/",
    "backslash": "org_a\\x",
    "backslash traversal": "org_a/..\\..\\org_b\\x",
    "NUL": "org_a/x\x00.pdf",
    "newline": "org_a/x\n.pdf",
    "tab": "org_a/x\t.pdf",
    "DEL": "org_a/x\x7f.pdf",
    "C1 control": "org_a/x\x85.pdf",
    "encoded dots": "org_a/%2e%2e/org_b/x",
    "encoded slash": "org_a%2f..%2forg_b/x",
    "encoded NUL": "org_a/x%00.pdf",
    "any percent escape": "org_a/report%20final.pdf",
    "leading whitespace in a segment": "org_a/ x.pdf",
    "trailing whitespace in a segment": "org_a/x.pdf ",
    "whitespace-only segment": "org_a/ /x",
    "dots padded with spaces": "org_a/ .. /x",
    "unicode whitespace": "org_a/x\u3000",
}


@pytest.mark.parametrize("path", GOOD)
def test_accepted(path: str) -> None:
    assert validate_storage_path(path, ORG) == path


@pytest.mark.parametrize("path", BAD.values(), ids=BAD.keys())
def test_rejected(path: str) -> None:
    with pytest.raises(BadRequest) as raised:
        validate_storage_path(path, ORG)
    error = raised.value
    assert error.http_status == 400
    assert error.errors and error.errors[0].path == "storagePath"
    assert error.errors[0].message


def test_own_prefix_of_another_org_is_not_enough() -> None:
    # Each org sees only its own prefix, whichever way round the ids nest.
    validate_storage_path("org_ab/x", "org_ab")
    with pytest.raises(BadRequest):
        validate_storage_path("org_ab/x", "org_a")
    with pytest.raises(BadRequest):
        validate_storage_path("org_a/x", "org_ab")


@pytest.mark.parametrize("org_id", ["", "org_a/sub", "/"])
def test_org_ids_that_could_nest_own_no_paths(org_id: str) -> None:
    with pytest.raises(BadRequest):
        validate_storage_path(f"{org_id}/x.pdf", org_id)


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("Quarterly Report (final).docx", "Quarterly-Report-final.docx"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\notes.txt", "notes.txt"),
        ("..", "file"),
        ("..pdf", "file.pdf"),
        (".bashrc", "file.bashrc"),
        ("Über große Dinge.md", "Uber-groe-Dinge.md"),
        ("报告.pdf", "file.pdf"),
        ("50%25 off\x00.html", "50-25-off.html"),
        ("", "file"),
        ("archive.tar.gz", "archive.tar.gz"),
    ],
)
def test_safe_filename(filename: str, expected: str) -> None:
    assert safe_filename(filename) == expected


def test_safe_filename_is_bounded() -> None:
    name = safe_filename("a" * 500 + ".pdf")
    assert len(name) == 120 and name.endswith(".pdf")


@pytest.mark.parametrize(
    "filename", ["report.pdf", "../../../org_b/x.pdf", "%2e%2e", " \t\n", "a/b\\c:d"]
)
def test_new_upload_path(filename: str) -> None:
    path = new_upload_path(ORG, filename)
    assert re.fullmatch(rf"org_a/uploads/{UUID}/[A-Za-z0-9._-]+", path), path
    assert validate_storage_path(path, ORG) == path
    assert new_upload_path(ORG, filename) != path  # a fresh place every time
