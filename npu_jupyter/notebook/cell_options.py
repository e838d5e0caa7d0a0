"""``%%npu`` flags -> per-cell option overrides, and the precedence of config layers.

A cell runs with three layers, highest first: the cell's flags, the ``NpuOptimizer`` entries of a
``ConfigProto`` the cell's own code passes to ``tf.compat.v1.Session``, and the session-wide config.
Overrides are a plain mapping where ``None`` means "unset here", so that choosing ``--precision
force_fp16`` also clears a ``precision_mode_v2`` from a lower layer (the adapter refuses both at once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from npu_jupyter.notebook.arguments import parse_assignments, split

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter.options.config import ConfigSource, NpuConfig
    from npu_jupyter.options.snapshot import ConfigSnapshot

# Options the adapter refuses together: setting one in a higher layer clears the other from lower ones.
_EXCLUSIVE = (("precision_mode", "precision_mode_v2"),)


# The %%npu flags, declared once: the parser, the usage line, the help (manual.py) and the
# misspelt-flag hints are all built from this table.
CELL_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--mix", {"action": "store_true", "help": "mixed computing on for this cell (mix_compile_mode=True)"}),
    ("--no-mix", {"action": "store_true", "help": "mixed computing off for this cell (mix_compile_mode=False)"}),
    (
        "--precision",
        {
            "metavar": "MODE",
            "help": "precision_mode (or a precision_mode_v2 value such as mixed_float16) for this cell",
        },
    ),
    ("--dump", {"metavar": "DIR", "help": "enable_dump=True, dump_path=DIR (the folder is created when missing)"}),
    ("--dump-step", {"metavar": "STEPS", "help": "dump_step, e.g. '0|5|10' or '0|3-5|10'"}),
    ("--dump-mode", {"metavar": "MODE", "help": "dump_mode: input, output or all"}),
    (
        "--profile",
        {
            "metavar": "DIR",
            "nargs": "?",
            "const": "",
            "help": "profiling_mode=True; profiling_options output=DIR when given",
        },
    ),
    (
        "--set",
        {
            "metavar": "KEY=VALUE",
            "nargs": "+",
            "action": "append",
            "default": [],
            "help": "any other option, typed by the option catalogue (repeatable)",
        },
    ),
    (
        "--reference",
        {
            "action": "store_true",
            "help": "measure drift: compare every op with a float32 reference (sessions and traced functions)",
        },
    ),
    ("--quiet", {"action": "store_true", "help": "do not render the run reports after the cell"}),
    (
        "--verbose",
        {
            "action": "store_true",
            "help": "let TensorFlow's own C++ log lines (profiler, oneDNN, CUDA probes) into the cell's output",
        },
    ),
)


def _parser(flags: tuple[tuple[str, dict[str, Any]], ...]) -> MagicArgumentParser:
    """An IPython magic parser (errors are UsageErrors) with ``flags``."""
    parser = MagicArgumentParser(prog="%%npu", add_help=False)
    for name, options in flags:
        parser.add_argument(name, **options)
    return parser


CELL_PARSER = _parser(CELL_FLAGS)


def flag_usage(name: str) -> str:
    """``--profile [DIR]``: how one flag is written, as argparse's usage line writes it."""
    [flag] = [f for f in CELL_FLAGS if f[0] == name]
    usage = " ".join(_parser((flag,)).format_usage().split())
    return usage[usage.index(name) : -1]  # without the brackets that mark it optional


@dataclass
class CellFlags:
    """What a ``%%npu`` line asks for: option overrides plus the display switches."""

    overrides: dict[str, Any]
    quiet: bool = False
    verbose: bool = False
    reference: bool = False  # --reference: drift against float32 for the cell's sessions and functions


def parse_cell_line(line: str, base: NpuConfig | ConfigSnapshot) -> tuple[dict[str, Any], bool]:
    """Flags of a ``%%npu`` line -> (overrides, quiet); see :func:`parse_cell_flags`."""
    flags = parse_cell_flags(line, base)
    return flags.overrides, flags.quiet


def parse_cell_flags(line: str, base: NpuConfig | ConfigSnapshot) -> CellFlags:
    """Flags of a ``%%npu`` line -> :class:`CellFlags`. Raises UsageError on anything bad.

    ``base`` is the session config snapshot; it is only read (for ``--profile`` to keep existing
    profiling switches).
    """
    usage = "Usage: " + CELL_USAGE
    argv = split(line, usage)  # POSIX quoting: '0|5' and "a b" lose their quotes, as in a shell
    _reject_unknown_flags(argv, line, usage)
    try:
        args = CELL_PARSER.parse_args(argv)
    except UsageError as err:
        raise UsageError(f"%%npu {line.strip()}: {err}{_flag_hint(line)}; nothing was run.\n{usage}") from None
    if args.mix and args.no_mix:
        raise UsageError(f"--mix and --no-mix contradict each other; nothing was run.\n{usage}")
    overrides: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def put(key: str, value: Any, flag: str) -> None:
        if key in overrides and overrides[key] != value:
            raise UsageError(f"{key} is given twice ({sources[key]} and {flag}); nothing was run.\n{usage}")
        overrides[key] = value
        sources[key] = flag

    if args.mix or args.no_mix:
        put("mix_compile_mode", bool(args.mix), "--mix" if args.mix else "--no-mix")
    if args.precision is not None:
        key = _precision_key(args.precision, usage)
        put(key, args.precision, "--precision")
    if args.dump is not None:
        put("enable_dump", True, "--dump")
        put("dump_path", args.dump, "--dump")
    if args.dump_step is not None:
        put("dump_step", args.dump_step, "--dump-step")
    if args.dump_mode is not None:
        put("dump_mode", args.dump_mode, "--dump-mode")
    if args.profile is not None:
        put("profiling_mode", True, "--profile")
        if args.profile:
            put("profiling_options", _profiling_options(base, args.profile, usage), "--profile")
    tokens = [token for group in args.set for token in group]
    for key, value in parse_assignments(tokens, usage, "nothing was run").items():
        put(key, value, "--set")
    return CellFlags(with_exclusions(overrides), bool(args.quiet), bool(args.verbose), bool(args.reference))


