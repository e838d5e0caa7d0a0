"""Each cross-option rule fires on the combination it forbids, names the options, and stays quiet otherwise."""

from __future__ import annotations

import pytest

from npu_jupyter._options import rules
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError

# rule -> (a config breaking it, the options its message must name, the nearest config that satisfies it)
ERROR_CASES = {
    "mix_mode_needs_single_iteration": (
        dict(mix_compile_mode=True, iterations_per_loop=10),
        ["mix_compile_mode", "iterations_per_loop"],
        dict(mix_compile_mode=True, iterations_per_loop=1),
    ),
    "dump_needs_path": (
        dict(enable_dump=True),
        ["enable_dump", "dump_path"],
        dict(enable_dump=True, dump_path="/tmp/d"),
    ),
    "precision_modes_exclusive": (
        dict(precision_mode="force_fp16", precision_mode_v2="fp16"),
        ["precision_mode", "precision_mode_v2"],
        dict(precision_mode_v2="fp16"),
    ),
    "mixlist_needs_mixed_mode": (
        dict(modify_mixlist="ops.json", precision_mode="force_fp16"),
        ["modify_mixlist", "precision_mode"],
        dict(modify_mixlist="ops.json", precision_mode="allow_mix_precision"),
    ),
    "implmode_list_needs_mode": (
        dict(optypelist_for_implmode="Pooling"),
        ["optypelist_for_implmode", "op_select_implmode"],
        dict(optypelist_for_implmode="Pooling", op_select_implmode="high_precision"),
    ),
    "in_out_pair_needs_mix": (
        dict(in_out_pair="[[['a'], ['b']]]"),
        ["in_out_pair", "mix_compile_mode"],
        dict(in_out_pair="[[['a'], ['b']]]", mix_compile_mode=True),
    ),
    "host_variables_need_mix": (
        dict(variable_placement="Host"),
        ["variable_placement", "mix_compile_mode"],
        dict(variable_placement="Host", mix_compile_mode=True),
    ),
    "dynamic_dims_trio": (
        dict(input_shape="data:1,-1", dynamic_dims="1;2"),
        ["input_shape", "dynamic_dims", "dynamic_node_type"],
        dict(input_shape="data:1,-1", dynamic_dims="1;2", dynamic_node_type=1),
    ),
    "gears_match_input_shape": (
        dict(input_shape="data:1,-1,-1", dynamic_dims="1,2;3", dynamic_node_type=1),
        ["dynamic_dims", "input_shape"],
        dict(input_shape="data:1,-1,-1", dynamic_dims="1,2;3,4", dynamic_node_type=1),
    ),
    "hybrid_mode_rules": (
        dict(compile_hybrid_mode=1, input_shape="data:-1", dynamic_dims="1;2", dynamic_node_type=0),
        ["compile_hybrid_mode", "dynamic_node_type"],
        dict(compile_hybrid_mode=1, input_shape="data:-1", dynamic_dims="1;2", dynamic_node_type=1),
    ),
    "dynamic_dims_not_with_mix": (
        dict(input_shape="data:-1", dynamic_dims="1;2", dynamic_node_type=1, mix_compile_mode=True),
        ["input_shape", "mix_compile_mode"],
        dict(input_shape="data:-1", dynamic_dims="1;2", dynamic_node_type=1),
    ),
    "compress_weight_exclusive": (
        dict(enable_compress_weight=False, compress_weight_conf="w.cfg"),
        ["enable_compress_weight", "compress_weight_conf"],
        dict(compress_weight_conf="w.cfg"),
    ),
    "lazy_recompile_single_iteration": (
        dict(
            dynamic_input=True,
            dynamic_graph_execute_mode="lazy_recompile",
            iterations_per_loop=5,
            enable_data_pre_proc=True,
        ),
        ["lazy_recompile", "iterations_per_loop"],
        dict(
            dynamic_input=True,
            dynamic_graph_execute_mode="dynamic_execute",
            iterations_per_loop=5,
            enable_data_pre_proc=True,
        ),
    ),
    "accelerate_needs_plain_precision": (
        dict(experimental_accelerate_train_mode="fast|step|0.9", precision_mode="allow_mix_precision"),
        ["experimental_accelerate_train_mode", "precision_mode"],
        dict(experimental_accelerate_train_mode="fast|step|0.9", precision_mode="must_keep_origin_dtype"),
    ),
}


def test_every_error_rule_has_a_case():
    assert sorted(r.__name__ for r in rules.ERROR_RULES) == sorted(ERROR_CASES)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_error_rule_fires_with_a_message_naming_the_options(name):
    bad, named, good = ERROR_CASES[name]
    rule = getattr(rules, name)
    messages = list(rule(rules.View(bad)))
    assert messages, name
    assert all(option in messages[0] for option in named), messages[0]
    assert list(rule(rules.View(good))) == []
    with pytest.raises(NpuConfigError) as info:
        NpuConfig(bad).validate()
    assert messages[0] in info.value.problems
    NpuConfig(good).validate()


def test_validate_lists_every_problem_in_one_error():
    config = NpuConfig(
        enable_dump=True,
        precision_mode="force_fp16",
        precision_mode_v2="fp16",
        mix_compile_mode=True,
        iterations_per_loop=100,
    )
    with pytest.raises(NpuConfigError) as info:
        config.validate()
    assert len(info.value.problems) == 3
    text = str(info.value)
    assert (
        "3 problems" in text and "dump_path" in text and "precision_mode_v2" in text and "iterations_per_loop" in text
    )


