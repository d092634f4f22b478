"""A stand-in Unsplash API (https://unsplash.com/documentation) for tests, on loopback.

Enough of the real protocol to be faithful, and strict about what we send:
- every request needs `Authorization: Client-ID <access key>` (anything else: 401 with
  Unsplash's `{"errors": ["OAuth error: The access token is invalid"]}`) and
  `Accept-Version: v1` (real Unsplash tolerates it missing; the stand-in answers 400 so a test
  notices);
- `GET /search/photos?query&page&per_page&orientation`: the photos with any word of the query in
  their description, alt description or tags, filtered by orientation (landscape, portrait,
  squarish), paged (`per_page` 1-30, default 10) as `{"total", "total_pages", "results"}`; a
  missing query or an unknown orientation is 400;
- `GET /photos/:id`: the photo, or 404 `{"errors": ["Couldn't find Photo"]}`;
- `GET /photos/:id/download` (each photo's `links.download_location`): the download tracking
  Unsplash requires on use, recorded in `downloads` (photo ids in order); answers
  `{"url": ...}`.

Photos are Unsplash's JSON (`id`, `width`, `height`, `description`, `alt_description`, `urls`,
`links`, `user`, `tags`); their image and page URLs name hosts under `.test` that nobody
fetches (the service hotlinks, never downloads). Every answer carries `X-Ratelimit-Limit` and
`X-Ratelimit-Remaining`. Failures are scripted as on every stand-in
(tests/support/targets/scripted.py); their default body is Unsplash's error shape.

    with UnsplashServer() as unsplash:
        unsplash.add_photo("abc123", description="A watering can", author="Ada Gardener")
        unsplash.fail(Failure(500), path="/search/photos")
        ...
        assert unsplash.downloads == ["abc123"]
"""

from __future__ import annotations

import math
import re
import secrets
from typing import Any

from tests.support.targets.scripted import Answer, ScriptedServer, Seen

ORIENTATIONS = ("landscape", "portrait", "squarish")
_DOWNLOAD = re.compile(r"/photos/([^/]+)/download")
_PHOTO = re.compile(r"/photos/([^/]+)")


class UnsplashServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__()
        self.access_key = secrets.token_hex(16)
        self.photos: dict[str, dict[str, Any]] = {}
        self.downloads: list[str] = []

    def add_photo(
        self,
        photo_id: str,
        *,
        description: str | None = "A photo",
        alt_description: str | None = None,
        author: str = "Ada Gardener",
        username: str = "ada",
        width: int = 4000,
        height: int = 3000,
        tags: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """A photo on the stand-in (Unsplash's JSON of it)."""
        images = f"https://images.unsplash.test/photo-{photo_id}?ixid=stand-in"
        photo = {
            "id": photo_id,
            "created_at": "2024-05-01T10:00:00Z",
            "width": width,
            "height": height,
            "color": "#6E633A",
            "description": description,
            "alt_description": alt_description,
            "urls": {
                "raw": images,
                "full": f"{images}&q=85&fm=jpg",
                "regular": f"{images}&w=1080&fm=jpg",
                "small": f"{images}&w=400&fm=jpg",
                "thumb": f"{images}&w=200&fm=jpg",
            },
            "links": {
                "self": f"{self.url}/photos/{photo_id}",
                "html": f"https://unsplash.test/photos/{photo_id}",
                "download": f"https://unsplash.test/photos/{photo_id}/download",
                "download_location": f"{self.url}/photos/{photo_id}/download?ixid=stand-in",
            },
            "user": {
                "id": f"user-{username}",
                "username": username,
                "name": author,
                "links": {
                    "self": f"{self.url}/users/{username}",
                    "html": f"https://unsplash.test/@{username}",
                },
            },
            "tags": [{"title": tag} for tag in tags],
        }
        with self.lock:
            self.photos[photo_id] = photo
        return photo

    def error_body(self, status: int, message: str, code: str | None) -> Any:
        return {"errors": [message]}

    def handle(self, request: Seen) -> Answer:
        headers = {"x-ratelimit-limit": "50", "x-ratelimit-remaining": "49"}
        if request.method != "GET":
            return 405, headers, self.error_body(405, "Method not allowed", None)
        if request.headers.get("authorization") != f"Client-ID {self.access_key}":
            return (
                401,
                headers,
                self.error_body(401, "OAuth error: The access token is invalid", None),
            )
        if request.headers.get("accept-version") != "v1":
            return 400, headers, self.error_body(400, "Accept-Version v1 is expected", None)
        if request.path == "/search/photos":
            return self._search(request, headers)
        if found := _DOWNLOAD.fullmatch(request.path):
            photo_id = found.group(1)
            if photo_id not in self.photos:
                return 404, headers, self.error_body(404, "Couldn't find Photo", None)
            self.downloads.append(photo_id)
            return 200, headers, {"url": f"https://images.unsplash.test/photo-{photo_id}?dl=1"}
        if found := _PHOTO.fullmatch(request.path):
            photo = self.photos.get(found.group(1))
            if photo is None:
                return 404, headers, self.error_body(404, "Couldn't find Photo", None)
            return 200, headers, photo
        return 404, headers, self.error_body(404, "Not found", None)

    def _search(self, request: Seen, headers: dict[str, str]) -> Answer:
        query = request.query.get("query", "").lower().split()
        orientation = request.query.get("orientation")
        if not query:
            return 400, headers, self.error_body(400, "query is missing", None)
        if orientation is not None and orientation not in ORIENTATIONS:
            return 400, headers, self.error_body(400, "orientation is invalid", None)
        try:
            page = int(request.query.get("page", "1"))
            per_page = min(int(request.query.get("per_page", "10")), 30)
        except ValueError:
            return 400, headers, self.error_body(400, "page and per_page are numbers", None)

        def matches(photo: dict[str, Any]) -> bool:
            words = " ".join(
                [
                    photo.get("description") or "",
                    photo.get("alt_description") or "",
                    *(tag["title"] for tag in photo["tags"]),
                ]
            ).lower()
            if not any(word in words for word in query):
                return False
            width, height = photo["width"], photo["height"]
            return orientation in (
                None,
                "landscape" if width > height else "portrait" if height > width else "squarish",
            )

        found = [photo for photo in self.photos.values() if matches(photo)]
        start = (page - 1) * per_page
        return (
            200,
            headers,
            {
                "total": len(found),
                "total_pages": math.ceil(len(found) / per_page) if per_page else 0,
                "results": found[start : start + per_page],
            },
        )
