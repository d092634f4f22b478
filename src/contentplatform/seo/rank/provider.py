"""DataForSEO's SERP API v3 (Google organic, the `advanced` results), through the guarded
client with Basic auth from the tenant's sealed credentials {login, password}:

- task mode: `POST {base}/v3/serp/google/organic/task_post` with up to 100 tasks
  [{keyword, location_code, language_code, device, depth, tag[, stop_crawl_on_match]}],
  each answered {id, status_code 20100 "Task Created", cost}; then
  `GET .../tasks_ready` (the account's tasks whose results wait: [{id, tag, ...}]) and
  `GET .../task_get/advanced/{id}` for each of ours;
- live mode: `POST .../live/advanced` with one task, the result in the answer (dearer).

DataForSEO answers HTTP 200 with status codes of its own, for the request (`status_code`,
20000 ok) and for each task (`tasks[].status_code`: 20000 ok, 20100 created, 40601/40602 not
ready yet, other 40xxx the task's fault, 50xxx theirs). A task-level failure fails that task
alone; a request-level one (an HTTP error, a 40xxx/50xxx request status, unreachable) fails
every task the request carried. `cost` is in USD, as DataForSEO bills. Messages are
DataForSEO's `status_message` or ours, never the credentials.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from contentplatform.config import Settings
from contentplatform.kit import outbound

BASE_PATH = "/v3/serp/google/organic"
MAX_TASKS_PER_POST = 100
OK, CREATED = 20000, 20100
# "Task Handed", "Task in Queue": asked again at the next poll.
NOT_READY = frozenset({"40601", "40602"})
# A full 100-result advanced SERP runs to a few hundred kilobytes.
MAX_RESPONSE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Task:
    """One SERP to read: a tracked keyword's market and device. `tag` is ours (the position
    row's id), given back by DataForSEO with the result. `stop_at` is our domain when the
    check stops at the page it shows on."""

    tag: str
    keyword: str
    location_code: int
    language_code: str
    device: str
    depth: int
    stop_at: str | None = None

    def body(self) -> dict[str, Any]:
        sent: dict[str, Any] = {
            "keyword": self.keyword,
            "location_code": self.location_code,
            "language_code": self.language_code,
            "device": self.device,
            "depth": self.depth,
            "tag": self.tag,
        }
        if self.stop_at:
            sent["stop_crawl_on_match"] = [
                {"match_value": self.stop_at, "match_type": "with_subdomains"}
            ]
        return sent


@dataclass(frozen=True)
class Failed:
    """A task (or a request's every task) that failed: DataForSEO's code and words."""

    code: str
    message: str


@dataclass(frozen=True)
class Posted:
    task_id: str
    cost: float | None


@dataclass(frozen=True)
class Result:
    """A task's SERP: its `advanced` result (items, item_types, pages_count) and cost."""

    items: list[dict[str, Any]]
    item_types: list[str]
    pages_count: int | None
    cost: float | None = None


class RequestFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message[:500]


def _auth(credentials: dict[str, Any]) -> dict[str, str]:
    pair = f"{credentials.get('login', '')}:{credentials.get('password', '')}"
    return {
        "authorization": f"Basic {base64.b64encode(pair.encode()).decode()}",
        "accept": "application/json",
    }


async def _send(
    settings: Settings,
    credentials: dict[str, Any],
    method: str,
    path: str,
    body: Any = None,
) -> list[dict[str, Any]]:
    """One request of the SERP API (`path` under BASE_PATH)."""
    return await request(settings, credentials, method, f"{BASE_PATH}{path}", body)


async def request(
    settings: Settings,
    credentials: dict[str, Any],
    method: str,
    path: str,
    body: Any = None,
) -> list[dict[str, Any]]:
    """One request to DataForSEO at `path` (from the API's base, `/v3/...`), with Basic auth
    from `credentials`: its `tasks`, or RequestFailed. Keyword research (seo/research/labs.py)
    calls the Labs API through it."""
    policy = outbound.policy_of(
        settings,
        timeout=settings.rank_request_timeout_seconds,
        max_response_bytes=MAX_RESPONSE_BYTES,
    )
    try:
        async with outbound.GuardedClient(policy) as client:
            response = await client.request(
                method,
                f"{settings.dataforseo_api_base.rstrip('/')}{path}",
                headers=_auth(credentials),
                json=body,
            )
    except outbound.OutboundError as error:
        raise RequestFailed("unreachable", str(error)) from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise RequestFailed("invalid_response", f"DataForSEO answered HTTP {response.status}.")
    code = answer.get("status_code")
    if response.status != 200 or code != OK:
        message = str(answer.get("status_message") or f"HTTP {response.status}")
        raise RequestFailed(str(code or response.status), f"DataForSEO: {message}")
    tasks = answer.get("tasks")
    return [task for task in tasks if isinstance(task, dict)] if isinstance(tasks, list) else []


def _failed(task: dict[str, Any]) -> Failed:
    return Failed(
        str(task.get("status_code") or "invalid_response"),
        str(task.get("status_message") or "The task failed.")[:500],
    )


def _cost(task: dict[str, Any]) -> float | None:
    cost = task.get("cost")
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def read_result(task: dict[str, Any]) -> Result | Failed:
    """A task of task_get/advanced or live/advanced as its Result, or Failed."""
    if task.get("status_code") != OK:
        return _failed(task)
    results = task.get("result")
    first = results[0] if isinstance(results, list) and results else None
    if not isinstance(first, dict):
        return Failed("invalid_response", "The task holds no result.")
    items = [item for item in first.get("items") or [] if isinstance(item, dict)]
    types = [str(kind) for kind in first.get("item_types") or [] if isinstance(kind, str)]
    pages = first.get("pages_count")
    return Result(
        items=items,
        item_types=types,
        pages_count=pages if isinstance(pages, int) and not isinstance(pages, bool) else None,
        cost=_cost(task),
    )


async def post_tasks(
    settings: Settings, credentials: dict[str, Any], tasks: list[Task]
) -> dict[str, Posted | Failed]:
    """task_post of at most 100 tasks: by tag, each Posted or Failed (RequestFailed: all)."""
    answered = await _send(
        settings, credentials, "POST", "/task_post", [task.body() for task in tasks]
    )
    outcome: dict[str, Posted | Failed] = {}
    for sent, answer in zip(tasks, answered, strict=False):
        # DataForSEO answers the tasks in the order posted, each with its data (tag) echoed.
        data = answer.get("data")
        tag = str(data.get("tag") or sent.tag) if isinstance(data, dict) else sent.tag
        if answer.get("status_code") == CREATED and answer.get("id"):
            outcome[tag] = Posted(str(answer["id"])[:64], _cost(answer))
        else:
            outcome[tag] = _failed(answer)
    for task in tasks:
        outcome.setdefault(task.tag, Failed("invalid_response", "DataForSEO left it unanswered."))
    return outcome


async def ready(settings: Settings, credentials: dict[str, Any]) -> set[str]:
    """The ids of the account's tasks whose results are ready."""
    ids: set[str] = set()
    for task in await _send(settings, credentials, "GET", "/tasks_ready"):
        for result in task.get("result") or []:
            if isinstance(result, dict) and result.get("id"):
                ids.add(str(result["id"]))
    return ids


async def get(settings: Settings, credentials: dict[str, Any], task_id: str) -> Result | Failed:
    """task_get/advanced of one ready task (RequestFailed when the request failed)."""
    tasks = await _send(settings, credentials, "GET", f"/task_get/advanced/{task_id}")
    if not tasks:
        return Failed("invalid_response", "DataForSEO answered no task.")
    return read_result(tasks[0])


async def live(settings: Settings, credentials: dict[str, Any], task: Task) -> Result | Failed:
    """live/advanced of one task, its SERP in the answer."""
    try:
        tasks = await _send(settings, credentials, "POST", "/live/advanced", [task.body()])
    except RequestFailed as error:
        return Failed(error.code, error.message)
    if not tasks:
        return Failed("invalid_response", "DataForSEO answered no task.")
    return read_result(tasks[0])
