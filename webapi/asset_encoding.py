"""The web app's assets, compressed for browsers that accept it (`Content-Encoding: br` or `gzip`).

The app's JavaScript is some 460 kB raw, 101 kB in Brotli and 124 kB in gzip. The build writes `.br`
and `.gz` siblings of each text asset (`web/vite-plugin-compress.js`: Brotli at quality 11 takes
1.4 s, too slow for a request); when a build has none (an older `web/dist`), the asset is gzipped
once (level 6, about 20 ms for the JS) and kept in memory, since assets are content-hashed and never
change under their name. A browser that accepts neither gets the raw file through `StaticFiles`.
"""

from __future__ import annotations

import asyncio
import gzip
import mimetypes
from functools import lru_cache
from pathlib import Path, PurePosixPath

from starlette.responses import FileResponse, Response

# Preference order: Brotli is the smaller. Sibling suffixes as the build writes them.
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
COMPRESSIBLE = frozenset({".js", ".mjs", ".css", ".html", ".svg", ".json", ".txt", ".map"})
GZIP_LEVEL = 6  # 124 kB in 21 ms for the JS; level 9 saves 0.2 kB for 5 ms more
VARY = {"Vary": "Accept-Encoding"}


def accepted(header: str | None) -> set[str]:
    """The content codings an `Accept-Encoding` header allows (`q=0` refuses; `*` allows the rest).

    Malformed parts are ignored rather than refused: the raw file is always an acceptable answer.
    """
    allowed: set[str] = set()
    refused: set[str] = set()
    wildcard = False
    for part in (header or "").split(","):
        name, _, params = part.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0  # unreadable weight: do not assume the client wants it
        if name == "*":
            wildcard = quality > 0
        elif quality > 0:
            allowed.add(name)
        else:
            refused.add(name)
    if wildcard:
        allowed |= {coding for coding, _ in ENCODINGS} - refused
    return allowed - refused


def is_compressible(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in COMPRESSIBLE


def asset_file(directory: Path, relative: str) -> Path | None:
    """The file `relative` names inside `directory`, or None (missing, a folder, or outside it)."""
    parts = PurePosixPath(relative.lstrip("/")).parts
    if not parts or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        return None
    candidate = directory.joinpath(*parts)
    try:
        resolved = candidate.resolve()
        if not resolved.is_relative_to(directory.resolve()) or not resolved.is_file():
            return None
    except (OSError, ValueError):
        return None
    return resolved


@lru_cache(maxsize=64)
def _gzipped(path: Path, mtime_ns: int, size: int) -> bytes:
    """A gzip of the file as it was at (mtime, size): the key changes when the file does."""
    return gzip.compress(path.read_bytes(), compresslevel=GZIP_LEVEL, mtime=0)


async def compressed_response(
    directory: Path, relative: str, accept_encoding: str | None, *, head: bool = False
) -> Response | None:
    """The asset in the best coding the client accepts, or None to serve it raw.

    None also for what is not a compressible file here; the caller's `StaticFiles` then answers
    (its 404 included).
    """
    if not is_compressible(relative):
        return None
    source = asset_file(directory, relative)
    if source is None:
        return None
    wanted = accepted(accept_encoding)
    media_type = mimetypes.guess_type(source.name)[0] or "application/octet-stream"
    for coding, suffix in ENCODINGS:
        sibling = source.with_name(source.name + suffix)
        if coding in wanted and sibling.is_file():
            return FileResponse(sibling, media_type=media_type, headers={"Content-Encoding": coding, **VARY})
    if "gzip" in wanted:
        stat = source.stat()
        body = await asyncio.to_thread(_gzipped, source, stat.st_mtime_ns, stat.st_size)
        headers = {"Content-Encoding": "gzip", "Content-Length": str(len(body)), **VARY}
        return Response(b"" if head else body, media_type=media_type, headers=headers)
    return None