def _flag_names() -> list[str]:
    """Every ``--flag`` (the help and the hints are both generated from the one table)."""
    return [name for name, _ in CELL_FLAGS]


def cell_usage() -> str:
    """``%%npu [--mix] [--no-mix] ...``: the usage line argparse writes from the flags."""
    usage = " ".join(CELL_PARSER.format_usage().split())
    return usage[usage.index("%%npu") :]


CELL_USAGE = cell_usage()


def _known_flag(token: str, flags: list[str]) -> bool:
    """An exact flag, or an abbreviation argparse would accept (a prefix of exactly one flag)."""
    name = token.split("=", maxsplit=1)[0]
    return name in flags or sum(flag.startswith(name) for flag in flags) == 1


def _reject_unknown_flags(argv: list[str], line: str, usage: str) -> None:
    """A misspelt flag is named itself, with its hint, before argparse blames a neighbour.

    argparse reports "argument --dump: expected one argument" for ``--precison force_fp16 --dump`` and
    only afterwards would notice ``--precison``; the unknown flag is the user's real mistake.
    """
    from npu_jupyter.notebook.arguments import suggest

    flags = _flag_names()
    unknown = [t for t in argv if t.startswith("--") and len(t) > 2 and not _known_flag(t, flags)]
    if unknown:
        name = unknown[0].split("=")[0]
        raise UsageError(f"%%npu {line.strip()}: unknown flag {name}{suggest(name, flags)}; nothing was run.\n{usage}")


def _flag_hint(line: str) -> str:
    """`` (did you mean --precision?)`` for a misspelt flag in ``line``."""
    from npu_jupyter.notebook.arguments import suggest

    flags = _flag_names()
    for token in line.split():
        if token.startswith("--") and token.split("=")[0] not in flags:
            return suggest(token.split("=")[0], flags)
    return ""


def with_exclusions(layer: dict[str, Any]) -> dict[str, Any]:
    """``layer`` plus ``None`` (unset) for options exclusive with one it sets."""
    out = dict(layer)
    for group in _EXCLUSIVE:
        chosen = [key for key in group if out.get(key) is not None]
        if len(chosen) == 1:
            for key in group:
                out.setdefault(key, None)
    return out


def apply_layer(config: NpuConfig, layer: dict[str, Any]) -> None:
    """Apply a layer atomically: set the non-None values and unset the None ones, or change nothing."""
    config.update(layer)


def merged(base: ConfigSource, *layers: dict[str, Any]) -> ConfigSnapshot:
    """The snapshot of ``base`` with ``layers`` applied lowest first (``base`` is not touched)."""
    from npu_jupyter.options.config import as_snapshot

    return as_snapshot(base).layered(*layers)


def _precision_key(mode: str, usage: str) -> str:
    """``--precision`` takes either a precision_mode or a precision_mode_v2 value."""
    from npu_jupyter.notebook.arguments import suggest, wrap_values
    from npu_jupyter.options import catalogue

    v1 = [str(c) for c in catalogue.spec("precision_mode").choices or ()]
    v2 = [str(c) for c in catalogue.spec("precision_mode_v2").choices or ()]
    if mode in v1:
        return "precision_mode"
    if mode in v2:
        return "precision_mode_v2"
    raise UsageError(
        f"--precision {mode!r} is not a precision mode{suggest(mode, v1 + v2)}; nothing was run.\n"
        f"precision_mode values:\n{wrap_values(v1)}\nprecision_mode_v2 values:\n{wrap_values(v2)}\n{usage}"
    )


def _profiling_options(base: NpuConfig | ConfigSnapshot, output: str, usage: str) -> str:
    """The session's profiling_options JSON (if any) with ``output`` replaced, task trace on."""
    from npu_jupyter.options.profiling import ProfilingOptionsError, profiling_fields

    current = getattr(base, "profiling_options", None) or ""
    try:
        options = profiling_fields(current)
    except ProfilingOptionsError:
        raise UsageError(
            f"the session's profiling_options is not valid JSON ({current!r}); fix it with "
            f"%npu set profiling_options=... or %npu unset profiling_options.\n{usage}"
        ) from None
    options["output"] = output
    options.setdefault("task_trace", "on")
    return json.dumps(options, sort_keys=True)
