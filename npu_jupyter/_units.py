"""Sizes: bytes per element of each dtype, and one formatter for byte counts (reports, sweep, dump messages)."""

from __future__ import annotations


def format_bytes(count: int) -> str:
    """Human-readable byte count (``"4.0 KiB"``), binary units up to GiB."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


#: Bytes per element of each TensorFlow dtype with a fixed size (transfers, dump budget, cost model).
DTYPE_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
}
