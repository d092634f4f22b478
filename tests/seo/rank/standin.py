"""A stand-in of DataForSEO's SERP API v3 on loopback (Google organic, advanced results), Basic
auth checked:

- `GET /v3/appendix/user_data` (what seo.connect checks credentials with);
- `POST /v3/serp/google/organic/task_post` -> each task {id, status_code 20100, cost};
- `GET .../tasks_ready` -> the tasks not yet collected; `GET .../task_get/advanced/{id}`;
- `POST .../live/advanced` -> the SERP at once.

A test places domains on a keyword's SERP (`place(keyword, domain, position)`), adds an AI
Overview citing a domain (`ai_overview`), and fails chosen keywords' tasks (`fail`: their
task_get or live answer carries task status 50000). Other results are `siteN.standin.example`.

It serves DataForSEO Labs too (keyword research), on the same base: `labs`
(tests/seo/research/labs_standin.py).
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.seo.research.labs_standin import LabsStandIn
from tests.support.servers import LoopbackServer, send

LOGIN, PASSWORD = "rank-login@example.com", "rank-password-0123456789"
BASE = "/v3/serp/google/organic"
COST_PER_PAGE = 0.0006


class SerpStandIn(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.placed: dict[str, dict[int, str]] = {}
        self.cited: dict[str, str] = {}
        self.failing: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.collected: set[str] = set()
        self.calls: Counter[str] = Counter()
        self.posted: list[dict[str, Any]] = []
        self.live: list[dict[str, Any]] = []
        self.labs = LabsStandIn()

    def settings(self) -> dict[str, Any]:
        return {"dataforseo_api_base": self.url, "rank_poll_seconds": 0.02}

    def place(self, keyword: str, domain: str, position: int) -> None:
        with self.lock:
            placed = self.placed.setdefault(keyword, {})
            for spot, found in list(placed.items()):
                if found == domain:
                    del placed[spot]
            placed[position] = domain

    def ai_overview(self, keyword: str, domain: str) -> None:
        with self.lock:
            self.cited[keyword] = domain

    def fail(self, *keywords: str) -> None:
        with self.lock:
            self.failing.update(keywords)

    # --- serving ------------------------------------------------------------------------------

    def serve(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        length = int(request.headers.get("content-length") or 0)
        body = json.loads(request.rfile.read(length)) if length else None
        expected = base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            send(request, 401, {}, {"status_code": 40100, "status_message": "Not authorized."})
            return
        with self.lock:
            self.calls[path.replace(BASE, "").split("/advanced/")[0]] += 1
            send(request, 200, {}, self._answer(request.command, path, body))

    def _answer(self, method: str, path: str, body: Any) -> dict[str, Any]:
        if path == "/v3/appendix/user_data":
            return _envelope([{"status_code": 20000, "result": [{"login": LOGIN}]}])
        if method == "POST" and path.startswith("/v3/dataforseo_labs/"):
            return _envelope(self.labs.answer(path, body))
        if method == "POST" and path == f"{BASE}/task_post":
            answered = []
            for data in body:
                task_id = str(uuid.uuid4())
                self.tasks[task_id] = data
                self.posted.append(data)
                answered.append(
                    {
                        "id": task_id,
                        "status_code": 20100,
                        "status_message": "Task Created.",
                        "cost": _cost(data),
                        "data": data,
                        "result": None,
                    }
                )
            return _envelope(answered)
        if method == "GET" and path == f"{BASE}/tasks_ready":
            ready = [
                {"id": task_id, "tag": data.get("tag"), "endpoint_advanced": ""}
                for task_id, data in self.tasks.items()
                if task_id not in self.collected
            ]
            return _envelope([{"status_code": 20000, "result": ready}])
        if method == "GET" and path.startswith(f"{BASE}/task_get/advanced/"):
            task_id = path.rsplit("/", 1)[1]
            data = self.tasks.get(task_id)
            if data is None:
                return _envelope(
                    [{"id": task_id, "status_code": 40400, "status_message": "Not Found."}]
                )
            self.collected.add(task_id)
            return _envelope([self._task(task_id, data)])
        if method == "POST" and path == f"{BASE}/live/advanced":
            self.live.append(body[0])
            return _envelope([self._task(str(uuid.uuid4()), body[0])])
        return {"status_code": 40400, "status_message": "Not Found.", "tasks": []}

    def _task(self, task_id: str, data: dict[str, Any]) -> dict[str, Any]:
        keyword = data["keyword"]
        if keyword in self.failing:
            return {
                "id": task_id,
                "status_code": 50000,
                "status_message": "Internal Error.",
                "cost": 0,
                "data": data,
                "result": None,
            }
        return {
            "id": task_id,
            "status_code": 20000,
            "status_message": "Ok.",
            "cost": _cost(data),
            "data": data,
            "result": [self._serp(data)],
        }

    def _serp(self, data: dict[str, Any]) -> dict[str, Any]:
        keyword, depth = data["keyword"], int(data["depth"])
        placed = self.placed.get(keyword, {})
        stop = [target["match_value"] for target in data.get("stop_crawl_on_match") or []]
        items: list[dict[str, Any]] = []
        absolute = 0
        if keyword in self.cited:
            absolute += 1
            source = self.cited[keyword]
            items.append(
                {
                    "type": "ai_overview",
                    "rank_group": 1,
                    "rank_absolute": absolute,
                    "markdown": f"An AI Overview of {keyword}, citing {source}.",
                    "references": [{"domain": source, "url": f"https://{source}/guide"}],
                }
            )
        read = 0
        for position in range(1, depth + 1):
            domain = placed.get(position, f"site{position}.standin.example")
            absolute += 1
            read = position
            items.append(
                {
                    "type": "organic",
                    "rank_group": position,
                    "rank_absolute": absolute,
                    "domain": domain,
                    "url": f"https://{domain}/{keyword.replace(' ', '-')}",
                    "title": f"{keyword} #{position}",
                }
            )
            found = any(
                placed.get(spot) in stop for spot in range(1, position + 1) if spot in placed
            )
            if stop and position % 10 == 0 and found:
                break
        return {
            "keyword": keyword,
            "item_types": list(dict.fromkeys(item["type"] for item in items)),
            "pages_count": (read + 9) // 10,
            "items_count": len(items),
            "items": items,
        }


def _cost(data: dict[str, Any]) -> float:
    return round(COST_PER_PAGE * int(data.get("depth", 10)) / 10, 6)


def _envelope(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": "0.1.20250101",
        "status_code": 20000,
        "status_message": "Ok.",
        "cost": sum(task.get("cost") or 0 for task in tasks),
        "tasks_count": len(tasks),
        "tasks_error": sum(1 for task in tasks if task.get("status_code", 0) >= 40000),
        "tasks": tasks,
    }
