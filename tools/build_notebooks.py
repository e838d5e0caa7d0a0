"""Build the tutorial notebooks from their sources and execute them, keeping the outputs.

Sources live in ``notebooks/src/NN_name.py`` in the percent format (``# %%`` starts a code cell,
``# %% [markdown]`` a markdown cell whose lines start with ``# ``). The executed ``.ipynb`` files in
``notebooks/`` are what users open and what ``pytest --nbval`` re-runs and compares, so the stored
outputs must be the ones a fresh run produces: rebuild after changing a source or the package.

    python tools/build_notebooks.py            # every notebook
    python tools/build_notebooks.py 01 03      # only those whose name starts with 01 or 03
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "notebooks" / "src"
OUT = ROOT / "notebooks"
# TensorFlow's C++ start-up lines (absl format: "I0000 00:00:1795314952.131366   24267 port.cc:153] ...")
# carry timestamps and process ids and tell a reader nothing; they are dropped from the stored outputs.
_NATIVE_LOG = re.compile(
    r"^([IWEF]\d{4} \d\d:\d\d:\S+\s+\d+ \S+:\d+\] .*|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR)$"
)


def parse_cells(text: str) -> list[nbformat.NotebookNode]:
    """Split a percent-format script into notebook cells."""
    cells: list[nbformat.NotebookNode] = []
    kind, lines = None, []

    def flush() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cells.append(nbformat.v4.new_code_cell(body))

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        else:
            lines.append(line)
    flush()
    return cells


def drop_native_logs(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Outputs without TensorFlow's native log lines on stderr (a stream left empty is removed)."""
    kept = []
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            lines = [line for line in output.text.splitlines(keepends=True) if not _NATIVE_LOG.match(line.rstrip("\n"))]
            if not "".join(lines).strip():
                continue
            output.text = "".join(lines)
        kept.append(output)
    return kept


def build(source: Path) -> Path:
    """Execute one notebook source in a fresh kernel and write ``notebooks/<name>.ipynb``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = parse_cells(source.read_text(encoding="utf-8"))
    started = time.perf_counter()
    # record_timing=False: no per-cell timestamps in the metadata, so a rebuild only changes what changed.
    NotebookClient(
        nb, timeout=600, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(OUT)}}
    ).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = drop_native_logs(cell.outputs)
    target = OUT / (source.stem + ".ipynb")
    tmp = target.with_suffix(".ipynb.tmp")
    nbformat.write(nb, str(tmp))
    tmp.replace(target)
    print(f"{target.relative_to(ROOT)}: {len(nb.cells)} cells, executed in {time.perf_counter() - started:.1f} s")
    return target


def main(argv: list[str]) -> int:
    # A sweep's progress bar appears once it has run 2 s: on a busy machine the stored notebook would
    # hold a widget snapshot ("HBox(children=(IntProgress(value=2, max=9)...") that a fast one has not.
    os.environ.setdefault("NPU_JUPYTER_PROGRESS", "0")
    sources = sorted(SOURCES.glob("*.py"))
    if argv:
        sources = [s for s in sources if any(s.name.startswith(prefix) for prefix in argv)]
    if not sources:
        print(f"no notebook sources matched {argv} in {SOURCES}", file=sys.stderr)
        return 2
    for source in sources:
        build(source)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
