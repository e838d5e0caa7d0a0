"""The session options the planner reads, with the adapter's C++ defaults filled in.

``plan()`` takes an ``NpuConfig``, a ``ConfigSnapshot``, ``None`` (a raw sess.run config that only
enables the NpuOptimizer) or a plain mapping of parameter_map keys, and turns it into one
``ConfigSnapshot`` here (:func:`checked_config`). Reading every option once into a frozen
:class:`PlanSettings` keeps the rule modules free of ``None`` checks; the defaults come from the
option catalogue (tests/data/reference/ADAPTER-FACTS.md §1.2).

Validation (:func:`checked_config`) follows the options package so a plan never silently accepts
what the adapter refuses:

* a bad value or an unknown key (``{"precision_mode": "force_fp17"}``) raises the same
  :class:`~npu_jupyter._options.errors.NpuConfigError` as building the ``NpuConfig`` would (allowed
  values, close-match suggestions) -- there is nothing sensible to plan;
* a config whose options are each valid but break a cross-option rule (``NpuConfig.validate()``)
  is planned anyway and every broken rule becomes a ``plan.errors`` entry: the adapter only refuses
  such a config at the first ``sess.run`` (ST error), so a report that shows the problem next to
  the decisions is more useful than no report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from npu_jupyter._options.catalogue import default_of

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._options.snapshot import ConfigSnapshot

DEFAULT_SOC = "Ascend910"
CONFIG_ERROR_SUFFIX = " (the adapter refuses this config at the first sess.run; NpuConfig.validate() raises it)"


@dataclass(frozen=True)
class PlanSettings:
    """Options that change placement, partition or precision (C++ defaults of a raw config).

    The defaults are the catalogue's (what the adapter uses when a key is absent); the string options
    whose catalogue default is "" or unset read as ``None`` here, so the rules test one thing.
    """

    mix_compile_mode: bool = cast("bool", default_of("mix_compile_mode"))
    iterations_per_loop: int = cast("int", default_of("iterations_per_loop"))
    variable_placement: str = cast("str", default_of("variable_placement"))
    in_out_pair: str = ""
    in_out_pair_flag: bool = cast("bool", default_of("in_out_pair_flag"))
    use_off_line: bool = cast("bool", default_of("use_off_line"))
    enable_data_pre_proc: bool = cast("bool", default_of("enable_data_pre_proc"))
    dynamic_input: bool = cast("bool", default_of("dynamic_input"))
    dynamic_graph_execute_mode: str = cast("str", default_of("dynamic_graph_execute_mode"))
    input_shape: str = ""
    dynamic_dims: str = ""
    job: str = cast("str", default_of("job"))
    precision_mode: str | None = None
    precision_mode_v2: str | None = None
    graph_run_mode: int = cast("int", default_of("graph_run_mode"))
    modify_mixlist: str | None = None
    customize_dtypes: str | None = None
    op_select_implmode: str | None = None
    optypelist_for_implmode: str | None = None
    op_precision_mode: str | None = None
    soc: str = DEFAULT_SOC

    @property
    def lazy_recompile(self) -> bool:
        """dynamic_input with lazy_recompile: the partition pass merges GeOps as in mixed computing
        and keeps a GetNext's out-edges uncontracted (``is_set_lazy_recompile`` in
        ``om_partition_subgraphs_pass.cc``). dynamic_execute changes nothing there.
        """
        return self.dynamic_input and self.dynamic_graph_execute_mode == "lazy_recompile"


def normalise_soc(soc: str | None) -> str:
    """The op table's display name ("Ascend910", "Ascend910B") for a ``soc_config`` spelling.

    The ops package owns the accepted spellings (:func:`npu_jupyter._ops.library.resolve_soc`); an
    unknown one raises its ValueError naming the supported spellings.
    """
    if not soc:
        return DEFAULT_SOC
    from npu_jupyter._ops.library import SUPPORTED_SOCS, resolve_soc

    return SUPPORTED_SOCS[resolve_soc(str(soc))][0]


def checked_config(config: ConfigSource) -> tuple[ConfigSnapshot, list[str]]:
    """The snapshot ``plan()`` runs with, and its broken cross-option rules.

    Mappings are checked value by value, so bad values and unknown keys raise NpuConfigError as
    building an ``NpuConfig`` would. Broken rules are returned, not raised (see the module doc); a
    snapshot computes them once, so a session planning many runs does not repeat the check. The
    modify_mixlist rule is left out: the precision stage reports it in the adapter's own words and
    would otherwise say it twice.
    """
    from npu_jupyter._options import rules
    from npu_jupyter._options.config import as_snapshot

    snapshot = as_snapshot(config)
    problems = snapshot.problems()
    if not problems:
        return snapshot, []
    reported_later = set(rules.mixlist_needs_mixed_mode(rules.View(snapshot.values)))
    return snapshot, [p + CONFIG_ERROR_SUFFIX for p in problems if p not in reported_later]


_BOOLS = ("mix_compile_mode", "in_out_pair_flag", "use_off_line", "enable_data_pre_proc", "dynamic_input")
_INTS = ("iterations_per_loop", "graph_run_mode")
_EMPTY_IS_UNSET = (
    "precision_mode",
    "precision_mode_v2",
    "modify_mixlist",
    "customize_dtypes",
    "op_select_implmode",
    "optypelist_for_implmode",
    "op_precision_mode",
)


def read_settings(config: ConfigSnapshot, soc: str | None = None) -> PlanSettings:
    """Collect the planner's options from ``config``; ``soc`` wins over ``soc_config``."""
    values: dict[str, object] = {}
    for key in PlanSettings.__dataclass_fields__:
        if key == "soc":
            continue
        value = config.option(key)
        if value is None:
            continue
        if key in _BOOLS:
            value = bool(value)
        elif key in _INTS:
            value = int(cast("int", value))
        elif key in _EMPTY_IS_UNSET and value == "":
            continue
        values[key] = value
    values["soc"] = normalise_soc(soc or cast("str | None", config.option("soc_config")))
    return PlanSettings(**values)  # type: ignore[arg-type]  # typed per field by the catalogue


def config_changes(config: ConfigSnapshot) -> dict[str, object]:
    """The set options of the snapshot a plan was made with (a new dict)."""
    return config.changed()
