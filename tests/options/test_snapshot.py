"""ConfigSnapshot: frozen, checked once, read by one option(); importers return one; the catalogue is the source."""

from __future__ import annotations

import dataclasses
import json

import pytest

from npu_jupyter._options import catalogue, profiling, rules
from npu_jupyter._options.config import NpuConfig, as_snapshot
from npu_jupyter._options.errors import NpuConfigError
from npu_jupyter._options.snapshot import ConfigSnapshot


def test_a_snapshot_cannot_be_changed():
    snap = NpuConfig(precision_mode="force_fp16").snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.values = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap.values["precision_mode"] = "force_fp32"  # type: ignore[index]
    assert snap.option("precision_mode") == "force_fp16" and snap.precision_mode == "force_fp16"
    assert snap.option("dump_path", "unset") == "unset" and snap.dump_path is None


def test_a_snapshot_is_what_the_config_was_when_it_was_taken():
    config = NpuConfig(precision_mode="force_fp16")
    before = config.snapshot()
    assert config.snapshot() is before  # cached until an option changes
    config.precision_mode = "force_fp32"
    after = config.snapshot()
    assert before.changed() == {"precision_mode": "force_fp16"}
    assert after is not before and after.changed() == {"precision_mode": "force_fp32"}


def test_cross_option_rules_run_once_per_snapshot(monkeypatch):
    calls = []
    real = rules.errors
    monkeypatch.setattr(rules, "errors", lambda values: calls.append(1) or real(values))
    from npu_jupyter._options import snapshot as snapshot_module

    monkeypatch.setattr(snapshot_module.rules, "errors", rules.errors)
    config = NpuConfig(precision_mode="force_fp16")
    config.validate()
    config.problems()
    config.to_config_proto() if _has_tf() else None
    config.snapshot().validate()
    assert len(calls) == 1


def test_unknown_names_and_bad_values_raise_as_npuconfig_does():
    with pytest.raises(NpuConfigError, match="did you mean 'precision_mode'"):
        as_snapshot({"precison_mode": "force_fp16"})
    with pytest.raises(NpuConfigError) as caught:
        as_snapshot({"precision_mode": "force_fp17"})
    with pytest.raises(NpuConfigError) as expected:
        NpuConfig(precision_mode="force_fp17")
    assert str(caught.value) == str(expected.value)
    with pytest.raises(AttributeError, match="not an NPU session option"):
        _ = ConfigSnapshot().precison_mode


def test_layered_keeps_the_base_and_drops_remarks_of_replaced_keys():
    base = ConfigSnapshot({"precision_mode": "force_fp32"}, raw={"precision_mode"}, notes=(("precision_mode", "odd"),))
    cell = base.layered({"precision_mode": None, "precision_mode_v2": "fp16"})
    assert base.changed() == {"precision_mode": "force_fp32"} and base.import_warnings() == ["odd"]
    assert cell.changed() == {"precision_mode_v2": "fp16"} and cell.import_warnings() == [] and not cell.raw
    assert base.layered({"precision_mode": "force_fp32"}) is base


def test_importers_go_through_the_public_constructor():
    snap = ConfigSnapshot({"iterations_per_loop": 5}, notes=((None, "a remark"),), unasked={"iterations_per_loop"})
    config = NpuConfig.from_snapshot(snap)
    assert config.snapshot() is snap  # nothing re-read or re-checked
    assert config.changed() == {"iterations_per_loop": 5} and config.import_warnings() == ["a remark"]


def test_the_defaults_and_the_precision_table_come_from_the_catalogue():
    from npu_jupyter._plan import precision
    from npu_jupyter._plan.settings import PlanSettings
    from npu_jupyter._runtime.observe.run_settings import RunSettings

    for cls in (PlanSettings, RunSettings):
        for field in dataclasses.fields(cls):
            if field.name in catalogue.keys() and field.default not in (None, "", frozenset(), ()):
                assert field.default == catalogue.default_of(field.name), (cls.__name__, field.name)
    for key, table in (("precision_mode", precision._MODES), ("precision_mode_v2", precision._MODES_V2)):
        assert set(table) == set(catalogue.spec(key).choices or ())
        assert table == catalogue.precision_strategies(key)
    assert rules.MIXED_PRECISION_MODES == (
        "allow_mix_precision",
        "allow_mix_precision_fp16",
        "allow_mix_precision_bf16",
    )
    assert rules.MIXED_PRECISION_V2 == ("mixed_float16", "mixed_bfloat16", "mixed_hif8")


def test_profiling_options_are_parsed_by_one_function(monkeypatch):
    from npu_jupyter._options import grammars
    from npu_jupyter._runtime.ascend import adapter_outputs
    from npu_jupyter._runtime.observe import profile

    seen = []

    class CountingJson:
        JSONDecodeError = json.JSONDecodeError

        @staticmethod
        def loads(text):
            seen.append(text)
            return json.loads(text)

    monkeypatch.setattr(profiling, "json", CountingJson)
    text = json.dumps({"output": "/tmp/prof", "training_trace": "on"})
    grammars.check_profiling_options(text)
    rules.warnings({"profiling_mode": True, "profiling_options": text})
    profile.parse_profiling_options(text)
    adapter_outputs._profiling_output(text)
    assert len(seen) >= 4 and set(seen) == {text}
    assert profile.parse_profiling_options("") == catalogue.profiling_default() == profile.DEFAULT_OPTIONS


def test_proto_round_trip_gives_back_the_snapshot_field_by_field():
    pytest.importorskip("tensorflow")
    from npu_jupyter._options.proto import read_config_proto

    values = {}
    for spec in catalogue.specs():
        if spec.choices:
            values[spec.key] = spec.choices[-1]
        elif spec.field == "b" and not spec.deprecated:
            values[spec.key] = True
    values.pop("precision_mode_v2")  # exclusive with precision_mode
    snap = ConfigSnapshot.checked(values)
    proto = snap.to_config_proto(validate=False)
    [custom] = proto.graph_options.rewrite_options.custom_optimizers
    for key in snap.values:
        assert custom.parameter_map[key].WhichOneof("value") == catalogue.spec(key).field, key
    assert read_config_proto(proto).changed() == {k: v for k, v in snap.changed().items() if k != "use_off_line"}


def _has_tf() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorflow") is not None
