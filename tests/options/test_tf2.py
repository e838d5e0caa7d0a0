"""The TF2 adapter's options: to_code(api="tf2") runs against npu_device with the options intact, and back."""

from __future__ import annotations

import sys

import pytest
from tf2_options_double import Config, OptionValue, make_module

from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.tf2 import read_by_tf2, tf2_options, tf2_path


@pytest.fixture
def npu_device(monkeypatch):
    module = make_module()
    monkeypatch.setitem(sys.modules, "npu_device", module)
    return module


def _run(code: str) -> None:
    exec(compile(code, "<to_code tf2>", "exec"), {})


def _leaves(config: Config, prefix: str = ""):
    for name, option in config._options.items():
        if isinstance(option, OptionValue):
            yield prefix + name, option
        else:
            yield from _leaves(option, prefix + name + ".")


def test_every_tf2_path_of_the_catalogue_exists_in_the_adapter_options():
    paths = dict(_leaves(make_module().global_options()))
    for key in read_by_tf2():
        assert tf2_path(key) in paths, key


def test_options_only_the_tf1_adapter_reads_have_no_tf2_path():
    assert tf2_path("mix_compile_mode") is None and tf2_path("iterations_per_loop") is None
    assert tf2_path("profiling_mode") == "profiling_config.enable_profiling"


def test_generated_code_sets_every_option_on_npu_device_with_the_values_intact(npu_device):
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        enable_dump=True,
        dump_path="/tmp/d",
        dump_step="0|2",
        dump_mode="all",
        profiling_mode=True,
        deterministic=1,
        enable_small_channel=1,
        atomic_clean_policy=1,
        dynamic_dims="1;3",
        input_shape="x:-1,2",
        dynamic_node_type=0,
        jit_compile="false",
    )
    _run(config.to_code(api="tf2"))
    assert len(npu_device.opened) == 1
    options = npu_device.opened[0]
    assert options.precision_mode.value == "allow_mix_precision"
    assert options.dump_config.enable_dump.value == "1" and options.dump_config.dump_path.value == "/tmp/d"
    assert options.dump_config.dump_step.value == "0|2" and options.dump_config.dump_mode.value == "all"
    assert options.profiling_config.enable_profiling.value == "1"
    assert options.enable_small_channel.value == "1"  # TF2 takes a bool where TF1 takes 0/1
    assert options.memory_config.atomic_clean_policy.value == "1"
    assert options.experimental.multi_branches_config.dynamic_dims.value == "1;3"
    assert options.experimental.multi_branches_config.dynamic_node_type.value == "0"  # TF2 takes the text
    assert NpuConfig.from_tf2_options(options) == config


def test_every_tf2_option_round_trips_through_generated_code(npu_device, sample_values):
    exercised = 0
    for key in read_by_tf2():
        spec = catalogue.spec(key)
        for value in sample_values(spec):
            config = NpuConfig({key: value})
            try:
                code = config.to_code(api="tf2")
            except NpuConfigError:
                continue  # a value only the TF1 adapter takes: the next test checks the refusal
            module = make_module()
            sys.modules["npu_device"] = module
            _run(code)
            option = dict(_leaves(module.opened[0]))[tf2_path(key)]
            # A value equal to the TF2 adapter's own default reads back as unset: the object cannot tell.
            expected = {} if option.value == OptionValue(option.default, None).value else config.changed()
            assert NpuConfig.from_tf2_options(module.opened[0]).changed() == expected, (key, value)
            exercised += 1
    assert exercised >= 140  # values needing partner options (dump path, mixlist mode) are skipped alone


@pytest.mark.parametrize(
    ("key", "value"),
    [("op_select_implmode", "high_precision_for_all"), ("graph_slice", "manual"), ("dynamic_node_type", 1)],
)
def test_a_value_the_tf2_adapter_refuses_is_one_clear_error(npu_device, key, value):
    config = NpuConfig({key: value})
    if key == "dynamic_node_type":  # valid for the TF1 adapter only together with its partners
        config.update(input_shape="x:-1,2", dynamic_dims="1;3")
    with pytest.raises(NpuConfigError, match=key) as info:
        config.to_code(api="tf2")
    assert "TF2 adapter" in str(info.value)
    path = tf2_path(key)
    target = npu_device.global_options()
    *parents, leaf = path.split(".")
    for part in parents:
        target = getattr(target, part)
    with pytest.raises((ValueError, TypeError)):  # the adapter's own check refuses it too
        setattr(target, leaf, value)


def test_options_the_tf2_adapter_does_not_read_are_named_in_the_code(npu_device):
    config = NpuConfig(mix_compile_mode=True, precision_mode="force_fp16")
    values, unread = tf2_options(config)
    assert values == {"precision_mode": "force_fp16"} and unread == ["mix_compile_mode"]
    code = config.to_code(api="tf2")
    assert "not read by the TF2 adapter" in code and "mix_compile_mode" in code
    _run(code)


def test_an_unknown_api_lists_the_three():
    with pytest.raises(NpuConfigError, match="'tf2'"):
        NpuConfig().to_code(api="keras")
