"""Generated code and NPURunConfig arguments: the session snippet runs and rebuilds the identical proto."""

from __future__ import annotations

import ast
import re

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def _run_session_snippet(code: str):
    scope: dict = {}
    exec(compile(code, "<npu snippet>", "exec"), scope)
    return scope["config"]


def test_session_snippet_executes_and_rebuilds_the_identical_proto():
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        mix_compile_mode=True,
        iterations_per_loop=1,
        enable_dump=True,
        dump_path='/tmp/it\'s "quoted"',
        dump_step="0|5|10",
        profiling_mode=True,
        profiling_options='{"output":"./p","task_trace":"on"}',
        graph_memory_max_size=2**34,
        enable_exception_dump=1,
    )
    built = _run_session_snippet(config.to_code("session"))
    assert isinstance(built, tf.compat.v1.ConfigProto)
    assert built == config.to_config_proto()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_valid_configs_give_snippets_that_rebuild_their_proto(option_sets, data):
    config = NpuConfig(data.draw(option_sets(max_options=8)))
    assume(config.problems() == [])
    assert _run_session_snippet(config.to_code()) == config.to_config_proto()


def test_snippets_refuse_an_invalid_config():
    with pytest.raises(NpuConfigError, match="dump_path"):
        NpuConfig(enable_dump=True).to_code("session")
    with pytest.raises(NpuConfigError, match="api"):
        NpuConfig().to_code("keras")


def test_run_config_kwargs_fold_helper_configs_like_their_classes():
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        iterations_per_loop=10,
        enable_data_pre_proc=True,
        enable_dump_debug=True,
        dump_path="/d",
        dump_debug_mode="all",
        profiling_mode=True,
        profiling_options='{"output":"./p"}',
        atomic_clean_policy=1,
        graph_slice="auto",
        experimental_accelerate_train_mode="fast|step|0.9",
        graph_memory_max_size="17179869184",
        input_shape="data:-1",
        dynamic_dims="1;2",
        dynamic_node_type=1,
        in_out_pair_flag=False,
    )
    assert config.to_run_config_kwargs() == {
        "iterations_per_loop": 10,
        "enable_data_pre_proc": True,
        "precision_mode": "allow_mix_precision",
        "dump_config": {"dump_path": "/d", "enable_dump_debug": True, "dump_debug_mode": "all"},
        "profiling_config": {"enable_profiling": True, "profiling_options": '{"output":"./p"}'},
        "graph_memory_max_size": 17179869184,
        "memory_config": {"atomic_clean_policy": 1},
        "experimental_config": {
            "graph_memory_optimize_config": {"graph_slice": "auto"},
            "accelerate_train_mode": "fast|step|0.9",
        },
        "dynamic_input_config": {"input_shape": "data:-1", "dynamic_dims": "1;2", "dynamic_node_type": 1},
    }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_run_config_kwargs_round_trip_for_estimator_options(option_sets, data):
    config = NpuConfig(data.draw(option_sets()))
    back = NpuConfig.from_run_config_kwargs(config.to_run_config_kwargs())
    estimator_only = {k: v for k, v in config.changed().items() if catalogue.spec(k).run_config}
    assert back.changed() == estimator_only
    assert back.import_warnings() == []


def test_estimator_snippet_is_python_with_helper_classes_and_session_only_options():
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        enable_dump=True,
        dump_path="/d",
        mix_compile_mode=True,
        in_out_pair="[[['a'], ['b']]]",
        dynamic_node_type=1,
        input_shape="data:-1",
        dynamic_dims="1;2",
    )
    with pytest.raises(NpuConfigError):  # dynamic gears + mix mode
        config.to_code("estimator")
    config.unset("input_shape", "dynamic_dims", "dynamic_node_type")
    code = config.to_code("estimator")
    tree = ast.parse(code)
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert {"NPURunConfig", "DumpConfig"} <= calls
    assert "from npu_bridge.estimator.npu.npu_config import NPURunConfig, DumpConfig" in code
    assert "custom_op.parameter_map['in_out_pair'].s" in code and "session_config=session_config" in code


