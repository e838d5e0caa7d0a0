"""Exact inputs for the bugs the hardening fuzzers found, one test each.

Each test states the behaviour the product promises (docs/contract.md, Options, Plans and Notebook: one clear
``NpuConfigError`` or ``UsageError`` and no change, exact proto round trip, no traceback from a file an option names). A
bug not fixed yet is marked xfail(strict=True): the test fails for that reason until the owning module is fixed, then
the strict mark turns it red and the mark (and any matching skip in the fuzzers, see ``config_invariants.py``) is
deleted. Fixed bugs keep their test, unmarked, as regression tests.
"""

from __future__ import annotations

import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def test_superscript_digit_byte_count_is_refused_with_npu_config_error():
    cfg = NpuConfig()
    with pytest.raises(NpuConfigError, match="graph_memory_max_size"):
        cfg.set("graph_memory_max_size", "²")
    assert cfg.changed() == {}


def test_arabic_indic_digit_byte_count_is_refused():
    with pytest.raises(NpuConfigError, match="variable_memory_max_size"):
        NpuConfig().set("variable_memory_max_size", "٣")


def test_dump_step_with_a_trailing_newline_is_refused_at_assignment():
    with pytest.raises(NpuConfigError, match="dump_step"):
        NpuConfig().set("dump_step", "5\n")


@pytest.mark.parametrize(
    "key, text", [("local_device_list", "1,2\n"), ("input_shape", "data:1,2\n"), ("dynamic_dims", "1,2;3,4\n")]
)
def test_list_options_with_a_trailing_newline_are_refused(key, text):
    with pytest.raises(NpuConfigError, match=key):
        NpuConfig().set(key, text)


def test_lone_surrogate_in_a_string_option_is_refused_or_round_trips():
    cfg = NpuConfig()
    try:
        cfg.set("dump_path", "/tmp/\ud800")
    except NpuConfigError as err:
        assert "dump_path" in str(err) and cfg.changed() == {}
        return
    proto = cfg.to_config_proto(validate=False)  # raised UnicodeEncodeError before the fix
    assert NpuConfig.from_config_proto(proto) == cfg


def test_explicit_use_off_line_true_round_trips():
    cfg = NpuConfig(use_off_line=True)
    assert NpuConfig.from_config_proto(cfg.to_config_proto()) == cfg


@pytest.mark.parametrize("key", ["modify_mixlist", "customize_dtypes", "op_precision_mode"])
def test_a_non_utf8_precision_file_becomes_a_plan_error_not_a_traceback(tmp_path, key):
    from hardening_graphs import tiny_graph_def

    from npu_jupyter._plan.planner import plan

    path = tmp_path / "file"
    path.write_bytes(b"\xff\xfe{\x00")
    cfg = NpuConfig(precision_mode="allow_mix_precision", **{key: str(path)})
    result = plan(tiny_graph_def(), cfg)
    assert any(str(path) in m for m in result.errors + result.warnings)


@pytest.mark.parametrize(
    "text",
    [
        "[[['mm'], ['y']]]",  # the documented form
        "[[['mm'], ['y']]]\n",  # a trailing newline: ``$`` once matched before it in one reader only
        '[[["mm"], ["y"]]]',  # double quotes
        " [ [ ['mm'] , ['y'] ] ] ",  # spaces everywhere
    ],
)
def test_an_in_out_pair_the_config_accepts_is_the_range_the_planner_offloads(text):
    """The two readers once disagreed: the config accepted a text the planner then ignored."""
    from hardening_graphs import tiny_graph_def

    from npu_jupyter._plan.planner import plan

    cfg = NpuConfig(mix_compile_mode=True, in_out_pair=text)  # accepted by the config check
    result = plan(tiny_graph_def(), cfg)
    assert not result.errors
    offloaded = sorted(name for name, d in result.ops.items() if d.placement == "device")
    assert offloaded == ["mm", "y"]
    assert "outside every in_out_pair range" in result.ops["total"].placement_reason


@pytest.mark.parametrize("text", ["[[['mm']]]", "[['mm'], ['y']]", "[[['mm'], 'y']]", "mm:y"])
def test_an_in_out_pair_the_config_refuses_never_reaches_the_planner(text):
    from hardening_graphs import tiny_graph_def

    from npu_jupyter._plan.planner import plan

    with pytest.raises(NpuConfigError, match="in_out_pair"):
        NpuConfig(mix_compile_mode=True, in_out_pair=text)
    with pytest.raises(NpuConfigError, match="in_out_pair"):  # a dict config is checked the same way
        plan(tiny_graph_def(), {"mix_compile_mode": True, "in_out_pair": text})


def test_a_nul_in_a_precision_file_path_becomes_a_plan_error_not_a_traceback():
    from hardening_graphs import tiny_graph_def

    from npu_jupyter._plan.planner import plan

    path = "/tmp/mix\x00list.json"
    result = plan(tiny_graph_def(), NpuConfig(precision_mode="allow_mix_precision", modify_mixlist=path))
    assert any("modify_mixlist" in m for m in result.errors)


def test_npu_save_to_a_path_under_a_regular_file_is_a_usage_error(ip, tmp_path):
    from IPython.core.error import UsageError

    (tmp_path / "file").write_text("a regular file")
    with pytest.raises(UsageError, match="file"):
        ip.run_line_magic("npu", f"save {tmp_path / 'file' / 'config.json'}")


def test_npu_load_of_a_non_utf8_file_is_a_usage_error_and_changes_nothing(ip, tmp_path):
    from IPython.core.error import UsageError

    from npu_jupyter._notebook.state import current_config

    current_config().update(precision_mode="force_fp16")
    path = tmp_path / "config.json"
    path.write_bytes(b'{"dump_path": "\xff"}')
    with pytest.raises(UsageError, match="config.json"):
        ip.run_line_magic("npu", f"load {path}")
    assert current_config().changed() == {"precision_mode": "force_fp16"}
