"""Every configuration of real_configs.jsonl, rebuilt as its script did, imports, round-trips what the
adapter reads, and yields exactly the expected remarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError

REAL_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "reference" / "real_configs.jsonl"
ROWS = [json.loads(line) for line in REAL_CONFIGS.read_text(encoding="utf-8").splitlines() if line.strip()]
SESSION_ROWS = [r for r in ROWS if r["api"] == "session"]
ESTIMATOR_ROWS = [r for r in ROWS if r["api"] == "estimator"]
DYNAMIC = "<dynamic>"


def _row_id(row: dict) -> str:
    return f"{row['source'].split(':', 1)[1]}:{row['line']}"


def _concrete(value: Any, field: str) -> Any:
    """A stand-in for values the script computes at run time (None = leave the key out, as unknown).

    A computed string still sets its key, so it becomes the text 'dyn'; a computed bool/int is left out.
    """
    if value == DYNAMIC and field != "s":
        return None
    if isinstance(value, str):
        return value.replace(DYNAMIC, "dyn")
    return value


def _rebuild_session(row: dict) -> tuple[Any, dict[str, tuple[str, Any]]]:
    """The ConfigProto the script builds, and the key -> (field, value) it writes."""
    proto = tf.compat.v1.ConfigProto()
    rewrite = proto.graph_options.rewrite_options
    custom = rewrite.custom_optimizers.add()
    if _optimizer_name(row) is not None:
        custom.name = _optimizer_name(row)
    written = {}
    for key, raw in row["options"].items():
        field = row["value_types"][key]
        value = _concrete(raw, field)
        if value is None:
            continue
        attr = custom.parameter_map[key]
        if field == "s":
            attr.s = str(value).encode("utf-8")
        else:
            setattr(attr, field, value)
        written[key] = (field, value)
    for option, setting in row["rewriter"].items():
        named = isinstance(setting, str) and hasattr(RewriterConfig, setting)
        setattr(rewrite, option, getattr(RewriterConfig, setting) if named else int(setting))
    return proto, written


def _optimizer_name(row: dict) -> str | None:
    """The custom optimizer's name; a custom_op made elsewhere (see the row's note) is the usual NpuOptimizer."""
    if row.get("optimizer_name") is None and "outside this scope" in row.get("note", ""):
        return "NpuOptimizer"
    return row.get("optimizer_name")


def _adapter_reads(row: dict, written: dict[str, tuple[str, Any]]) -> tuple[dict[str, Any], list[str], list[str]]:
    """What the adapter reads (key -> value), the keys it ignores, and the keys read but with invalid values.

    Computed from the catalogue's key/field table only, independently of the import code.
    """
    reads, ignored, invalid = {}, [], []
    if _optimizer_name(row) != "NpuOptimizer":
        return reads, ignored, invalid  # nothing is read; one remark covers the whole optimizer
    for key, (field, value) in written.items():
        if key not in catalogue.keys() or catalogue.spec(key).field != field:
            ignored.append(key)
            continue
        spec = catalogue.spec(key)
        value = bool(value) if field == "b" else value
        reads[key] = value
        try:
            spec.check(value)
        except NpuConfigError:
            invalid.append(key)
    return reads, ignored, invalid


@pytest.mark.parametrize("row", SESSION_ROWS, ids=_row_id)
def test_session_config_imports_round_trips_and_warns_as_expected(row):
    proto, written = _rebuild_session(row)
    reads, ignored, invalid = _adapter_reads(row, written)
    config = NpuConfig.from_config_proto(proto)

    # keeps exactly what the adapter reads
    for key, value in reads.items():
        assert config.effective(key) == value, key
    assert set(config.changed()) <= set(reads)

    # one remark per ignored key / invalid value, plus one per foreign optimizer name
    notes = config.import_warnings()
    name_notes = 0 if _optimizer_name(row) == "NpuOptimizer" else 2  # the foreign name + "no NpuOptimizer"
    assert len(notes) == len(ignored) + len(invalid) + name_notes, notes
    for key in ignored + invalid:
        assert any(key in note for note in notes), key
    for key in ignored:
        if key in catalogue.foreign_keys() or key not in catalogue.keys():
            assert any("did you mean" in n or "not read by any adapter" in n for n in notes if key in n)

    # round trip: the rebuilt proto carries exactly what the adapter read, and reads back the same
    again = config.to_config_proto(validate=False)
    (custom,) = again.graph_options.rewrite_options.custom_optimizers
    carried = {k: _attr_value(v) for k, v in custom.parameter_map.items()}
    assert carried == {"use_off_line": True, **reads}
    assert NpuConfig.from_config_proto(again) == config


def _attr_value(attr: Any) -> Any:
    field = attr.WhichOneof("value")
    return attr.s.decode("utf-8") if field == "s" else getattr(attr, field)


@pytest.mark.parametrize("row", ESTIMATOR_ROWS, ids=_row_id)
def test_estimator_config_imports_round_trips_and_warns_as_expected(row):
    kwargs = {}
    for name, raw in row["options"].items():
        kind = row["value_types"][name]
        if kind == "obj" or raw is None:
            continue
        value = _concrete(raw, kind)
        if value is None:
            continue
        kwargs[name] = value
    config = NpuConfig.from_run_config_kwargs(kwargs)
    by_path = catalogue.by_run_config_path()
    plain = set(catalogue.run_config_only_kwargs())
    expected = {by_path[n].key: v for n, v in kwargs.items() if n in by_path}
    unknown = [n for n in kwargs if n not in by_path and n not in plain]
    for key, value in expected.items():
        assert config.effective(key) == (str(value) if catalogue.spec(key).accepts_int else value), key
    invalid = [k for k in expected if _fails(k, expected[k])]
    assert len(config.import_warnings()) == len(unknown) + len(invalid)
    back = NpuConfig.from_run_config_kwargs(config.to_run_config_kwargs())
    assert back == config
    assert NpuConfig.from_config_proto(config.to_config_proto(validate=False)) == config.copy(use_off_line=None)


def _fails(key: str, value: Any) -> bool:
    try:
        catalogue.spec(key).check(value)
    except NpuConfigError:
        return True
    return False


def _row(source_part: str, **match: Any) -> dict:
    found = [r for r in ROWS if source_part in r["source"] and all(r["options"].get(k) == v for k, v in match.items())]
    assert found, source_part
    return found[0]


def test_the_corpus_is_the_documented_size():
    assert (len(SESSION_ROWS), len(ESTIMATOR_ROWS)) == (263, 107)


@pytest.mark.parametrize(
    "source, key, phrase",
    [
        ("Oct-ResNet_ID2890", "sfusion_switch_file", "did you mean 'fusion_switch_file'"),
        ("3D-POSE-BASELINE_ID0795", "fp_point", "profiling_options"),
        ("DeepFM_ID0030_for_TensorFlow/train.py", "sump_mode", "did you mean 'dump_mode'"),
        ("CRNN_Kernel_ID0055", "allow_mix_compile", "mix_compile_mode"),
        ("OpenPose_ID0117", "jit_compile", "reads .s"),
        ("I3D_ID0168", "op_debug_level", "reads .i"),
        ("GNMT_for_TensorFlow/estimator.py", "enable_auto_mix_precision", "allow_mix_precision"),
        ("WideDeep_ID0028", "master_slave_mode", "not read by any adapter"),
    ],
)
def test_known_script_mistakes_get_a_helpful_remark(source, key, phrase):
    row = next(r for r in SESSION_ROWS if source in r["source"] and key in r["options"])
    config = NpuConfig.from_config_proto(_rebuild_session(row)[0])
    assert any(key in note and phrase in note for note in config.import_warnings()), config.import_warnings()


def test_min_group_size_from_estimator_copies_is_kept_and_flagged_as_ignored():
    row = next(r for r in SESSION_ROWS if "min_group_size" in r["options"])
    config = NpuConfig.from_config_proto(_rebuild_session(row)[0])
    assert config.min_group_size is True
    assert any("min_group_size is ignored" in w for w in config.warnings())


def test_old_style_profiling_options_are_kept_but_flagged():
    row = next(r for r in SESSION_ROWS if r["options"].get("profiling_options") == "task_trace")
    config = NpuConfig.from_config_proto(_rebuild_session(row)[0])
    assert config.profiling_options == "task_trace"
    assert any("profiling_options" in n and "not valid JSON" in n for n in config.import_warnings())


def test_optimizers_named_npuoptimizer1_are_reported():
    row = next(r for r in SESSION_ROWS if r.get("optimizer_name") == "NpuOptimizer1")
    config = NpuConfig.from_config_proto(_rebuild_session(row)[0])
    assert config.changed() == {}
    assert any("'NpuOptimizer1' is ignored" in n for n in config.import_warnings())


def test_most_real_configs_import_without_remarks():
    clean = 0
    for row in SESSION_ROWS:
        if not NpuConfig.from_config_proto(_rebuild_session(row)[0]).import_warnings():
            clean += 1
    assert clean >= 200  # the corpus is mostly well-formed; remarks must not be noise
