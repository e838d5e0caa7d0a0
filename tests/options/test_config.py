"""NpuConfig: per-option validation on assignment, atomic updates, copies, equality and files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def test_has_one_trait_per_catalogue_option_with_its_doc_as_help():
    traits = NpuConfig.class_traits()
    assert set(traits) == set(catalogue.keys())
    assert traits["precision_mode"].help == catalogue.spec("precision_mode").doc
    assert traits["dump_path"].metadata["group"] == "dump"


def test_unset_options_are_none_and_effective_falls_back_to_the_adapter_default():
    config = NpuConfig()
    assert config.precision_mode is None and config.changed() == {}
    assert config.effective("iterations_per_loop") == 1
    assert config.effective("hcom_parallel") is True
    assert config.effective("enable_exception_dump") == 2
    assert config.effective("precision_mode") is None
    config.iterations_per_loop = 10
    assert config.effective("iterations_per_loop") == 10


def test_defaults_document_every_option():
    defaults = NpuConfig.defaults()
    assert set(defaults) == set(catalogue.keys())
    assert defaults["use_off_line"] is True and defaults["dump_mode"] == "output"


@pytest.mark.parametrize(
    "key, value, phrase",
    [
        ("precision_mode", "allow_mix", "allow_mix_precision"),
        ("iterations_per_loop", 0, ">= 1"),
        ("iterations_per_loop", True, "wrong type"),
        ("iterations_per_loop", "10", "wrong type"),
        ("enable_dump", 1, "True or False"),
        ("dump_step", "0|5-3", "first step is >= the second"),
        ("dump_step", "0|a", "correct example"),
        ("profiling_options", "task_trace", "not valid JSON"),
        ("profiling_options", '{"output":"./p","task_trace":"yes"}', "task_trace"),
        ("profiling_options", '["output"]', "JSON object"),
        ("in_out_pair", "[[a], [b]", "unbalanced"),
        ("input_shape", "data:1,x", "name:d1,d2"),
        ("dynamic_dims", "1,2;-3,4", "non-negative"),
        ("dynamic_inputs_shape_range", "tensor:[1,2]", "getnext"),
        ("local_device_list", "0, 1", "example"),
        ("local_rank_id", 8, "[0, 7]"),
        ("graph_memory_max_size", "16G", "whole number"),
        ("graph_memory_max_size", "²", "whole number"),
        ("variable_memory_max_size", "٣", "whole number"),
        ("dump_step", "5\n", "correct example"),
        ("local_device_list", "1,2\n", "example"),
        ("dump_path", "/tmp/\ud800", "lone surrogate"),
        ("graph_memory_max_size", 2**40, "274877906944"),
        ("experimental_accelerate_train_mode", "fast|step|0.95", "0.2"),
        ("dump_debug_mode", "./test/output/over_dump", "aicore_overflow"),
        ("input_fusion_size", 33554433, "33554432"),
    ],
)
def test_bad_assignment_raises_naming_option_value_and_allowed_and_changes_nothing(key, value, phrase):
    config = NpuConfig(precision_mode="force_fp16", iterations_per_loop=3)
    before = config.changed()
    with pytest.raises(NpuConfigError) as info:
        setattr(config, key, value)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert key in message and repr(value) in message and phrase in message, message
    assert info.value.option == key and info.value.value == value
    assert config.changed() == before


def test_unknown_names_get_close_matches_everywhere():
    for attempt in (
        lambda: NpuConfig(precison_mode="force_fp16"),
        lambda: setattr(NpuConfig(), "precison_mode", "force_fp16"),
        lambda: NpuConfig().set("precison_mode", "force_fp16"),
        lambda: NpuConfig().update({"precison_mode": "force_fp16"}),
        lambda: NpuConfig().unset("precison_mode"),
    ):
        with pytest.raises(NpuConfigError) as info:
            attempt()
        assert "'precision_mode'" in str(info.value) and info.value.suggestions[0] == "precision_mode"


def test_reading_a_misspelt_attribute_suggests_the_option():
    with pytest.raises(AttributeError, match="did you mean 'dump_path'"):
        NpuConfig().dump_pth


def test_update_is_all_or_nothing_and_reports_every_bad_entry():
    config = NpuConfig(dump_path="/tmp/keep")
    with pytest.raises(NpuConfigError) as info:
        config.update({"enable_dump": True, "dump_mode": "everything", "iterations_per_loop": -1, "precison_mode": "x"})
    assert len(info.value.problems) == 3
    assert config.changed() == {"dump_path": "/tmp/keep"}
    config.update(enable_dump=True, dump_mode="all")
    assert config.changed() == {"enable_dump": True, "dump_path": "/tmp/keep", "dump_mode": "all"}


def test_update_with_none_and_unset_restore_adapter_defaults():
    config = NpuConfig(enable_dump=True, dump_path="/d", dump_step="0|5")
    config.update(dump_step=None)
    config.unset("enable_dump")
    assert config.changed() == {"dump_path": "/d"}


def test_reset_replaces_the_whole_config_atomically():
    config = NpuConfig(precision_mode="force_fp16", mix_compile_mode=True)
    with pytest.raises(NpuConfigError):
        config.reset(iterations_per_loop=0)
    assert config.changed() == {"mix_compile_mode": True, "precision_mode": "force_fp16"}
    config.reset(iterations_per_loop=5)
    assert config.changed() == {"iterations_per_loop": 5}


def test_set_text_types_magic_values():
    config = NpuConfig()
    config.set_text("enable_dump", "yes").set_text("iterations_per_loop", "10").set_text("dump_path", "/tmp/x")
    assert config.changed() == {"iterations_per_loop": 10, "enable_dump": True, "dump_path": "/tmp/x"}


def test_graph_memory_max_size_accepts_ints_but_keeps_a_string():
    config = NpuConfig(graph_memory_max_size=17179869184)
    assert config.graph_memory_max_size == "17179869184"
    config.graph_memory_max_size = b"1024"
    assert config.graph_memory_max_size == "1024"


def test_changed_lists_only_set_options_in_catalogue_order():
    config = NpuConfig(dump_path="/d", precision_mode="force_fp32", use_off_line=True)
    assert list(config.changed()) == ["use_off_line", "precision_mode", "dump_path"]


def test_copy_is_independent_and_applies_overrides_atomically():
    original = NpuConfig(precision_mode="force_fp16")
    clone = original.copy(enable_dump=True, dump_path="/d")
    assert clone.changed() == {"precision_mode": "force_fp16", "enable_dump": True, "dump_path": "/d"}
    clone.precision_mode = "force_fp32"
    assert original.precision_mode == "force_fp16"
    with pytest.raises(NpuConfigError):
        original.copy(dump_mode="x")
    assert original.changed() == {"precision_mode": "force_fp16"}


def test_equality_compares_set_options():
    assert NpuConfig(precision_mode="force_fp16") == NpuConfig({"precision_mode": b"force_fp16"})
    assert NpuConfig(precision_mode="force_fp16") != NpuConfig(precision_mode="force_fp32")
    assert NpuConfig() != {"precision_mode": None}


def test_trait_observers_see_assignments():
    config = NpuConfig()
    seen = []
    config.observe(lambda change: seen.append((change["name"], change["new"])), names=["precision_mode"])
    config.update(precision_mode="force_fp32", enable_dump=False)
    assert seen == [("precision_mode", "force_fp32")]


def test_save_and_load_round_trip(tmp_path):
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        iterations_per_loop=10,
        dump_path='/tmp/a "b"',
        graph_memory_max_size=2**34,
    )
    path = tmp_path / "sub" / "npu.json"
    config.save(path)
    assert NpuConfig.load(path) == config
    assert json.loads(path.read_text())["format"] == "npu_jupyter.NpuConfig"
    assert [p.name for p in path.parent.iterdir()] == ["npu.json"]  # no temp file left behind


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "npu.json"
    NpuConfig(precision_mode="force_fp16").save(path)
    NpuConfig(precision_mode="force_fp32").save(path)
    assert NpuConfig.load(path).precision_mode == "force_fp32"


@pytest.mark.parametrize(
    "content, phrase",
    [
        ("{not json", "not valid JSON"),
        ('["precision_mode"]', "JSON object"),
        ('{"precision_mode": "force_fp16", "iterations_per_loop": 0}', "iterations_per_loop"),
        ('{"precison_mode": "force_fp16"}', "did you mean 'precision_mode'"),
        ('{"format": "npu_jupyter.NpuConfig", "version": 99, "options": {}}', "version 99"),
    ],
)
def test_loading_a_bad_file_gives_one_clear_error(tmp_path, content, phrase):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(NpuConfigError) as info:
        NpuConfig.load(path)
    assert str(path) in str(info.value) and phrase in str(info.value)


def test_loading_a_missing_file_names_it(tmp_path):
    with pytest.raises(NpuConfigError, match="cannot read"):
        NpuConfig.load(tmp_path / "missing.json")


def test_a_hand_written_plain_object_loads(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text('{"mix_compile_mode": true}')
    assert NpuConfig.load(path) == NpuConfig(mix_compile_mode=True)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_option_sets_survive_save_and_load(tmp_path_factory, option_sets, data):
    values = data.draw(option_sets())
    config = NpuConfig(values)
    path = tmp_path_factory.mktemp("cfg") / "c.json"
    config.save(path)
    assert NpuConfig.load(path) == config


def test_importing_the_config_module_does_not_import_tensorflow():
    code = (
        "import sys, npu_jupyter, npu_jupyter._options.config as c; c.NpuConfig(precision_mode='force_fp16')"
        ".validate(); import npu_jupyter.scope; print('tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert out.stdout.strip() == "False"


def test_repr_shows_set_options():
    assert repr(NpuConfig(mix_compile_mode=True)) == "NpuConfig(mix_compile_mode=True)"


def test_a_config_can_be_built_from_another():
    original = NpuConfig(precision_mode="force_fp16")
    assert NpuConfig(original) == original and NpuConfig(original) is not original


def test_ints_beyond_int64_are_refused():
    with pytest.raises(NpuConfigError, match="int64"):
        NpuConfig(hccl_timeout=2**63)


def test_deepcopy_and_pickle_give_equal_independent_configs():
    import copy
    import pickle

    config = NpuConfig(precision_mode="force_fp16", dump_path="/d")
    for clone in (copy.deepcopy(config), pickle.loads(pickle.dumps(config))):
        assert clone == config and type(clone) is NpuConfig
        clone.precision_mode = "force_fp32"
        assert config.precision_mode == "force_fp16"


def test_explicit_use_off_line_true_equals_unset_because_both_build_the_same_proto():
    explicit = NpuConfig(use_off_line=True)
    assert explicit == NpuConfig()
    assert explicit.to_config_proto() == NpuConfig().to_config_proto()
    assert NpuConfig(use_off_line=False) != NpuConfig()


def test_config_uses_only_the_public_traitlets_api():
    """Private traitlets storage (``_trait_values``/``_notify_trait``) skips validation and observers."""
    from pathlib import Path

    import npu_jupyter._options.config as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    assert "_trait_values" not in source and "_notify_trait" not in source


def test_a_copy_keeps_imported_values_the_check_refuses_and_their_notes():
    import tensorflow as tf

    proto = tf.compat.v1.ConfigProto()
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["precision_mode"].s = b"not_a_mode"
    imported = NpuConfig.from_config_proto(proto)
    clone = imported.copy()
    assert clone.precision_mode == "not_a_mode"
    assert clone.import_warnings() == imported.import_warnings() != []
    seen = []
    clone.observe(seen.append, names=["precision_mode"])
    clone.precision_mode = "force_fp16"  # a user value replaces the import and its note
    assert seen and clone.import_warnings() == []
