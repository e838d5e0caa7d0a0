"""``%%npu`` flags -> per-cell option overrides, and the precedence of config layers.

A cell runs with three layers, highest first: the cell's flags, the ``NpuOptimizer`` entries of a
``ConfigProto`` the cell's own code passes to ``tf.compat.v1.Session``, and the session-wide config.
Overrides are a plain mapping where ``None`` means "unset here", so that choosing ``--precision
force_fp16`` also clears a ``precision_mode_v2`` from a lower layer (the adapter refuses both at once).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser, argument

from npu_jupyter._notebook.arguments import one_line_usage, parse_assignments, split, suggest

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.config import ConfigSource, NpuConfig
    from npu_jupyter._options.snapshot import ConfigSnapshot

# Options the adapter refuses together: setting one in a higher layer clears the other from lower ones.
_EXCLUSIVE = (("precision_mode", "precision_mode_v2"),)


class CellParser:
    """The ``%%npu`` line's parser, as IPython built it from the cell magic's ``@argument`` decorators.

    Those decorators are the one declaration of the flags: IPython builds the parser and ``%%npu?``
    from them, and the manual's flag rows, the usage line and the misspelt-flag hints are read here.
    """

    def __init__(self, magic: Callable[..., object]) -> None:
        parser = getattr(magic, "parser", None)
        if not isinstance(parser, MagicArgumentParser):
            raise TypeError(f"{magic!r} is not decorated with @magic_arguments")
        self.parser = parser
        # IPython keeps the decorators innermost (lowest) first; the parser adds them top to bottom.
        declared = [d for d in reversed(getattr(magic, "decorators", ())) if isinstance(d, argument)]
        self._declared: dict[str, argument] = {str(d.args[0]): d for d in declared}
        self.usage = one_line_usage(parser)

    def names(self) -> list[str]:
        """Every ``--flag``, in the order the magic declares them."""
        return list(self._declared)

    def flag_help(self, name: str) -> str:
        """The help text the magic gives ``name``."""
        return str(self._declared[name].kwds.get("help", ""))

    def flag_usage(self, name: str) -> str:
        """``--profile [DIR]``: how one flag is written, as argparse's usage line writes it."""
        one = MagicArgumentParser(prog=self.parser.prog)
        self._declared[name].add_to_parser(one, None)
        usage = one_line_usage(one)
        return usage[usage.index(name) : -1]  # without the brackets that mark it optional

    def parse(self, line: str, base: NpuConfig | ConfigSnapshot) -> CellFlags:
        """Flags of a ``%%npu`` line -> :class:`CellFlags`. Raises UsageError on anything bad.

        ``base`` is the session config snapshot; it is only read (for ``--profile`` to keep existing
        profiling switches).
        """
        usage = "Usage: " + self.usage
        argv = split(line, usage)  # POSIX quoting: '0|5' and "a b" lose their quotes, as in a shell
        self._reject_unknown_flags(argv, line, usage)
        try:
            args = self.parser.parse_args(argv)
        except UsageError as err:
            hint = self._flag_hint(line)
            raise UsageError(f"%%npu {line.strip()}: {err}{hint}; nothing was run.\n{usage}") from None
        if args.mix and args.no_mix:
            raise UsageError(f"--mix and --no-mix contradict each other; nothing was run.\n{usage}")
        overrides = _Overrides(usage)
        if args.mix or args.no_mix:
            overrides.put("mix_compile_mode", bool(args.mix), "--mix" if args.mix else "--no-mix")
        if args.precision is not None:
            overrides.put(_precision_key(args.precision, usage), args.precision, "--precision")
        if args.dump is not None:
            overrides.put("enable_dump", True, "--dump")
            overrides.put("dump_path", args.dump, "--dump")
        if args.dump_step is not None:
            overrides.put("dump_step", args.dump_step, "--dump-step")
        if args.dump_mode is not None:
            overrides.put("dump_mode", args.dump_mode, "--dump-mode")
        if args.profile is not None:
            overrides.put("profiling_mode", True, "--profile")
            if args.profile:
                overrides.put("profiling_options", _profiling_options(base, args.profile, usage), "--profile")
        tokens = [token for group in args.set for token in group]
        for key, value in parse_assignments(tokens, usage, "nothing was run").items():
            overrides.put(key, value, "--set")
        return CellFlags(with_exclusions(overrides.values), bool(args.quiet), bool(args.verbose), bool(args.reference))

    def _reject_unknown_flags(self, argv: list[str], line: str, usage: str) -> None:
        """A misspelt flag is named itself, with its hint, before argparse blames a neighbour.

        argparse reports "argument --dump: expected one argument" for ``--precison force_fp16 --dump`` and
        only afterwards would notice ``--precison``; the unknown flag is the user's real mistake.
        """
        flags = self.names()
        unknown = [t for t in argv if t.startswith("--") and len(t) > 2 and not _known_flag(t, flags)]
        if unknown:
            name = unknown[0].split("=")[0]
            raise UsageError(
                f"%%npu {line.strip()}: unknown flag {name}{suggest(name, flags)}; nothing was run.\n{usage}"
            )

    def _flag_hint(self, line: str) -> str:
        """`` (did you mean --precision?)`` for a misspelt flag in ``line``."""
        flags = self.names()
        for token in line.split():
            if token.startswith("--") and token.split("=")[0] not in flags:
                return suggest(token.split("=")[0], flags)
        return ""


@dataclass
class CellFlags:
    """What a ``%%npu`` line asks for: option overrides plus the display switches."""

    overrides: dict[str, object]
    quiet: bool = False
    verbose: bool = False
    reference: bool = False  # --reference: drift against float32 for the cell's sessions and functions


class _Overrides:
    """The options a line's flags set, each set once: a second, different value is a UsageError."""

    def __init__(self, usage: str) -> None:
        self.usage = usage
        self.values: dict[str, object] = {}
        self.sources: dict[str, str] = {}

    def put(self, key: str, value: object, flag: str) -> None:
        if key in self.values and self.values[key] != value:
            raise UsageError(f"{key} is given twice ({self.sources[key]} and {flag}); nothing was run.\n{self.usage}")
        self.values[key] = value
        self.sources[key] = flag


def _known_flag(token: str, flags: list[str]) -> bool:
    """An exact flag, or an abbreviation argparse would accept (a prefix of exactly one flag)."""
    name = token.split("=", maxsplit=1)[0]
    return name in flags or sum(flag.startswith(name) for flag in flags) == 1


def with_exclusions(layer: Mapping[str, object]) -> dict[str, object]:
    """``layer`` plus ``None`` (unset) for options exclusive with one it sets."""
    out = dict(layer)
    for group in _EXCLUSIVE:
        chosen = [key for key in group if out.get(key) is not None]
        if len(chosen) == 1:
            for key in group:
                out.setdefault(key, None)
    return out


def merged(base: ConfigSource, *layers: Mapping[str, object]) -> ConfigSnapshot:
    """The snapshot of ``base`` with ``layers`` applied lowest first (``base`` is not touched)."""
    from npu_jupyter._options.config import as_snapshot

    return as_snapshot(base).layered(*layers)


def _precision_key(mode: str, usage: str) -> str:
    """``--precision`` takes either a precision_mode or a precision_mode_v2 value."""
    from npu_jupyter._notebook.arguments import wrap_values
    from npu_jupyter._options import catalogue

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
    from npu_jupyter._options.profiling import ProfilingOptionsError, profiling_fields

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
