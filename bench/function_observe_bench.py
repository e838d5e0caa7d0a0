"""What observing a traced function costs: a Keras ``fit`` step with the observer nodes on, as same-run ratios.

Run: ``TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/function_observe_bench.py [--quick]``

The models and the timing loop are ``keras_bench.py``'s. Sides: plain Keras; then, float32-preserving
(``must_keep_origin_dtype``) so only observation differs, the emulation with nothing observed,
``enable_dump_debug`` (a finite flag per float output each call; the values reach Python only on a call
that overflows), and ``enable_dump`` with a ``dump_step`` no call reaches (the values stay in the graph,
behind a ``Switch``); ``allow_mix_precision`` (storage rounding plus the finite flags every
precision-lowering plan gets, one ``DebugNumericSummaryV2`` node per float output); last the same with
drift on (``reference=True``: a float32 shadow of each body and in-graph comparisons per float output).
All times are wall-clock times measured on this CPU (perf_counter), not NPU times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from keras_bench import cnn, step_ms, transformer  # the bench folder is on the path now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer blocks (a smoke run)")
    args = parser.parse_args()
    blocks, epochs = (2, 1) if args.quick else (5, 2)
    folder = tempfile.mkdtemp(prefix="npu_observe_bench_")
    base = {"precision_mode": "must_keep_origin_dtype"}
    sides = {
        "emulated": base,
        "allow_mix_precision": {"precision_mode": "allow_mix_precision"},  # rounding + the always-on flags
        "dump_debug": dict(base, enable_dump_debug=True, dump_path=folder),
        "dump (no step)": dict(base, enable_dump=True, dump_path=folder, dump_step="100000"),
        "mix + drift": {"precision_mode": "allow_mix_precision"},
    }
    with_reference = {"mix + drift"}
    print(
        f"load average before: {os.getloadavg()[0]:.2f} (wall-clock times of the emulation measured on this CPU, not NPU times)"
    )
    for label, build in (("CNN", cnn), ("Transformer", transformer)):
        plain: list[float] = []
        timed: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(blocks):  # interleaved so machine load hits every side alike
            plain += step_ms(build, None, 1, epochs)
            for name, config in sides.items():
                timed[name] += step_ms(build, config, 1, epochs, reference=name in with_reference)
        reference = statistics.median(plain)
        ratios = " | ".join(f"{name} {statistics.median(t) / reference:5.2f}x" for name, t in timed.items())
        print(f"{label:12} plain {reference:7.2f} ms/step | {ratios}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
