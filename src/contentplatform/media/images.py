"""What is done to an uploaded file before it is stored, judged by its bytes (never its name).

- `detected_type`: the file's type from its magic bytes (filetype), to compare with the one the
  client declared;
- `without_location`: the image with its location removed. A JPEG is rewritten segment by
  segment, its pixels untouched: each EXIF segment loses its GPS IFD (Pillow's `Exif`; the
  orientation and every other tag stay), and an XMP packet naming GPS coordinates is dropped;
  an EXIF segment Pillow cannot read is dropped whole (a location it cannot see, it cannot
  remove). A PNG, WebP or AVIF with GPS in its EXIF (or XMP) is encoded again without it
  (PNG losslessly); a file without any is kept byte for byte. `has_location` reads a file the
  same way, for the check after storing;
- `renditions`: web-sized copies (`w1600`, `w800`: that width, never upscaled) and a thumbnail
  (at most 320 px on its longer side), the EXIF orientation applied and no metadata kept: JPEG,
  or WebP where the image has transparency. A GIF's or animated image's copies show its first
  frame. A JPEG is decoded at the smallest scale that still gives 1600 px (libjpeg's DCT
  scaling), so a large photo is never decoded whole;
- `as_webp`: the image encoded again as WebP, for a publishing target that takes no AVIF (Ghost).

Every image is refused before its pixels are decoded when it has more than MAX_PIXELS (a
"decompression bomb": a few kilobytes that unpack into gigabytes), as Pillow's own limit would.
This is CPU work: `off_loop` runs it on a small pool of its own (Pillow decodes and resizes
without the GIL), so the event loop keeps serving, and at most IMAGE_WORKERS images are decoded
at once, which bounds the memory they take.
"""

from __future__ import annotations

import asyncio
import functools
import io
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import filetype
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

# 50 megapixels: a 8660 x 5773 photo, beyond any camera's JPEG that fits in 20 MiB.
MAX_PIXELS = 50_000_000
RENDITION_WIDTHS = {"w1600": 1600, "w800": 800}
THUMBNAIL_SIZE = 320
IMAGE_WORKERS = 2
JPEG_QUALITY = 85

_GPS = ExifTags.IFD.GPSInfo
_ORIENTATION = ExifTags.Base.Orientation
_EXIF_HEADER = b"Exif\x00\x00"
_XMP_HEADERS = (b"http://ns.adobe.com/xap/1.0/\x00", b"http://ns.adobe.com/xmp/extension/\x00")
# Formats as Pillow names them, by MIME type.
FORMATS = {
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/webp": "WEBP",
    "image/gif": "GIF",
    "image/avif": "AVIF",
}
# filetype calls an animated PNG `image/apng`: it is a PNG to anyone who declares one.
_ALIASES = {"image/apng": "image/png"}

_POOL = ThreadPoolExecutor(max_workers=IMAGE_WORKERS, thread_name_prefix="media-images")

P = ParamSpec("P")
T = TypeVar("T")


class ImageError(Exception):
    """The image cannot be taken; `str()` says why, fit to show."""


