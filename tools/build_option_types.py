#!/usr/bin/env python3
"""Write ``npu_jupyter/_options/_option_types.py``: a typed view of NpuConfig's generated traits.

``NpuConfig`` gets one trait per catalogue entry at import time, which editors and type checkers
cannot see. This tool turns the catalogue into a plain class of annotated attributes (each with the
option's doc line) that ``config.py`` mixes in under ``TYPE_CHECKING`` only, so completion and mypy
know every option name and type while the runtime class stays generated from the one catalogue.
A test rebuilds the file and compares, so it cannot drift from ``catalogue.json``.

Usage: ``python tools/build_option_types.py [--check]``
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CATALOGUE = REPO / "npu_jupyter" / "_options" / "catalogue.json"
OUT = REPO / "npu_jupyter" / "_options" / "_option_types.py"
PY_TYPES = {"b": "bool", "i": "int", "s": "str"}


def render(catalogue: dict) -> str:
    """The module text for ``catalogue`` (deterministic: catalogue order, fixed wrapping)."""
    lines = [
        '"""Typed view of NpuConfig\'s options, generated from catalogue.json by tools/build_option_types.py.',
        "",
        "Do not edit: rebuild with ``python tools/build_option_types.py``. Used under ``TYPE_CHECKING`` only.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "",
        "class OptionAttributes:",
        '    """Every session option as an attribute: ``None`` = unset (the adapter default applies)."""',
        "",
    ]
    for entry in catalogue["options"]:
        kind = PY_TYPES[entry["field"]]
        if entry.get("accepts_int"):
            kind = "str | int"
        lines.append(f"    {entry['key']}: {kind} | None")
        doc = entry["doc"].replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        wrapped = textwrap.wrap(doc, width=104)
        if len(wrapped) == 1:
            lines.append(f'    """{wrapped[0]}"""')
        else:
            lines.append(f'    """{wrapped[0]}')
            lines.extend(f"    {part}" for part in wrapped[1:])
            lines.append('    """')
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is not up to date")
    args = parser.parse_args(argv)
    text = render(json.loads(CATALOGUE.read_text(encoding="utf-8")))
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(REPO)} is out of date: run python tools/build_option_types.py")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