def test_modify_mixlist_without_any_mode_asks_for_a_mixed_mode():
    (message,) = rules.errors({"modify_mixlist": "ops.json"})
    assert "allow_mix_precision" in message and "mixed_float16" in message


def test_modify_mixlist_accepts_a_mixed_v2_mode():
    assert rules.errors({"modify_mixlist": "ops.json", "precision_mode_v2": "mixed_float16"}) == []
    (message,) = rules.errors({"modify_mixlist": "ops.json", "precision_mode_v2": "fp16"})
    assert "precision_mode_v2" in message


def test_dynamic_dims_need_two_gears():
    (message,) = rules.errors({"input_shape": "data:-1", "dynamic_dims": "4", "dynamic_node_type": 0})
    assert "at least 2 gears" in message


def test_overflow_dump_also_needs_a_dump_path():
    (message,) = rules.errors({"enable_dump_debug": True})
    assert "enable_dump_debug" in message and "dump_path" in message


# warning rule -> (config that triggers it, a phrase of the message)
WARNING_CASES = {
    "ignored_and_deprecated": (dict(min_group_size=True), "min_group_size is ignored"),
    "training_trace_points": (
        dict(profiling_mode=True, profiling_options='{"output":"./p","training_trace":"on"}'),
        "picks them automatically",
    ),
    "memory_sizes": (dict(graph_memory_max_size=str(26 * 2**30), variable_memory_max_size=str(6 * 2**30)), "31 GiB"),
    "both_dumps": (dict(enable_dump=True, enable_dump_debug=True, dump_path="/d"), "mutually exclusive"),
    "unused_dependents": (dict(dump_step="0|5"), "dump_step has no effect unless enable_dump"),
    "implmode_superseded": (
        dict(op_precision_mode="p.ini", op_select_implmode="high_precision"),
        "overridden by op_precision_mode",
    ),
    "small_channel_forced": (dict(graph_run_mode=0, enable_small_channel=0), "forces enable_small_channel=1"),
    "dtype_overrides_ineffective": (
        dict(customize_dtypes="c.cfg", precision_mode="must_keep_origin_dtype"),
        "customize_dtypes has no effect",
    ),
    "shape_range_vs_dims": (dict(dynamic_inputs_shape_range="data:[1~2]", dynamic_dims="1;2"), "dynamic_dims wins"),
    "device_list_needs_rank": (dict(local_device_list="0,1"), "local_rank_id"),
    "loop_offload_needs_getnext": (dict(iterations_per_loop=10), "enable_data_pre_proc=True"),
    "compile_cache_disabled": (dict(op_compiler_cache_mode="enable", op_debug_level=2), "op_debug_level"),
    "sync_timeout_vs_hccl": (dict(stream_sync_timeout=60000, hccl_timeout=1800), "should exceed hccl_timeout"),
    "offline_off": (dict(use_off_line=False), "nothing runs on the NPU"),
    "dump_values_swapped": (dict(dump_path="all"), "looks like a dump_mode value"),
    "dump_step_empty_items": (dict(dump_step="0||5"), "empty item"),
    "bf16_on_ascend910": (dict(precision_mode="allow_mix_precision_bf16"), "bfloat16"),
    "inference_only_options": (dict(graph_max_parallel_model_num=4), "online inference"),
}


def test_every_warning_rule_has_a_case():
    assert sorted(r.__name__ for r in rules.WARNING_RULES) == sorted(WARNING_CASES)


@pytest.mark.parametrize("name", sorted(WARNING_CASES))
def test_warning_rule_reports_a_soft_finding_without_failing_validation(name):
    values, phrase = WARNING_CASES[name]
    rule = getattr(rules, name)
    messages = list(rule(rules.View(values)))
    assert any(phrase in m for m in messages), messages
    assert any(phrase in w for w in NpuConfig(values).warnings())
    assert list(rule(rules.View({}))) == []


def test_training_trace_with_points_set_gives_no_warning():
    options = '{"output":"./p","training_trace":"on","fp_point":"a","bp_point":"b"}'
    assert list(rules.training_trace_points(rules.View({"profiling_options": options}))) == []


def test_bf16_is_fine_on_ascend910b():
    assert (
        list(rules.bf16_on_ascend910(rules.View({"precision_mode_v2": "mixed_bfloat16", "soc_config": "Ascend910B1"})))
        == []
    )


def test_inference_options_are_quiet_in_inference_mode():
    view = rules.View({"graph_run_mode": 0, "graph_max_parallel_model_num": 4, "quant_dumpable": "1"})
    assert list(rules.inference_only_options(view)) == []


@pytest.mark.parametrize("soc", ["Ascend910", "ascend910proa", "ASCEND910PremiumA", " Ascend910A "])
def test_bf16_warning_covers_every_spelling_of_the_atlas_training_series(soc):
    found = list(rules.bf16_on_ascend910(rules.View({"precision_mode": "allow_fp32_to_bf16", "soc_config": soc})))
    assert len(found) == 1 and "bfloat16" in found[0]


@pytest.mark.parametrize("soc", ["Ascend910B", "Ascend910B4", "Ascend310P3", "nonsense"])
def test_bf16_warning_is_silent_for_socs_outside_the_training_series(soc):
    assert list(rules.bf16_on_ascend910(rules.View({"precision_mode": "allow_fp32_to_bf16", "soc_config": soc}))) == []
