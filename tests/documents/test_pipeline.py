"""Extraction in worker processes (documents/pipeline.py) and what the ingestion workflow does
with it: a worker reads the file, keeps its text and returns its chunks outside the service's
process, a worker that dies is replaced, a file that kills its worker twice fails with a reason,
and running a finished ingestion again changes nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos import DBOS

from contentplatform.documents import chunking, pipeline
from contentplatform.documents import durable as documents_durable
from contentplatform.documents.chunking import Chunk
from contentplatform.documents.pipeline import ExtractionCrashed, Job, Pipeline
from contentplatform.kit import durable
from contentplatform.storage.store import StorageError
from tests.documents.support import Docs, available_credits, document_row, reservations
from tests.support.orgs import org_fixture

docs = org_fixture(Docs)

MARKDOWN = b"# Compost\n\nGreens and browns, turned every week, make compost in two months."


# Work run in the workers: module-level, so that a spawned worker imports it by name.


def worker_pid(job: Job) -> list[Chunk]:
    return [Chunk(0, str(os.getpid()), 1, 0, 1)]


def die_once(job: Job) -> list[Chunk]:
    """Kill the worker the first time it sees the job (its source_path names a marker file)."""
    marker = Path(job.source_path)
    if not marker.exists():
        marker.touch()
        os._exit(9)
    return [Chunk(0, "survived", 1, 0, 8)]


def die_always(job: Job) -> list[Chunk]:
    os._exit(9)


def job_in(store_dir: Path, source_path: str = "org_a/uploads/notes.md") -> Job:
    return Job(
        storage_url=store_dir.resolve().as_uri(),
        data_dir=str(store_dir),
        source_path=source_path,
        file_type="md",
        text_path="org_a/derived/notes.txt",
        max_tokens=64,
        overlap_tokens=8,
    )


def run(pipe: Pipeline, job: Job) -> list[Chunk]:
    return asyncio.run(pipe.run(job))


@pytest.fixture
def one_worker() -> Iterator[Pipeline]:
    pipe = Pipeline(1)
    yield pipe
    pipe.shutdown()


def test_a_worker_process_reads_the_file_keeps_its_text_and_returns_its_chunks(
    one_worker: Pipeline, tmp_path: Path
) -> None:
    (tmp_path / "org_a" / "uploads").mkdir(parents=True)
    (tmp_path / "org_a" / "uploads" / "notes.md").write_bytes(MARKDOWN)

    chunks = run(one_worker, job_in(tmp_path))

    text = MARKDOWN.decode()
    assert (tmp_path / "org_a" / "derived" / "notes.txt").read_text() == text
    assert chunks == chunking.chunk_text(text, max_tokens=64, overlap_tokens=8)
    assert [chunk.heading for chunk in chunks] == ["Compost"]
    one_worker.work = worker_pid
    assert int(run(one_worker, job_in(tmp_path))[0].text) != os.getpid()


def test_a_file_missing_from_storage_fails_as_storage_does(
    one_worker: Pipeline, tmp_path: Path
) -> None:
    with pytest.raises(StorageError) as raised:
        run(one_worker, job_in(tmp_path, "org_a/uploads/gone.md"))
    assert "could not be read from storage" in documents_durable.reason_for(raised.value)


def test_without_processes_a_file_is_extracted_in_this_process(tmp_path: Path) -> None:
    assert int(run(Pipeline(0, work=worker_pid), job_in(tmp_path))[0].text) == os.getpid()


def test_a_worker_that_dies_is_replaced_and_its_file_tried_again(tmp_path: Path) -> None:
    pipe = Pipeline(1, work=die_once)
    try:
        assert run(pipe, job_in(tmp_path, str(tmp_path / "died")))[0].text == "survived"
        assert (tmp_path / "died").exists()  # it did die once
    finally:
        pipe.shutdown()


def test_a_file_that_kills_its_worker_twice_fails_and_the_next_file_is_extracted(
    tmp_path: Path,
) -> None:
    pipe = Pipeline(1, work=die_always)
    try:
        with pytest.raises(ExtractionCrashed):
            run(pipe, job_in(tmp_path))
        pipe.work = die_once
        assert run(pipe, job_in(tmp_path, str(tmp_path / "next")))[0].text == "survived"
    finally:
        pipe.shutdown()


KILLED_PARENT = """
import asyncio, os, signal, sys
from pathlib import Path
from contentplatform.documents.pipeline import Job, Pipeline

store = Path(sys.argv[1])
(store / "org_a" / "uploads").mkdir(parents=True)
(store / "org_a" / "uploads" / "notes.md").write_text("# Notes\\n\\nA line.")
source, text = "org_a/uploads/notes.md", "org_a/notes.txt"
job = Job(store.resolve().as_uri(), str(store), source, "md", text, 64, 8)
pipe = Pipeline(1)
asyncio.run(pipe.run(job))
print(*pipe._pool._processes, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_end_when_the_service_process_is_killed(tmp_path: Path) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_PARENT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    workers = [int(pid) for pid in killed.stdout.split()]
    assert workers
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in workers)


# --- through the service -----------------------------------------------------------------------


def test_a_file_that_kills_its_worker_twice_ends_in_error_with_its_credits_released(
    docs: Docs, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashing = Pipeline(1, work=die_always)
    monkeypatch.setattr(pipeline, "for_processes", lambda *args, **kwargs: crashing)
    before = available_credits(settings, docs.tenant_id)
    try:
        failed = docs.wait(docs.submit("notes.md", MARKDOWN)["id"])
    finally:
        crashing.shutdown()

    assert failed["status"] == "error"
    assert failed["error"] == documents_durable.reason_for(ExtractionCrashed())
    assert "stopped unexpectedly" in failed["error"]
    assert [status for _, status in reservations(settings, docs.tenant_id)] == ["released"]
    assert available_credits(settings, docs.tenant_id) == before


def test_running_a_finished_ingestion_again_changes_nothing(docs: Docs, settings, server) -> None:
    ready = docs.ingest("notes.md", MARKDOWN)
    row = document_row(settings, ready["id"])
    assert row is not None
    again = f"ingest-again:{uuid.uuid4()}"

    async def run_again() -> str:
        # As DBOS would after a crash between the last write and recording the end.
        await durable.start(documents_durable.ingest, again, *documents_durable.arguments(row))
        return str(await (await DBOS.retrieve_workflow_async(again)).get_result())

    assert asyncio.run_coroutine_threadsafe(run_again(), server.loop).result(30) == "settled"
    assert docs.ok("documents.getById", {"id": ready["id"]}) == ready
    assert [status for _, status in reservations(settings, docs.tenant_id)] == ["committed"]
