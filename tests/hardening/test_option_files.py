"""Fuzzing the small languages and files that options name (docs/contract.md, Options, Plans, Dumps and profiles).

The config checks a value when it is set; the planner and the runtime read the same value later. These
tests hold the two readings together: whatever the config accepts, the reader accepts too (no error
at run time for a value that passed at assignment), and a file an option points to — however broken
— becomes ``plan.errors``/``plan.warnings``, never a traceback.
"""

from __future__ import annotations

import json
import os

import pytest
from fuzz_inputs import (
    accepted,
    any_text,
    dump_step_text,
    dynamic_dims_text,
    fuzz_settings,
    in_out_pair_text,
    input_shape_text,
    profiling_json,
    tried,
)
from hypothesis import given
from hypothesis import strategies as st

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def _set(key: str, value: str) -> NpuConfig | None:
    """The config holding ``value``, or None when the setter refused it (with a named NpuConfigError)."""
    cfg = NpuConfig()
    try:
        cfg.set(key, value)
    except NpuConfigError as err:
        assert key in str(err)
        assert cfg.changed() == {}
        return None
    return cfg


@fuzz_settings(600)
@given(text=st.one_of(dump_step_text, any_text))
def test_a_dump_step_the_config_accepts_is_one_the_runtime_can_read(text):
    from npu_jupyter._runtime.observe.dump import parse_dump_step

    tried("dump_step")
    cfg = _set("dump_step", text)
    if cfg is None:
        return
    accepted("dump_step")
    ranges = parse_dump_step(cfg.dump_step)
    assert ranges is None or all(0 <= lo <= hi for lo, hi in ranges)


@fuzz_settings(600)
@given(text=in_out_pair_text)
def test_the_config_and_the_planner_read_in_out_pair_the_same_way(text):
    from npu_jupyter._options.grammars import parse_in_out_pair as config_reading
    from npu_jupyter._plan.placement import parse_in_out_pair as planner_reading

    tried("in_out_pair")
    assert config_reading(text) == planner_reading(text)
    if _set("in_out_pair", text) is not None:
        accepted("in_out_pair")
        assert planner_reading(text)


@fuzz_settings(500)
@given(text=profiling_json)
def test_profiling_options_the_config_accepts_are_read_by_the_runtime(tmp_path_factory, monkeypatch, text):
    from npu_jupyter._runtime.observe.run_settings import read_run_settings

    tried("profiling_options")
    # reading the settings creates the output folder: "./p", "on" or "/tmp/p" is made in a folder of its own
    folder = tmp_path_factory.mktemp("profile")
    monkeypatch.chdir(folder)
    text = text.replace("/tmp/", f"{folder}/")
    cfg = _set("profiling_options", text)
    if cfg is None:
        return
    accepted("profiling_options")
    cfg.profiling_mode = True
    settings = read_run_settings(cfg.snapshot())
    assert settings.profiling and isinstance(settings.profile_options(), dict)


@fuzz_settings(500)
@given(shape=input_shape_text, dims=dynamic_dims_text, node_type=st.sampled_from([None, 0, 1]))
def test_input_shape_and_dynamic_dims_validate_with_one_named_error(shape, dims, node_type):
    from npu_jupyter._options.grammars import parse_dynamic_dims, parse_input_shape

    tried("input_shape/dynamic_dims")
    cfg = NpuConfig()
    for key, value in (("input_shape", shape), ("dynamic_dims", dims), ("dynamic_node_type", node_type)):
        try:
            cfg.set(key, value)
        except NpuConfigError as err:
            assert key in str(err)
    if cfg.input_shape is not None:
        assert parse_input_shape(cfg.input_shape)
    if cfg.dynamic_dims is not None:
        assert parse_dynamic_dims(cfg.dynamic_dims)
    before = cfg.changed()
    try:
        cfg.validate()
        accepted("input_shape/dynamic_dims")
    except NpuConfigError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)
    assert cfg.changed() == before


# --------------------------------------------------------------------------------------- files

_op_names = st.sampled_from(["MatMul", "MatMulV2", "Relu", "Sum", "ReduceSum", "Conv2D", "NoSuchOp", "", "<x>", "é"])
_mixlist_docs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), _op_names),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["black-list", "white-list", "gray-list", "to-add", "to-remove", "x"]), inner, max_size=3
        ),
    ),
    max_leaves=8,
)
_mixlist_files = st.one_of(
    _mixlist_docs.map(json.dumps),
    st.dictionaries(
        st.sampled_from(["black-list", "white-list", "gray-list"]),
        st.dictionaries(st.sampled_from(["to-add", "to-remove"]), st.lists(_op_names, max_size=3), max_size=2),
        max_size=3,
    ).map(json.dumps),
    any_text,
)
_dtype_word = st.sampled_from(["float16", "float32", "FLOAT", "bf16", "int32", "float64", "", "half", "<b>"])
_dtype_line = st.one_of(
    st.tuples(
        st.sampled_from(["OpType::MatMulV2", "OpType::Relu", "OpType::Nope", "mm", "y", "", "OpType:"]),
        st.sampled_from(["InputDtype:", "OutputDtype:", ""]),
        st.lists(_dtype_word, max_size=3),
        st.sampled_from(["", ",OutputDtype:float16", "OutputDtype:"]),
    ).map(lambda t: f"{t[0]}::{t[1]}{','.join(t[2])}{t[3]}"),
    st.sampled_from(["", "# comment", "x" * 1100]),
    any_text,
)
_dtype_files = st.lists(_dtype_line, max_size=4).map("\n".join)


@pytest.fixture(scope="module")
def tiny():
    from hardening_graphs import tiny_graph_def

    return tiny_graph_def()


def _plan_with_file(tiny, folder, key: str, content: str, extra: dict) -> None:
    from npu_jupyter._plan.planner import plan

    path = os.path.join(folder, "file")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(content)
    cfg = NpuConfig(**{key: path, **extra})
    result = plan(tiny, cfg)
    assert len(result.ops) == len(tiny.node)
    for message in result.errors + result.warnings:
        assert isinstance(message, str) and message
    return result


@fuzz_settings(300)
@given(content=_mixlist_files, mode=st.sampled_from(["allow_mix_precision", "allow_mix_precision_fp16"]))
def test_any_modify_mixlist_file_gives_plan_errors_not_a_traceback(tiny, tmp_path_factory, content, mode):
    tried("modify_mixlist files")
    result = _plan_with_file(tiny, tmp_path_factory.mktemp("mix"), "modify_mixlist", content, {"precision_mode": mode})
    if not result.errors:
        accepted("modify_mixlist files")


@fuzz_settings(300)
@given(content=_dtype_files, mode=st.sampled_from(["allow_fp32_to_fp16", "force_fp16", "must_keep_origin_dtype"]))
def test_any_customize_dtypes_file_gives_plan_errors_not_a_traceback(tiny, tmp_path_factory, content, mode):
    tried("customize_dtypes files")
    result = _plan_with_file(tiny, tmp_path_factory.mktemp("dt"), "customize_dtypes", content, {"precision_mode": mode})
    if not result.errors:
        accepted("customize_dtypes files")


def test_a_precision_file_path_that_is_a_directory_or_missing_is_a_plan_error(tiny, tmp_path):
    from npu_jupyter._plan.planner import plan

    for path in (str(tmp_path), str(tmp_path / "missing.json")):
        result = plan(tiny, NpuConfig(precision_mode="allow_mix_precision", modify_mixlist=path))
        assert any(path in e for e in result.errors), result.errors
