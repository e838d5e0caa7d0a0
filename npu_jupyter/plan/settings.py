"""The session options the planner reads, with the adapter's C++ defaults filled in.

The planner is called with an ``NpuConfig`` (unset options are ``None`` there), with ``None`` (a raw
sess.run config that only enables the NpuOptimizer), or with a plain mapping of parameter_map keys.
Reading every option once into a frozen :class:`PlanSettings` keeps the rule modules free of
``None`` checks and makes the defaults they assume visible in one place (ADAPTER-FACTS §1.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_SOC = "Ascend910"


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


def _read(config: Any, key: str) -> Any:
    """An explicitly set option, or None; never the display default (the C++ default applies)."""
    if config is None:
        return None
    if isinstance(config, Mapping):
        return config.get(key)
    value = getattr(config, key, None)
    return None if callable(value) else value


def normalise_soc(soc: str | None) -> str:
    """Map ``soc_config`` spellings (Ascend910B1, Ascend910_9391, ...) to a table name."""
    if not soc:
        return DEFAULT_SOC
    text = str(soc).strip()
    upper = text.upper()
    if upper.startswith("ASCEND910B") or upper.startswith("ASCEND910_93"):
        return "Ascend910B"
    if upper.startswith("ASCEND910"):
        return "Ascend910"
    return text


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
    for key in ("mix_compile_mode", "in_out_pair_flag", "use_off_line", "enable_data_pre_proc"):
        if key in values:
            values[key] = bool(values[key])
    for key in ("iterations_per_loop", "graph_run_mode"):
        if key in values:
            values[key] = int(values[key])
    for key in ("precision_mode", "precision_mode_v2", "modify_mixlist", "customize_dtypes",
                "op_select_implmode", "optypelist_for_implmode", "op_precision_mode", "in_out_pair"):
        if key in values and values[key] == "":
            values[key] = None if key != "in_out_pair" else ""
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
