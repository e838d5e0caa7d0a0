"""The session options the planner reads, with the adapter's C++ defaults filled in.

The planner is called with an ``NpuConfig`` (unset options are ``None`` there), with ``None`` (a raw
sess.run config that only enables the NpuOptimizer), or with a plain mapping of parameter_map keys.
Reading every option once into a frozen :class:`PlanSettings` keeps the rule modules free of
``None`` checks and makes the defaults they assume visible in one place (ADAPTER-FACTS §1.2).

Validation (:func:`checked_config`) follows the options package so a plan never silently accepts
what the adapter refuses:

* a bad value or an unknown key (``{"precision_mode": "force_fp17"}``) raises the same
  :class:`~npu_jupyter.options.errors.NpuConfigError` as building the ``NpuConfig`` would (allowed
  values, close-match suggestions) -- there is nothing sensible to plan;
* a config whose options are each valid but break a cross-option rule (``NpuConfig.validate()``)
  is planned anyway and every broken rule becomes a ``plan.errors`` entry: the adapter only refuses
  such a config at the first ``sess.run`` (ST error), so a report that shows the problem next to
  the decisions is more useful than no report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_SOC = "Ascend910"
CONFIG_ERROR_SUFFIX = " (the adapter refuses this config at the first sess.run; NpuConfig.validate() raises it)"


@dataclass(frozen=True)
class PlanSettings:
    """Options that change placement, partition or precision (C++ defaults of a raw config)."""

    mix_compile_mode: bool = False
    iterations_per_loop: int = 1
    variable_placement: str = "Device"
    in_out_pair: str = ""
    in_out_pair_flag: bool = True
    use_off_line: bool = True
    enable_data_pre_proc: bool = False
    dynamic_input: bool = False
    dynamic_graph_execute_mode: str = "dynamic_execute"
    input_shape: str = ""
    dynamic_dims: str = ""
    job: str = "localhost"
    precision_mode: str | None = None
    precision_mode_v2: str | None = None
    graph_run_mode: int = 1
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


def _read(config: Any, key: str) -> Any:
    """An explicitly set option, or None; never the display default (the C++ default applies)."""
    if config is None:
        return None
    if isinstance(config, Mapping):
        return config.get(key)
    value = getattr(config, key, None)
    return None if callable(value) else value


def normalise_soc(soc: str | None) -> str:
    """The op table's display name ("Ascend910", "Ascend910B") for a ``soc_config`` spelling.

    The ops package owns the accepted spellings (:func:`npu_jupyter.ops.library.resolve_soc`); an
    unknown one raises its ValueError naming the supported spellings.
    """
    if not soc:
        return DEFAULT_SOC
    from npu_jupyter.ops.library import SUPPORTED_SOCS, resolve_soc

    return SUPPORTED_SOCS[resolve_soc(str(soc))][0]


def checked_config(config: Any) -> tuple[Any, list[str]]:
    """``config`` as a validated ``NpuConfig`` (None stays None) and its broken cross-option rules.

    Mappings go through ``NpuConfig`` so bad values and unknown keys raise its NpuConfigError.
    Broken rules are returned, not raised (see the module doc). The modify_mixlist rule is left out:
    the precision stage reports it in the adapter's own words and would otherwise say it twice.
    """
    if config is None:
        return None, []
    from npu_jupyter.options import rules
    from npu_jupyter.options.config import NpuConfig

    if isinstance(config, Mapping):
        config = NpuConfig(dict(config))
    problems = config.problems() if callable(getattr(config, "problems", None)) else []
    if not problems:
        return config, []
    changed = config.changed() if callable(getattr(config, "changed", None)) else {}
    reported_later = set(rules.mixlist_needs_mixed_mode(rules.View(changed)))
    return config, [p + CONFIG_ERROR_SUFFIX for p in problems if p not in reported_later]


def read_settings(config: Any, soc: str | None = None) -> PlanSettings:
    """Collect the planner's options from ``config``; ``soc`` wins over ``soc_config``."""
    base = PlanSettings()
    values: dict[str, Any] = {}
    for key in PlanSettings.__dataclass_fields__:
        if key == "soc":
            continue
        v = _read(config, key)
        if v is not None:
            values[key] = v
    values["soc"] = normalise_soc(soc or _read(config, "soc_config"))
    for key in ("mix_compile_mode", "in_out_pair_flag", "use_off_line", "enable_data_pre_proc", "dynamic_input"):
        if key in values:
            values[key] = bool(values[key])
    for key in ("iterations_per_loop", "graph_run_mode"):
        if key in values:
            values[key] = int(values[key])
    for key in (
        "precision_mode",
        "precision_mode_v2",
        "modify_mixlist",
        "customize_dtypes",
        "op_select_implmode",
        "optypelist_for_implmode",
        "op_precision_mode",
        "in_out_pair",
        "input_shape",
        "dynamic_dims",
    ):
        if key in values and values[key] == "":
            values[key] = None if key not in ("in_out_pair", "input_shape", "dynamic_dims") else ""
    return PlanSettings(**{**base.__dict__, **values})


def config_changes(config: Any) -> dict[str, Any]:
    """``config.changed()`` when available (NpuConfig), else the mapping itself."""
    if config is None:
        return {}
    changed = getattr(config, "changed", None)
    if callable(changed):
        return dict(changed())
    if isinstance(config, Mapping):
        return {k: v for k, v in config.items() if v is not None}
    return {}
