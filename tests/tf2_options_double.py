"""A stand-in for the TF2 adapter's ``npu_device`` options, built from facts read in its source.

``tf_adapter_2.x/python/npu_device/configs/`` (hicann/tensorflow): every option is an ``OptionValue``
with a default and an optional list of allowed values; setting a value outside the list raises
(``TypeError`` when the type differs from the default's, else ``ValueError``), an unknown attribute
raises ``ValueError``, and ``.value`` gives the text passed on (``True``/``False`` as "1"/"0").
The tree below lists the options, defaults and lists as the adapter declares them — written out here
independently of our catalogue, so a test comparing the two can fail.
"""

from __future__ import annotations

import types
from typing import Any


class OptionValue:
    def __init__(self, default: Any, optional: Any) -> None:
        self.default, self.optional, self._value = default, optional, default

    @property
    def value(self) -> Any:
        if self._value is None:
            return None
        if self._value is True:
            return "1"
        if self._value is False:
            return "0"
        return str(self._value)

    def set(self, v: Any) -> None:
        if isinstance(self.optional, (list, tuple)) and v not in self.optional:
            if self.default is not None and not isinstance(v, type(self.default)):
                raise TypeError(f"Expected {type(self.default).__name__}, got {type(v).__name__}")
            raise ValueError(f"'{v}' not in optional list {self.optional}")
        self._value = v


class Config:
    def __init__(self, **options: Any) -> None:
        object.__setattr__(self, "_options", options)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._options[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._options:
            raise ValueError(f"{type(self).__name__} has no option {name}, all options {list(self._options)}")
        option = self._options[name]
        if isinstance(option, OptionValue):
            option.set(value)
        else:
            object.__setattr__(self, name, value)


# the adapter writes this default across three source lines inside one string literal, spaces included
PROFILING_DEFAULT = (
    '{"output":".\\/","training_trace":"on","task_time":"on",'
    + " " * 45
    + '"hccl":"on","aicpu":"on","aic_metrics":"PipeUtilization",'
    + " " * 45
    + '"msproftx":"off"}'
)


def O(default: Any, optional: Any = None) -> OptionValue:  # noqa: N802 - reads like the adapter's table
    return OptionValue(default, optional)


def _tree() -> Config:
    b = [True, False]
    return Config(
        graph_run_mode=O(1, [0, 1]),
        graph_memory_max_size=O(None),
        variable_memory_max_size=O(None),
        variable_format_optimize=O(None, b),
        enable_scope_fusion_passes=O(None),
        fusion_switch_file=O(None),
        precision_mode=O(
            None,
            [
                "force_fp32",
                "allow_fp32_to_fp16",
                "force_fp16",
                "must_keep_origin_dtype",
                "allow_mix_precision",
                "cube_fp16in_fp32out",
                "allow_mix_precision_fp16",
                "allow_mix_precision_bf16",
                "allow_fp32_to_bf16",
            ],
        ),
        op_select_implmode=O(None, ["high_performance", "high_precision"]),
        optypelist_for_implmode=O(None),
        op_compiler_cache_mode=O("enable", ["enable", "disable", "force"]),
        op_compiler_cache_dir=O(None),
        stream_max_parallel_num=O(None),
        ac_parallel_enable=O(None, ["0", "1"]),
        quant_dumpable=O(None, ["0", "1"]),
        hcom_parallel=O(True, b),
        hcom_multi_mode=O(None),
        is_tailing_optimization=O(False, b),
        op_debug_level=O(None, [0, 1, 2, 3, 4]),
        op_debug_config=O(None),
        debug_dir=O(None),
        modify_mixlist=O(None),
        enable_exception_dump=O(2, [0, 1, 2]),
        enable_small_channel=O(False, b),
        deterministic=O(0, [0, 1]),
        op_precision_mode=O(None),
        graph_exec_timeout=O(None),
        topo_sorting_mode=O(None, [0, 1, None]),
        customize_dtypes=O(None),
        overflow_flag=O(1, [0, 1]),
        stream_sync_timeout=O(-1),
        event_sync_timeout=O(-1),
        execute_times=O(-1),
        external_weight=O(False, b),
        jit_compile=O("auto", ["true", "false", "auto"]),
        graph_compiler_cache_dir=O(None),
        input_fusion_size=O(131072),
        compile_dynamic_mode=O(False, b),
        precision_mode_v2=O(
            None,
            ["fp16", "origin", "cube_fp16in_fp32out", "mixed_float16", "mixed_bfloat16", "cube_hif8", "mixed_hif8"],
        ),
        export_compile_stat=O(1, [0, 1, 2]),
        aicore_num=O(None),
        oo_constant_folding=O(True, b),
        input_batch_cpy=O(False, b),
        shape_generalization_mode=O("STRICT", ["STRICT", "FULL", "ADAPTIVE"]),
        all_tensor_not_empty=O(False, b),
        auto_multistream_parallel_mode=O(None),
        oo_level=O("O3", ["O0", "O1", "O2", "O3"]),
        optimization_switch=O(None),
        dump_config=Config(
            enable_dump=O(False, b),
            dump_path=O(None),
            dump_step=O(None),
            dump_mode=O("output", ["input", "output", "all"]),
            enable_dump_debug=O(False, b),
            dump_debug_mode=O("all", ["aicore_overflow", "atomic_overflow", "all"]),
            dump_data=O("tensor", ["tensor", "stats"]),
            dump_layer=O(None),
        ),
        aoe_config=Config(aoe_mode=O(None, ["1", "2", "4"]), work_path=O("./"), aoe_config_file=O(None)),
        profiling_config=Config(enable_profiling=O(False, b), profiling_options=O(PROFILING_DEFAULT)),
        memory_config=Config(
            atomic_clean_policy=O(0, [0, 1]),
            static_memory_policy=O(0, [0, 1, 2, 3, 4]),
            variable_use_1g_huge_page=O(0, [0, 1, 2]),
        ),
        experimental=Config(
            multi_branches_config=Config(input_shape=O(None), dynamic_node_type=O(None, ["0"]), dynamic_dims=O(None)),
            logical_device_deploy_config=Config(
                logical_device_cluster_deploy_mode=O("LB", ["LB", "SINGLE"]), logical_device_id=O(None)
            ),
            model_deploy_config=Config(model_deploy_mode=O(None), model_deploy_devicelist=O(None)),
            graph_memory_optimize_config=Config(recompute=O(None, ["auto", "manual"]), graph_slice=O(None, ["auto"])),
            resource_config_path=O(None),
            graph_parallel_option_path=O(None),
            enable_graph_parallel=O(False, b),
        ),
    )


def make_module() -> types.ModuleType:
    """A fresh ``npu_device`` module: ``global_options()``, ``open().as_default()`` recording the options."""
    module = types.ModuleType("npu_device")
    options = _tree()
    module.opened = []  # type: ignore[attr-defined]

    class _Device:
        def as_default(self) -> _Device:
            return self

    def global_options() -> Config:
        return options

    def open_device(device_id: Any = None) -> _Device:
        module.opened.append(options)  # type: ignore[attr-defined]
        return _Device()

    module.global_options = global_options  # type: ignore[attr-defined]
    module.open = open_device  # type: ignore[attr-defined]
    return module
