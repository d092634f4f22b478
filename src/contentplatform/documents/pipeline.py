"""The CPU-bound half of ingestion, in worker processes: read the uploaded file from storage,
extract its text, keep the text in storage, chunk it.

Extraction (pypdf, python-docx, BeautifulSoup) and chunking are pure Python and take most of an
ingestion's time. In a thread they would take turns with the event loop for the interpreter lock,
and every request the process serves would wait; in worker processes they use the other cores and
the event loop stays free. The workers read and write storage themselves, so the service's
process never holds the file (a burst of uploads cannot fill its memory) and only the chunks
come back. With `processes=0` the same work runs in a thread of this process instead (one core,
or a process that should start no others).

The pool starts on first use, with the `spawn` method (this process runs threads, which `fork`
would copy mid-flight), and lives as long as the process. A worker that dies (killed, out of
memory) breaks the pool: it is replaced, and each file that was in it is tried once more in the
new one before its ingestion fails.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from contentplatform.documents import chunking, parsing
from contentplatform.kit import logs
from contentplatform.storage.store import ObjectStore


@dataclass(frozen=True)
class Job:
    """One file to ingest, in plain values a worker process receives."""

    storage_url: str  # the store (Settings.resolved_storage_url) and its data directory
    data_dir: str
    source_path: str  # the uploaded file
    file_type: str
    text_path: str  # where its text is kept
    max_tokens: int
    overlap_tokens: int


class ExtractionCrashed(Exception):
    """The worker process extracting the file died, twice (killed, or out of memory)."""


PARENT_CHECK_SECONDS = 0.5

# Each worker process (or thread, without processes) keeps its store and event loop.
_local = threading.local()


def _store(job: Job) -> tuple[ObjectStore, asyncio.AbstractEventLoop]:
    address = (job.storage_url, job.data_dir)
    if getattr(_local, "address", None) != address:
        _local.store = ObjectStore.from_url(job.storage_url, Path(job.data_dir))
        _local.loop = getattr(_local, "loop", None) or asyncio.new_event_loop()
        _local.address = address
    return _local.store, _local.loop


def ingest_file(job: Job) -> list[chunking.Chunk]:
    """Read, extract, keep the text, chunk: the file's chunks. Runs in a worker process."""
    store, loop = _store(job)
    data = loop.run_until_complete(store.get(job.source_path))
    text = parsing.extract_text(data, job.file_type)
    loop.run_until_complete(
        store.put(job.text_path, text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    )
    return chunking.chunk_text(text, max_tokens=job.max_tokens, overlap_tokens=job.overlap_tokens)


def _start_worker(parent: int, log_level: str, logs_as_json: bool) -> None:
    """Each new worker follows its parent out, logs as the service does, and loads what loads
    lazily before its first file arrives."""
    watch = threading.Thread(target=_exit_with, args=(parent,), name="exit-with-parent")
    watch.daemon = True
    watch.start()
    logs.configure(log_level, logs_as_json)
    chunking.chunk_text("# Warm\n\nup.", max_tokens=64, overlap_tokens=8)


def _exit_with(parent: int) -> None:
    """End this worker once its parent is gone. A worker waits for work on a pipe whose writing
    end it holds too, so it would never see the parent die (killed, or stopped by a signal that
    skips the pool's own clean-up) and would live on, orphaned."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


Work = Callable[[Job], list[chunking.Chunk]]


class Pipeline:
    """Runs `work` (`ingest_file`) in `processes` worker processes (0: a thread of this
    process); `work` is a module-level function, which a worker imports by name."""

    def __init__(
        self,
        processes: int,
        work: Work = ingest_file,
        *,
        log_level: str = "INFO",
        logs_as_json: bool = False,
    ) -> None:
        self.processes = processes
        self.work = work
        self._logging = (log_level, logs_as_json)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    async def run(self, job: Job) -> list[chunking.Chunk]:
        if not self.processes:
            return await asyncio.to_thread(self.work, job)
        for last_try in (False, True):
            pool = self._executor()
            try:
                return await asyncio.wrap_future(pool.submit(self.work, job))
            except BrokenProcessPool as error:
                self._replace(pool)
                if last_try:
                    raise ExtractionCrashed() from error
        raise AssertionError("unreachable")

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker,
                    initargs=(os.getpid(), *self._logging),
                )
            return self._pool

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = None
        broken.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        """Stop the workers (the next `run` starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_pipelines: dict[tuple[int, str, bool], Pipeline] = {}
_pipelines_lock = threading.Lock()


def for_processes(processes: int, *, log_level: str, logs_as_json: bool) -> Pipeline:
    """This process's pipeline with `processes` workers (one per setting, made on first use)."""
    key = (processes, log_level, logs_as_json)
    with _pipelines_lock:
        pipeline = _pipelines.get(key)
        if pipeline is None:
            pipeline = _pipelines[key] = Pipeline(
                processes, log_level=log_level, logs_as_json=logs_as_json
            )
        return pipeline
