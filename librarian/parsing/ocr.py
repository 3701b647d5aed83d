"""OCR with the `tesseract` binary, keeping word boxes so OCR'd text gets real bboxes.

The binary (Debian: `apt-get install tesseract-ocr`) rather than a Python OCR stack: it is the one
engine that works offline here without downloading models, and TSV output gives a box per word.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from typing import Any

from PIL import Image

RESOLUTION = 200  # dpi for rendering PDF pages: legible for tesseract, ~1 s per page on this machine
MIN_CONFIDENCE = 20.0  # tesseract scores below this are mostly specks read as letters
TIMEOUT_SECONDS = 120


class OcrFailed(RuntimeError):
    """Tesseract could not read an image; the caller decides whether that fails the document."""


def tesseract_path() -> str | None:
    return shutil.which("tesseract")


def _single_threaded() -> dict[str, str]:
    """Tesseract's OpenMP threads cost more CPU than they save (a page here: 0.78 s of CPU with them,
    0.50 s without, and no slower) and take the core the embedder needs: the ingest already runs
    documents in parallel."""
    return {**os.environ, "OMP_THREAD_LIMIT": "1"}


def ocr_words(image: Image.Image, scale: float = 1.0) -> list[dict[str, Any]]:
    """Words with boxes in the caller's units (`scale` converts pixels, e.g. 72/dpi for points)."""
    executable = tesseract_path()
    if executable is None:
        raise OcrFailed("tesseract is not installed")
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    try:
        proc = subprocess.run(
            [executable, "stdin", "stdout", "--psm", "3", "tsv"],
            input=buffer.getvalue(),
            env=_single_threaded(),
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OcrFailed(f"tesseract did not run: {exc}") from exc
    if proc.returncode != 0:
        raise OcrFailed(proc.stderr.decode("utf-8", "replace").strip()[:300] or "tesseract failed")
    return parse_tsv(proc.stdout.decode("utf-8", "replace"), scale)


def parse_tsv(tsv: str, scale: float) -> list[dict[str, Any]]:
    words = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        try:
            confidence = float(row["conf"])
            left, top = float(row["left"]), float(row["top"])
            width, height = float(row["width"]), float(row["height"])
        except (KeyError, TypeError, ValueError):
            continue
        if confidence < MIN_CONFIDENCE:
            continue
        words.append(
            {
                "text": text,
                "x0": left * scale,
                "x1": (left + width) * scale,
                "top": top * scale,
                "bottom": (top + height) * scale,
                "size": height * scale,
                "fontname": "",
            }
        )
    return words
