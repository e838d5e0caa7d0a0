"""The session options the emulator acts on at run time, read once per config snapshot.

Dump, overflow detection, profiling and the ExperimentalConfig emulations each read a few options; collecting them into
one frozen object (with the adapter's defaults from the option catalogue, tests/data/reference/ADAPTER-FACTS.md §1.2)
keeps the run loop free of ``None`` checks and validates paths once, before the first step runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from npu_jupyter._options.catalogue import default_of
from npu_jupyter._runtime.observe import dump as _dump
from npu_jupyter._runtime.observe import profile as _profile

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.snapshot import ConfigSnapshot


@dataclass(frozen=True)
class RunSettings:
    """What the emulator does around each step, beyond running it (defaults: the catalogue's)."""

    enable_dump: bool = cast("bool", default_of("enable_dump"))
    enable_dump_debug: bool = cast("bool", default_of("enable_dump_debug"))
    dump_path: str | None = None
    dump_steps: tuple[tuple[int, int], ...] | None = None
    dump_mode: str = cast("str", default_of("dump_mode"))
    dump_debug_mode: str = cast("str", default_of("dump_debug_mode"))
    dump_layer: frozenset[str] = frozenset()
    dump_data: str = cast("str", default_of("dump_data"))
    profiling: bool = cast("bool", default_of("profiling_mode"))
    profiling_options: tuple[tuple[str, object], ...] = ()
    accelerate: tuple[str, str, float] | None = None
    plan_cache_dir: str | None = None

    @property
    def observes(self) -> bool:
        """Whether any step may need more than the user's fetches."""
        return self.enable_dump or self.enable_dump_debug or self.profiling

    def profile_options(self) -> dict[str, object]:
        """A copy of the profiling options (a mutable dict for the profiler)."""
        return dict(self.profiling_options)


def read_run_settings(config: ConfigSnapshot) -> RunSettings:
    """Read and check the run-time options; bad dump paths and profiling folders fail here, before anything runs."""
    base = RunSettings()
    enable_dump = bool(config.option("enable_dump", base.enable_dump))
    enable_debug = bool(config.option("enable_dump_debug", base.enable_dump_debug))
    dump_path = None
    if enable_dump or enable_debug:
        dump_path = _dump.check_dump_path(cast("str | None", config.option("dump_path")))
    steps = _dump.parse_dump_step(cast("str | None", config.option("dump_step"))) if enable_dump else None
    dump_mode = str(config.option("dump_mode", base.dump_mode))
    if enable_dump and dump_mode not in _dump.DUMP_MODES:
        raise _dump.config_error(f"dump mode should be one of the list:[input, output, all] (got {dump_mode!r})")
    debug_mode = str(config.option("dump_debug_mode", base.dump_debug_mode))
    if enable_debug and debug_mode not in _dump.DEBUG_MODES:
        raise _dump.config_error(
            f"dump debug mode should be one of the list:[aicore_overflow, atomic_overflow, all] (got {debug_mode!r})"
        )
    profiling = bool(config.option("profiling_mode", base.profiling))
    prof_opts = (
        _profile.parse_profiling_options(cast("str | None", config.option("profiling_options"))) if profiling else {}
    )
    if profiling:
        _profile.check_output_dir(prof_opts.get("output"))  # created if missing; unusable -> error now
    cache_dir = config.option("graph_compiler_cache_dir") or None
    if cache_dir and not os.path.isdir(str(cache_dir)):
        raise _dump.config_error(
            f"graph_compiler_cache_dir {cache_dir!r} is not an existing directory; create it first"
        )
    return RunSettings(
        enable_dump=enable_dump,
        enable_dump_debug=enable_debug,
        dump_path=dump_path,
        dump_steps=tuple(steps) if steps is not None else None,
        dump_mode=dump_mode,
        dump_debug_mode=debug_mode,
        dump_layer=frozenset(str(config.option("dump_layer", "")).split()),
        dump_data=str(config.option("dump_data", base.dump_data)),
        profiling=profiling,
        profiling_options=tuple(sorted(prof_opts.items())),
        accelerate=_parse_accelerate(config.option("experimental_accelerate_train_mode")),
        plan_cache_dir=None if cache_dir is None else str(cache_dir),
    )


def _parse_accelerate(text: object) -> tuple[str, str, float] | None:
    """'fast|step|0.9' -> ("fast", "step", 0.9); the options package validated the grammar."""
    if not text:
        return None
    kind, trigger, ratio = str(text).split("|")
    return kind, trigger, float(ratio)


def reduced_phase(accelerate: tuple[str, str, float] | None, step: int) -> bool:
    """Whether ``accelerate_train_mode`` puts this step in its reduced-precision phase.

    The adapter learns progress from env vars its ``TellMeStepOrLossHook`` sets: with ``step``, the
    first ``ratio`` × ``TOTAL_STEP`` steps (``STEP_NOW`` when set, else the session's own step count)
    run in reduced precision; with ``loss``, steps run reduced while ``LOSS_NOW`` > ratio ×
    ``TARGET_LOSS``. Without those variables there is no progress to go by: original precision.
    """
    if accelerate is None:
        return False
    _, trigger, ratio = accelerate
    try:
        if trigger == "step":
            total = float(os.environ["TOTAL_STEP"])
            now = float(os.environ.get("STEP_NOW", step))
            return now < ratio * total
        loss, target = float(os.environ["LOSS_NOW"]), float(os.environ["TARGET_LOSS"])
        return loss > ratio * target
    except (KeyError, ValueError):
        return False
