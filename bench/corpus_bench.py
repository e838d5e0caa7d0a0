"""Corpus bench: plan time and emulator/plain step time over the real-model corpus, as same-run ratios.

Run: ``.venv/bin/python bench/corpus_bench.py [--models zoo_dcgan,zoo_unet2d] [--steps 3] [--debug]``

For every ``tests/corpus/zoo_*.py`` model, in one process: build the script's graph, run ``steps``
training steps in a plain ``tf.compat.v1.Session`` (float32, this CPU) and in the emulator under the
script's NPU config, and plan the script's fetches. Printed per model, all measured on this CPU:

* ``plan/plain`` -- ``npu_jupyter.plan`` wall time divided by the median plain training step;
* ``emu/plain`` -- median emulated step (the script's config, nothing switched on) divided by the
  median plain step;
* ``debug/plain`` (with ``--debug``) -- the same for a separate emulated run with dump, overflow
  detection and profiling on, as the corpus test's debug run does it; never mixed into ``emu/plain``.

Ratios, not seconds, are what to compare across machines: both sides run under the same load. A
model whose plan or emulation fails prints the error instead of its ratio. Nothing here is an NPU time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def bench_model(name: str, steps: int, debug: bool) -> str:
    """One line of figures for one model (or its first error)."""
    from corpus import runner

    with tempfile.TemporaryDirectory(prefix="corpus_bench_") as tmp:
        out = Path(tmp)
        model = runner.build(name, out / "files")
        ops = len(model.graph.get_operations())
        config = runner.npu_config(model)
        plain = runner.plain_run(model, steps)
        parts = [f"{name[4:]:<28} ops={ops:<6} plain step={plain.median_s * 1000:8.1f} ms (CPU)"]
        try:
            _, plan_ms = runner.timed_plan(model, config)
            parts.append(f"plan/plain={plan_ms / 1000.0 / plain.median_s:6.2f}")
        except Exception as exc:  # report and go on: the bench covers the whole corpus
            parts.append(f"plan failed: {type(exc).__name__}: {str(exc)[:120]}")
        parts.append(_emulated_ratio("emu/plain", model, config, steps, plain.median_s))
        if debug:
            debug_config = runner.debug_config(config, out / "debug", model)
            parts.append(_emulated_ratio("debug/plain", model, debug_config, steps, plain.median_s))
        return "  ".join(parts)


def _emulated_ratio(label: str, model: Any, config: Any, steps: int, plain_s: float) -> str:
    """``label=ratio`` of the median emulated step to the same-run plain step, or the run's first error."""
    from corpus import runner

    try:
        emulated = runner.emulated_run(model, config, steps)
    except Exception as exc:  # report and go on: the bench covers the whole corpus
        first = (str(exc).splitlines() or [""])[0][:120]
        return f"{label} failed: {type(exc).__name__}: {first}"
    return f"{label}={emulated.median_s / plain_s:6.2f}"


def main() -> None:
    from corpus import runner

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="", help="comma-separated zoo_* module names (default: all)")
    parser.add_argument("--steps", type=int, default=runner.STEPS)
    parser.add_argument(
        "--debug", action="store_true", help="also a separate emulated run with dump, overflow detection, profiling"
    )
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n] or runner.module_names()
    print(
        f"corpus bench: {len(names)} models, {args.steps} steps, load average {os.getloadavg()[0]:.1f} "
        f"(times measured on this CPU; ratios are same-run)"
    )
    start = time.perf_counter()
    for name in names:
        print(bench_model(name, args.steps, args.debug), flush=True)
    print(f"total {time.perf_counter() - start:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
