"""Saving and loading a config as JSON: atomic writes, and loads that fail whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from npu_jupyter._options.errors import NpuConfigError

FORMAT = "npu_jupyter.NpuConfig"
VERSION = 1


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` via a temp file in the same directory,
    fsync, then os.replace; missing parent folders are created.

    Why: a crash or a full disk mid-write must never leave a truncated file where a good one was.
    Every file the package writes outside a dump step's folder (configs, dump manifests, profile
    traces and CSVs, cached plans) goes through here, so there is one implementation to get right.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def dump_options(path: str | os.PathLike[str], options: Mapping[str, Any]) -> Path:
    """Save the set options as a small self-describing JSON document."""
    document = {"format": FORMAT, "version": VERSION, "options": dict(options)}
    return write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def read_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The options of a saved config; NpuConfigError naming the file for anything unreadable.

    Accepts the saved document or a bare ``{"key": value}`` object, so a hand-written file works too.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise NpuConfigError(
            f"cannot read NPU config file {str(source)!r}: {exc.strerror or exc}", value=str(source)
        ) from None
    except UnicodeDecodeError as exc:
        raise NpuConfigError(
            f"NPU config file {str(source)!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8 JSON",
            value=str(source),
        ) from None
    except ValueError as exc:  # an embedded NUL in the path
        raise NpuConfigError(f"cannot read NPU config file {str(source)!r}: {exc}", value=str(source)) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise NpuConfigError(f"NPU config file {str(source)!r} is not valid JSON: {exc}", value=str(source)) from None
    if isinstance(document, dict) and "options" in document and document.get("format") == FORMAT:
        version = document.get("version")
        if version != VERSION:
            raise NpuConfigError(
                f"NPU config file {str(source)!r} has version {version!r}; this npu_jupyter reads version {VERSION}",
                value=str(source),
            )
        document = document["options"]
    if not isinstance(document, dict):
        raise NpuConfigError(f"NPU config file {str(source)!r} must hold a JSON object of options", value=str(source))
    return document