async def off_loop(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` on the image pool (see the module docstring)."""
    call = functools.partial(function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_POOL, call)


def _readable(function: Callable[P, T]) -> Callable[P, T]:
    """`function`, whatever Pillow raises on a damaged or crafted file becoming ImageError
    (Pillow's readers raise many kinds: OSError, SyntaxError, struct.error, ...)."""

    @functools.wraps(function)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except ImageError:
            raise
        except Image.DecompressionBombError:
            raise _too_many_pixels() from None
        except Exception:
            raise ImageError("The image cannot be read: it is damaged or not an image.") from None

    return guarded


def detected_type(head: bytes) -> str | None:
    """The MIME type the file's first bytes show, or None when they show none it knows."""
    kind = filetype.guess(head)
    if kind is None:
        return None
    mime = str(kind.mime)
    return _ALIASES.get(mime, mime)


# --- location -------------------------------------------------------------------------------


def _mentions_gps(packet: bytes) -> bool:
    """An XMP packet with coordinates (exif:GPSLatitude, exif:GPSLongitude, ...)."""
    return b"GPS" in packet


def _exif_without_gps(payload: bytes) -> bytes | None:
    """The EXIF segment's payload without its GPS IFD; None when it has none. Raises what
    Pillow raises on an EXIF block it cannot read."""
    exif = Image.Exif()
    exif.load(payload)
    if _GPS not in exif:
        return None
    del exif[_GPS]
    return exif.tobytes()


@dataclass(frozen=True)
class _Segment:
    marker: int
    start: int
    end: int
    payload: bytes


def _jpeg_segments(data: bytes) -> Iterator[_Segment]:
    """The marker segments of a JPEG before its image data (start of scan); ImageError when
    they are not well formed."""
    if not data.startswith(b"\xff\xd8"):
        raise ImageError("The file is not a JPEG image.")
    position, size = 2, len(data)
    while position + 4 <= size:
        if data[position] != 0xFF:
            raise ImageError("The JPEG image is damaged (a marker is missing).")
        marker = data[position + 1]
        if marker == 0xFF:  # a fill byte
            position += 1
            continue
        if marker in (0xDA, 0xD9):  # start of scan, end of image: the rest is image data
            return
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # markers without a length
            yield _Segment(marker, position, position + 2, b"")
            position += 2
            continue
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        end = position + 2 + length
        if length < 2 or end > size:
            raise ImageError("The JPEG image is damaged (a segment runs past its end).")
        yield _Segment(marker, position, end, data[position + 4 : end])
        position = end


def _jpeg_without_location(data: bytes) -> bytes:
    kept = bytearray(data[:2])
    changed = False
    last = 2
    for segment in _jpeg_segments(data):
        last = segment.end
        if segment.marker == 0xE1 and segment.payload.startswith(_EXIF_HEADER):
            try:
                cleaned = _exif_without_gps(segment.payload)
            except Exception:  # whatever Pillow raises on a block it cannot read
                changed = True
                continue
            if cleaned is not None:
                changed = True
                if len(cleaned) + 2 > 0xFFFF:
                    continue  # cannot be larger than before; dropped rather than trusted
                kept += b"\xff\xe1" + (len(cleaned) + 2).to_bytes(2, "big") + cleaned
                continue
        elif (
            segment.marker == 0xE1
            and segment.payload.startswith(_XMP_HEADERS)
            and _mentions_gps(segment.payload)
        ):
            changed = True
            continue
        kept += data[segment.start : segment.end]
    if not changed:
        return data
    return bytes(kept + data[last:])


def _jpeg_has_location(data: bytes) -> bool:
    for segment in _jpeg_segments(data):
        if segment.marker != 0xE1:
            continue
        if segment.payload.startswith(_EXIF_HEADER):
            try:
                if _exif_without_gps(segment.payload) is not None:
                    return True
            except Exception:  # unreadable EXIF counts as a possible location
                return True
        elif segment.payload.startswith(_XMP_HEADERS) and _mentions_gps(segment.payload):
            return True
    return False


def _open(data: bytes) -> Image.Image:
    """The image, its header read (no pixels decoded yet), refused beyond MAX_PIXELS."""
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise _too_many_pixels() from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise ImageError("The image cannot be read: it is damaged or not an image.") from None
    width, height = image.size
    if width * height > MAX_PIXELS:
        image.close()
        raise _too_many_pixels(width, height)
    return image


def _too_many_pixels(width: int | None = None, height: int | None = None) -> ImageError:
    size = f" ({width} x {height})" if width and height else ""
    return ImageError(
        f"The image has more pixels{size} than this service decodes: at most {MAX_PIXELS:,}."
    )


def _xmp_of(image: Image.Image) -> bytes:
    xmp = image.info.get("xmp") or b""
    return xmp.encode() if isinstance(xmp, str) else bytes(xmp)


def _other_has_location(image: Image.Image) -> bool:
    return _GPS in image.getexif() or _mentions_gps(_xmp_of(image))


@_readable
def has_location(data: bytes, mime: str) -> bool:
    """Whether the image still says where it was taken (EXIF GPS, or XMP coordinates)."""
    if mime == "image/jpeg":
        return _jpeg_has_location(data)
    with _open(data) as image:
        return _other_has_location(image)


@_readable
def without_location(data: bytes, mime: str) -> bytes:
    """The image without the place it was taken (see the module docstring); `data` itself when
    it says none. ImageError when it cannot be read or has too many pixels, or when the location
    could not be removed."""
    if mime == "image/jpeg":
        with _open(data):  # the pixel bound, before anything else
            pass
        cleaned = _jpeg_without_location(data)
    else:
        cleaned = _encoded_without_location(data, mime)
    if has_location(cleaned, mime):
        raise ImageError(
            "The image's location data could not be removed; export it without location."
        )
    return cleaned


def _encoded_without_location(data: bytes, mime: str) -> bytes:
    with _open(data) as image:
        if not _other_has_location(image):
            return data
        exif = image.getexif()
        if _GPS in exif:
            del exif[_GPS]
        options: dict[str, object] = {"exif": exif.tobytes()}
        if image.info.get("icc_profile"):
            options["icc_profile"] = image.info["icc_profile"]
        if getattr(image, "n_frames", 1) > 1:
            options["save_all"] = True
        if mime == "image/webp":
            options["quality"] = 95
        elif mime == "image/avif":
            options["quality"] = 90
        elif mime == "image/gif":
            options.pop("exif")
        buffer = io.BytesIO()
        image.save(buffer, format=FORMATS[mime], **options)
        return buffer.getvalue()


@_readable
def as_webp(data: bytes) -> bytes:
    """The image encoded again as WebP, for a target that takes no AVIF (Ghost): every frame,
    its EXIF (orientation) and colour profile kept, at the quality an AVIF is kept at above."""
    with _open(data) as image:
        options: dict[str, object] = {"quality": 90, "exif": image.getexif().tobytes()}
        if image.info.get("icc_profile"):
            options["icc_profile"] = image.info["icc_profile"]
        if getattr(image, "n_frames", 1) > 1:
            options["save_all"] = True
        buffer = io.BytesIO()
        image.save(buffer, format="WEBP", **options)
        return buffer.getvalue()


# --- renditions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoded:
    data: bytes
    width: int
    height: int
    extension: str
    mime_type: str


@dataclass(frozen=True)
class Prepared:
    width: int
    height: int
    renditions: dict[str, Encoded]
    thumbnail: Encoded


def _encode(image: Image.Image, transparent: bool, icc: bytes | None) -> Encoded:
    buffer = io.BytesIO()
    options: dict[str, object] = {"icc_profile": icc} if icc else {}
    if transparent:
        image.save(buffer, format="WEBP", quality=JPEG_QUALITY, method=4, **options)
        extension, mime = "webp", "image/webp"
    else:
        image.save(
            buffer, format="JPEG", quality=JPEG_QUALITY, optimize=True, progressive=True, **options
        )
        extension, mime = "jpg", "image/jpeg"
    return Encoded(buffer.getvalue(), image.width, image.height, extension, mime)


@_readable
def renditions(data: bytes) -> Prepared:
    """The image's size as shown and its web-sized copies (see the module docstring)."""
    with _open(data) as image:
        return _renditions(image)


def _renditions(image: Image.Image) -> Prepared:
    width, height = image.size
    if image.getexif().get(_ORIENTATION) in (5, 6, 7, 8):  # turned a quarter: sides swap
        width, height = height, width
    largest = max(RENDITION_WIDTHS.values())
    if image.format == "JPEG":
        image.draft("RGB", (largest, largest))
    # An ICC profile describes the source's colours: kept only where they stay RGB.
    icc = image.info.get("icc_profile") if image.mode in ("RGB", "RGBA") else None
    shown = ImageOps.exif_transpose(image)
    transparent = shown.mode in ("RGBA", "LA", "PA") or (
        shown.mode == "P" and "transparency" in shown.info
    )
    shown = shown.convert("RGBA" if transparent else "RGB")
    copies: dict[str, Encoded] = {}
    for name, target in RENDITION_WIDTHS.items():
        if width <= target:
            continue  # never upscaled
        size = (target, max(1, round(height * target / width)))
        resized = shown.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
        copies[name] = _encode(resized, transparent, icc)
    thumbnail = shown.copy()
    thumbnail.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE), Image.Resampling.LANCZOS)
    return Prepared(width, height, copies, _encode(thumbnail, transparent, icc))
