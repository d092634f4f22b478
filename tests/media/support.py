"""Helpers for the media tests: one organization's media through one transport (`call`), real
image files made in the test with Pillow (with and without GPS EXIF), a minimal MP4, and direct
looks at the object store behind the API."""

from __future__ import annotations

import asyncio
import io
import struct
import uuid
import zlib
from typing import Any

import httpx
from PIL import ExifTags, Image

from contentplatform.config import Settings
from contentplatform.storage.store import ObjectStore
from tests.support.orgs import Org

GPS = ExifTags.IFD.GPSInfo
ORIENTATION = ExifTags.Base.Orientation


# --- files ------------------------------------------------------------------------------------


def jpeg(
    width: int = 2400,
    height: int = 1600,
    *,
    gps: bool = False,
    orientation: int | None = None,
    colour: tuple[int, int, int] | None = None,
    xmp_gps: bool = False,
) -> bytes:
    """A JPEG photo; with `gps`, EXIF saying where it was taken (and a camera make), with
    `orientation` the EXIF orientation tag, with `xmp_gps` an XMP packet with coordinates."""
    image = Image.new("RGB", (width, height), colour or _colour())
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "Stand-in Camera"
    if orientation is not None:
        exif[ORIENTATION] = orientation
    if gps:
        exif[GPS] = {
            ExifTags.GPS.GPSLatitudeRef: "N",
            ExifTags.GPS.GPSLatitude: (52.0, 22.0, 12.5),
            ExifTags.GPS.GPSLongitudeRef: "E",
            ExifTags.GPS.GPSLongitude: (4.0, 53.0, 41.0),
        }
    buffer = io.BytesIO()
    options: dict[str, Any] = {"exif": exif.tobytes(), "quality": 90}
    if xmp_gps:
        options["xmp"] = (
            b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
            b'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
            b'xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,22.2N" '
            b'exif:GPSLongitude="4,53.7E"/></rdf:RDF></x:xmpmeta>'
        )
    image.save(buffer, "JPEG", **options)
    return buffer.getvalue()


def png(width: int = 1200, height: int = 900, *, alpha: bool = False, gps: bool = False) -> bytes:
    image = Image.new(
        "RGBA" if alpha else "RGB", (width, height), (*_colour(), 128)[: 4 if alpha else 3]
    )
    options: dict[str, Any] = {}
    if gps:
        exif = Image.Exif()
        exif[GPS] = {ExifTags.GPS.GPSLatitudeRef: "S", ExifTags.GPS.GPSLatitude: (33.0, 51.0, 0.0)}
        options["exif"] = exif.tobytes()
    buffer = io.BytesIO()
    image.save(buffer, "PNG", **options)
    return buffer.getvalue()


def webp(width: int = 640, height: int = 480) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), _colour()).save(buffer, "WEBP")
    return buffer.getvalue()


def gif(width: int = 300, height: int = 200) -> bytes:
    buffer = io.BytesIO()
    Image.new("P", (width, height), 3).save(buffer, "GIF")
    return buffer.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels in a few bytes (a decompression bomb's
    shape): its header is true, its data a few zeros."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def mp4(extra: bytes = b"") -> bytes:
    """The start of an MP4 file: an `ftyp` box (isom) and an empty `mdat`; `extra` makes two
    files differ."""
    ftyp = b"ftypisom" + b"\x00\x00\x02\x00" + b"isomiso2avc1mp41"
    mdat = b"mdat" + extra
    return struct.pack(">I", len(ftyp) + 4) + ftyp + struct.pack(">I", len(mdat) + 4) + mdat


def _colour() -> tuple[int, int, int]:
    """A colour of its own, so each test's image is new content (no de-duplication across
    tests)."""
    raw = uuid.uuid4().bytes
    return raw[0], raw[1], raw[2]


def exif_of(data: bytes) -> Image.Exif:
    with Image.open(io.BytesIO(data)) as image:
        return image.getexif()


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


# --- the organization -------------------------------------------------------------------------


class Media(Org):
    """One organization's media through one transport (`call`). Writes go as the editor unless
    told otherwise, reads as the member."""

    default_role = "editor"

    def upload_url(self, filename: str, mime_type: str, size: int, role: str = "editor"):
        return self.request(
            "media.createUploadUrl",
            {"filename": filename, "mimeType": mime_type, "bytes": size},
            role=role,
        )

    def upload(self, filename: str, mime_type: str, data: bytes) -> str:
        """createUploadUrl, then PUT the bytes where it says; the storage path."""
        response = self.upload_url(filename, mime_type, len(data))
        assert response.status_code == 200, response.text
        target = response.json()
        put = self.client.request(
            target["method"], target["upload_url"], content=data, headers=target["headers"]
        )
        assert put.status_code == 200, put.text
        return str(target["storage_path"])

    def confirm(
        self, storage_path: str, filename: str, mime_type: str, role: str = "editor", **extra: Any
    ) -> httpx.Response:
        data = {"storagePath": storage_path, "filename": filename, "mimeType": mime_type, **extra}
        return self.request("media.confirmUpload", data, role=role)

    def add(
        self,
        data: bytes | None = None,
        filename: str = "photo.jpg",
        mime_type: str = "image/jpeg",
        **extra: Any,
    ) -> dict[str, Any]:
        """Upload and confirm (a new JPEG unless told otherwise); the asset."""
        content = data if data is not None else jpeg(800, 600)
        response = self.confirm(
            self.upload(filename, mime_type, content), filename, mime_type, **extra
        )
        assert response.status_code == 200, response.text
        return response.json()

    def get(self, media_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("media.getById", {"id": media_id}, role=role)

    def listed(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("media.list", query, role=role)

    def ids(self, **query: Any) -> list[str]:
        return [asset["id"] for asset in self.listed(**query)["data"]]

    def update(self, media_id: str, role: str = "editor", **changes: Any) -> httpx.Response:
        return self.request("media.update", {"id": media_id, **changes}, role=role)

    def draft(self, title: str = "A draft") -> str:
        return str(self.ok("drafts.createDraft", {"title": title})["id"])

    def attach(self, media_id: str, draft_id: str, *, as_role: str = "editor", **extra: Any):
        """media.attach's response; `extra` goes in the input (`role`: the attachment's)."""
        return self.request(
            "media.attach", {"id": media_id, "draftId": draft_id, **extra}, role=as_role
        )

    def usage(self, media_id: str, **query: Any) -> dict[str, Any]:
        return self.ok("media.getUsage", {"id": media_id, **query}, role="member")


# --- behind the API ---------------------------------------------------------------------------


def stored(settings: Settings, path: str) -> bytes:
    """The bytes the object store holds at `path`."""
    store = ObjectStore.from_settings(settings)
    return asyncio.run(store.get(path))


def exists(settings: Settings, path: str) -> bool:
    store = ObjectStore.from_settings(settings)
    return asyncio.run(store.head(path)) is not None
