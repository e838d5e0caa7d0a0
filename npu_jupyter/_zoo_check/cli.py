"""``python -m npu_jupyter zoo ENTRY ... --modes a,b,c``: the zoo check from a shell.

The table goes to stdout, one line per finished task to stderr; ``--results`` makes the run resumable,
``--json`` / ``--csv`` write the rows, ``--engine ray [--address HOST:PORT]`` runs the tasks on Ray.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from npu_jupyter._zoo_check.check import DEFAULT_MODES, DEFAULT_TIMEOUT_S


def parser() -> argparse.ArgumentParser:
    """The ``zoo`` command's arguments."""
    p = argparse.ArgumentParser(
        prog="python -m npu_jupyter zoo",
        description=(
            "Run training entries (fn(npu, steps) -> loss) under precision modes and option sets, one "
            "process per task, and print one table: compiles, placement, ops lowered, first non-finite "
            "op, drift vs float32, estimated NPU time and memory vs float32, wall-clock time of the emulation on this CPU."
        ),
    )
    p.add_argument("entries", nargs="+", help="file.py[:function] (default function zoo_entry) or module:function")
    p.add_argument(
        "--modes",
        default=",".join(DEFAULT_MODES),
        help="comma-separated precision modes, one task each ('' for none; default: %(default)s)",
    )
    p.add_argument(
        "--set",
        dest="option_sets",
        action="append",
        default=None,
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="an option set crossed with the modes (repeat for several); values as in %%npu set",
    )
    p.add_argument("--steps", type=int, default=3, help="training steps per task (default: %(default)s)")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds per task, then it is killed (default: %(default)s)",
    )
    p.add_argument("--results", help="results file (JSON): finished tasks are not rerun; written after each task")
    p.add_argument("--json", dest="json_path", help="write the rows as JSON here")
    p.add_argument("--csv", dest="csv_path", help="write the rows as CSV here")
    p.add_argument("--engine", choices=("local", "ray"), default="local", help="where tasks run (default: local)")
    p.add_argument("--address", help="Ray cluster address (implies --engine ray)")
    p.add_argument("--workers", type=int, help="local engine: tasks at a time (default: one per CPU core)")
    p.add_argument("--no-reference", action="store_true", help="skip the float32 reference (no drift columns)")
    p.add_argument("--rerun-errors", action="store_true", help="rerun tasks whose stored row is an error or timeout")
    p.add_argument("--quiet", action="store_true", help="no per-task lines on stderr")
    return p


def parse_option_set(text: str) -> dict[str, Any]:
    """``precision_mode=force_fp16,op_select_implmode=high_precision`` -> typed options (NpuConfigError if bad)."""
    from npu_jupyter._options.config import NpuConfig

    config = NpuConfig()
    keys = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {text!r}: {item!r} is not KEY=VALUE")
        config.set_text(key.strip(), value.strip())
        keys.append(key.strip())
    changed = config.changed()
    return {key: changed.get(key) for key in keys}


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 when every task has a row (whatever its status), 2 on bad arguments."""
    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._zoo_check.check import zoo
    from npu_jupyter._zoo_check.entry import EntryError

    args = parser().parse_args(argv)
    try:
        option_sets = [parse_option_set(t) for t in args.option_sets] if args.option_sets else None
        table = zoo(
            args.entries,
            [m.strip() for m in args.modes.split(",") if m.strip()],
            option_sets,
            steps=args.steps,
            timeout=args.timeout,
            results=args.results,
            engine="ray" if args.address else args.engine,
            workers=args.workers,
            address=args.address,
            reference=not args.no_reference,
            rerun_errors=args.rerun_errors,
            progress=False,
            log=None if args.quiet else _log,
        )
    except (EntryError, NpuConfigError, ValueError, ImportError) as exc:
        print(f"python -m npu_jupyter zoo: {exc}", file=sys.stderr)  # noqa: T201 - the command's error
        return 2
    if args.json_path:
        table.to_json(args.json_path)
    if args.csv_path:
        table.to_csv(args.csv_path)
    print(repr(table))  # noqa: T201 - the command's output
    return 0


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # noqa: T201 - one line per finished task
