"""Notebook interface costs, measured in a real IPython shell against baselines from the same run.

1. ``%load_ext npu_jupyter`` in a fresh interpreter (goal: <= 100 ms, TensorFlow not imported), next to
   ``%load_ext storemagic`` (IPython's own small extension) as the baseline.
2. ``%%npu`` on a trivial cell against the same cell without the magic (goal: <= 20 ms added), once
   TensorFlow is imported (the first ``%%npu`` cell pays TF's import, as any TF cell would).
3. ``npu_jupyter.panel()``: first tab (what the user waits for) and every tab, against building one
   plain ipywidgets Text per option as the baseline.

Run: ``.venv/bin/python bench/notebook_bench.py [--repeat N]``. Prints figures and ratios; asserts only
the hard promise (no TensorFlow import at load), never timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_LOAD_PROBE = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
start = time.perf_counter()
ip.run_line_magic("load_ext", {ext!r})
elapsed = time.perf_counter() - start
print(json.dumps({{"ms": elapsed * 1000, "tf": "tensorflow" in sys.modules}}))
"""

_CELL_PROBE = """
import json, statistics, time
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "npu_jupyter")
import tensorflow  # paid once per kernel by any TF notebook; not part of the magic's overhead
cell = "x = sum(range(10))\\n"
variants = {{
    "plain cell": cell,
    "%%npu": "%%npu\\n" + cell,
    "%%npu --precision force_fp16 --mix --quiet": "%%npu --precision force_fp16 --mix --quiet\\n" + cell,
}}
for source in variants.values():  # warm up
    ip.run_cell(source, store_history=False)
out = {{}}
for name, source in variants.items():
    times = []
    for _ in range({repeat}):
        start = time.perf_counter()
        result = ip.run_cell(source, store_history=False)
        times.append((time.perf_counter() - start) * 1000)
        assert result.success, result.error_in_exec or result.error_before_exec
    out[name] = statistics.median(times)
print(json.dumps(out))
"""


_PANEL_PROBE = """
import json, statistics, time
import ipywidgets as widgets
from npu_jupyter._notebook.panel import panel
from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
panel(NpuConfig()).close()  # warm imports
def timed(fn):
    samples = []
    for _ in range({repeat}):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)
def first_tab():
    panel(NpuConfig()).close()
def all_tabs():
    p = panel(NpuConfig())
    for key in catalogue.keys():
        p.control(key)
    p.close()
def baseline():
    box = widgets.VBox([widgets.Text(description=k) for k in catalogue.keys()])
    box.close()
print(json.dumps({{"baseline": timed(baseline), "first tab": timed(first_tab), "all tabs": timed(all_tabs),
                  "options": len(catalogue.keys())}}))
"""


def _run(code: str) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"probe failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_ext_times(repeat: int) -> dict[str, float]:
    """Median ``%load_ext`` time per extension, each in a fresh interpreter."""
    results: dict[str, float] = {}
    for ext in ("storemagic", "npu_jupyter"):
        samples = []
        for _ in range(repeat):
            probe = _run(_LOAD_PROBE.format(ext=ext))
            assert not probe["tf"], f"%load_ext {ext} imported TensorFlow"
            samples.append(probe["ms"])
        results[ext] = statistics.median(samples)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh interpreters for the load test")
    parser.add_argument("--cells", type=int, default=50, help="runs per cell variant")
    args = parser.parse_args()

    loads = load_ext_times(args.repeat)
    base, ours = loads["storemagic"], loads["npu_jupyter"]
    print(f"%load_ext storemagic   (baseline) {base:7.1f} ms  median of {args.repeat} fresh interpreters")
    print(
        f"%load_ext npu_jupyter             {ours:7.1f} ms  = {ours / base:.1f}x baseline; "
        f"goal <= 100 ms: {'met' if ours <= 100 else 'MISSED'}; TensorFlow not imported"
    )

    cells = _run(_CELL_PROBE.format(repeat=args.cells))
    plain = cells.pop("plain cell")
    print(f"plain cell             (baseline) {plain:7.2f} ms  median of {args.cells}")
    for name, ms in cells.items():
        added = ms - plain
        print(
            f"{name:<45} {ms:7.2f} ms  = {ms / plain:.1f}x, +{added:.2f} ms; "
            f"goal <= +20 ms: {'met' if added <= 20 else 'MISSED'}"
        )

    built = _run(_PANEL_PROBE.format(repeat=args.repeat))
    print(f"{built['options']} plain Text widgets (baseline) {built['baseline']:7.1f} ms")
    for name in ("first tab", "all tabs"):
        print(f"panel(), {name:<24} {built[name]:7.1f} ms  = {built[name] / built['baseline']:.1f}x baseline")


if __name__ == "__main__":
    main()