def test_estimator_snippet_passes_all_four_dynamic_input_arguments():
    config = NpuConfig(input_shape="data:-1", dynamic_dims="1;2", dynamic_node_type=0)
    assert "DynamicInputConfig('data:-1', '1;2', 0, 0)" in config.to_code("estimator")


def test_seed_npu_run_config_examples_import_as_their_options(seed_text):
    """Every one-line `config = NPURunConfig(...)` example of the seed doc maps onto its options."""
    text = seed_text("npu-run-config-options.txt")
    examples = re.findall(r"^\s*config\d?\s*=\s*(NPURunConfig\(.*\))\s*$", text, flags=re.MULTILINE)
    checked = 0
    for call in examples:
        try:
            kwargs = eval(call, {"__builtins__": {}}, {"NPURunConfig": dict})  # the seed's literal arguments
        except (NameError, SyntaxError):
            continue  # examples passing objects (dump_config=dump_config) or elided arguments (...)
        config = NpuConfig.from_run_config_kwargs(kwargs)
        assert config.import_warnings() == [], call
        assert len(config.changed()) == len(kwargs), call
        assert NpuConfig.from_run_config_kwargs(config.to_run_config_kwargs()) == config
        checked += 1
    assert checked >= 40


def test_unknown_and_session_only_run_config_arguments_are_flagged():
    config = NpuConfig.from_run_config_kwargs(
        {
            "model_dir": "/m",
            "use_off_line": True,
            "precison_mode": "x",
            "dump_config": {"dump_pth": "/d"},
            "session_config": object(),
        }
    )
    notes = " | ".join(config.import_warnings())
    assert config.changed() == {}
    assert "use_off_line is a session-only option" in notes
    assert "did you mean 'precision_mode'" in notes
    assert "dump_config.dump_pth" in notes and "'dump_path'" in notes
    with pytest.raises(NpuConfigError):
        NpuConfig.from_run_config_kwargs({"precison_mode": "x"}, strict=True)


def test_run_config_values_of_the_wrong_type_are_not_written():
    config = NpuConfig.from_run_config_kwargs({"precision_mode": True, "iterations_per_loop": None})
    assert config.changed() == {}
    assert any("wrong type" in n for n in config.import_warnings())


def test_estimator_defaults_add_what_npuestimator_writes_unasked():
    plain = NpuConfig.from_run_config_kwargs({"precision_mode": "allow_mix_precision"})
    full = NpuConfig.from_run_config_kwargs(
        {"precision_mode": "allow_mix_precision", "iterations_per_loop": 10}, estimator_defaults=True
    )
    assert plain.changed() == {"precision_mode": "allow_mix_precision"}
    assert full.enable_data_pre_proc is True and full.hcom_parallel is True and full.iterations_per_loop == 10
    assert full.enable_dump is False and full.dump_mode is None  # dump_mode only comes with a DumpConfig
    assert full.enable_compress_weight is False and full.use_off_line is True
    assert not any("enable_data_pre_proc=True" in w for w in full.warnings())
    full.validate()
    with_dump = NpuConfig.from_run_config_kwargs(
        {"dump_config": {"enable_dump": True, "dump_path": "/d"}}, estimator_defaults=True
    )
    assert (with_dump.dump_mode, with_dump.dump_debug_mode, with_dump.dump_data) == ("output", "all", "tensor")
    assert NpuConfig.from_run_config_kwargs({"aoe_mode": "2"}, estimator_defaults=True).work_path == "./"


def test_compress_weight_conf_through_the_estimator_breaks_as_the_adapter_does():
    config = NpuConfig.from_run_config_kwargs({"compress_weight_conf": "w.cfg"}, estimator_defaults=True)
    with pytest.raises(NpuConfigError, match="enable_compress_weight"):
        config.validate()
