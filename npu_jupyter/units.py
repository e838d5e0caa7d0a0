"""How sizes read: one formatter for byte counts, used by the reports, the sweep and the dump messages."""

from __future__ import annotations


def format_bytes(count: int) -> str:
    """Human-readable byte count (``"4.0 KiB"``), binary units up to GiB."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
