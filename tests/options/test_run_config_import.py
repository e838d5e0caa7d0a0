"""NPURunConfig kwargs import: the kwargs' session_config is folded in, estimator defaults stay quiet."""

from __future__ import annotations

import pytest

from npu_jupyter._options.config import NpuConfig


def _session_config(**params):
    tf = pytest.importorskip("tensorflow")
    proto = tf.compat.v1.ConfigProto()
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    for key, value in params.items():
        if isinstance(value, bool):
            custom.parameter_map[key].b = value
        elif isinstance(value, int):
            custom.parameter_map[key].i = value
        else:
            custom.parameter_map[key].s = value.encode()
    return proto


def test_session_config_npu_optimizer_entries_are_folded_in():
    sc = _session_config(precision_mode="allow_mix_precision", mix_compile_mode=True)
    config = NpuConfig.from_run_config_kwargs({"iterations_per_loop": 1, "session_config": sc, "model_dir": "/m"})
    assert config.changed()["precision_mode"] == "allow_mix_precision"
    assert config.changed()["mix_compile_mode"] is True
    assert config.changed()["iterations_per_loop"] == 1


def test_run_config_kwargs_override_the_session_config_entry_key_by_key():
    # NPUEstimator appends its own NpuOptimizer entry after the user's; the later one wins per key
    sc = _session_config(iterations_per_loop=5, precision_mode="force_fp16")
    config = NpuConfig.from_run_config_kwargs({"iterations_per_loop": 10, "session_config": sc})
    assert config.changed()["iterations_per_loop"] == 10
    assert config.changed()["precision_mode"] == "force_fp16"


def test_estimator_defaults_override_the_session_config_too():
    sc = _session_config(mix_compile_mode=True)
    config = NpuConfig.from_run_config_kwargs({"session_config": sc}, estimator_defaults=True)
    assert config.changed()["mix_compile_mode"] is False  # NPUEstimator always writes config.mix_compile_mode


def test_a_bad_key_in_the_session_config_is_a_remark_naming_it():
    sc = _session_config(precison_mode="force_fp16")
    config = NpuConfig.from_run_config_kwargs({"session_config": sc})
    assert any(w.startswith("session_config:") and "precison_mode" in w for w in config.warnings())
    assert not any("no custom optimizer named" in w for w in config.warnings())


def test_an_unreadable_session_config_is_one_remark():
    config = NpuConfig.from_run_config_kwargs({"session_config": object(), "iterations_per_loop": 1})
    assert any("session_config could not be read" in w for w in config.warnings())
    assert config.changed()["iterations_per_loop"] == 1


def test_estimator_defaults_raise_no_warning_about_options_the_user_never_set():
    config = NpuConfig.from_run_config_kwargs({"iterations_per_loop": 1}, estimator_defaults=True)
    assert "min_group_size" in config.changed()  # still written, as NPUEstimator does
    shown = " ".join(config.warnings())
    for key in ("min_group_size", "enable_reduce_precision", "dynamic_graph_execute_mode", "enable_data_pre_proc"):
        assert key not in shown, config.warnings()


def test_a_warning_about_an_option_the_user_set_is_kept():
    config = NpuConfig.from_run_config_kwargs({"dynamic_graph_execute_mode": "lazy_recompile"}, estimator_defaults=True)
    assert any("dynamic_graph_execute_mode" in w for w in config.warnings()), config.warnings()
    config.dynamic_graph_execute_mode = "lazy_recompile"  # set again by the user: still theirs
    assert any("dynamic_graph_execute_mode" in w for w in config.warnings())
