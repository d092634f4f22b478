"""The breadth-first frontier of one crawl: what is queued (with its depth), what has been
seen (by normalized URL, so a page is fetched once) and what is done. It serializes to JSON, so
a durable workflow can store it and resume without fetching stored pages again."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

MIN_PAGES, MAX_PAGES = 1, 5000


@dataclass
class Frontier:
    max_pages: int = 200
    max_depth: int = 3
    queue: deque[tuple[str, int]] = field(default_factory=deque)
    seen: dict[str, int] = field(default_factory=dict)  # url -> depth it was found at
    done: set[str] = field(default_factory=set)
    truncated: bool = False  # a URL was dropped because max_pages was reached

    def __post_init__(self) -> None:
        if not MIN_PAGES <= self.max_pages <= MAX_PAGES:
            raise ValueError(f"max_pages must be {MIN_PAGES}-{MAX_PAGES}")
        if not 0 <= self.max_depth <= 10:
            raise ValueError("max_depth must be 0-10")

    def add(self, url: str, depth: int) -> bool:
        """Queue a normalized URL once; False when seen, too deep or beyond max_pages."""
        if url in self.seen or depth > self.max_depth:
            return False
        if len(self.seen) >= self.max_pages:
            self.truncated = True
            return False
        self.seen[url] = depth
        self.queue.append((url, depth))
        return True

    def pop(self) -> tuple[str, int] | None:
        return self.queue.popleft() if self.queue else None

    def finish(self, url: str) -> None:
        self.done.add(url)

    def requeue_unfinished(self) -> None:
        """Every URL seen but neither done nor queued (popped, and its fetch never finished)
        back to the front of the queue, shallowest first, so it is fetched on resume."""
        queued = {url for url, _ in self.queue}
        for url, depth in sorted(self.seen.items(), key=lambda item: -item[1]):
            if url not in self.done and url not in queued:
                self.queue.appendleft((url, depth))

    def to_json(self) -> str:
        return json.dumps(
            {
                "max_pages": self.max_pages,
                "max_depth": self.max_depth,
                "queue": list(self.queue),
                "seen": self.seen,
                "done": sorted(self.done),
                "truncated": self.truncated,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Frontier:
        """The frontier stored by to_json. URLs popped but not finished (the crash came while
        they were fetched) go back to the front of the queue."""
        data = json.loads(text)
        frontier = cls(max_pages=data["max_pages"], max_depth=data["max_depth"])
        frontier.queue = deque((url, depth) for url, depth in data["queue"])
        frontier.seen, frontier.done = dict(data["seen"]), set(data["done"])
        frontier.truncated = data["truncated"]
        frontier.requeue_unfinished()
        return frontier
