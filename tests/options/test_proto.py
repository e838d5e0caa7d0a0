"""NpuConfig <-> ConfigProto: documented fields, exact round trips, seed examples, and import remarks."""

from __future__ import annotations

import re

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def _npu_map(proto):
    (custom,) = [c for c in proto.graph_options.rewrite_options.custom_optimizers if c.name == "NpuOptimizer"]
    return custom.parameter_map


def _seed_proto(*lines: str, namespace: dict | None = None):
    """A ConfigProto built the way the seed's sess.run example does, plus ``lines``."""
    code = "\n".join(
        [
            "config = tf.compat.v1.ConfigProto()",
            "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()",
            'custom_op.name = "NpuOptimizer"',
            'custom_op.parameter_map["use_off_line"].b = True',
            *lines,
            "config.graph_options.rewrite_options.remapping = RewriterConfig.OFF",
            "config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF",
        ]
    )
    scope = {"tf": tf, "RewriterConfig": RewriterConfig, **(namespace or {})}
    exec(code, scope)
    return scope["config"]


@pytest.mark.parametrize("spec", catalogue.specs(), ids=lambda s: s.key)
def test_each_option_builds_its_documented_field(spec, sample_values):
    for value in sample_values(spec):
        proto = NpuConfig({spec.key: value}).to_config_proto(validate=False)
        attr = _npu_map(proto)[spec.key]
        assert attr.WhichOneof("value") == spec.field
        stored = {"b": attr.b, "i": attr.i, "s": attr.s.decode("utf-8")}[spec.field]
        assert stored == (str(value) if spec.accepts_int else value)


def test_use_off_line_is_written_true_unless_set_and_rewrites_are_off():
    proto = NpuConfig().to_config_proto()
    assert _npu_map(proto)["use_off_line"].b is True
    rewrite = proto.graph_options.rewrite_options
    assert rewrite.remapping == RewriterConfig.OFF
    assert rewrite.memory_optimization == RewriterConfig.OFF  # what the docs assign (numerically MANUAL)
    assert _npu_map(NpuConfig(use_off_line=False).to_config_proto())["use_off_line"].b is False


def test_base_is_copied_and_its_npu_optimizer_updated_in_place():
    base = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    custom = base.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["precision_mode"].s = b"force_fp16"
    custom.parameter_map["mix_compile_mode"].b = True
    before = base.SerializeToString()
    proto = NpuConfig(precision_mode="allow_mix_precision").to_config_proto(base)
    assert base.SerializeToString() == before
    assert proto.allow_soft_placement is True
    assert len(proto.graph_options.rewrite_options.custom_optimizers) == 1
    params = _npu_map(proto)
    assert params["precision_mode"].s == b"allow_mix_precision" and params["mix_compile_mode"].b is True


def test_building_a_proto_validates_first():
    with pytest.raises(NpuConfigError, match="dump_path"):
        NpuConfig(enable_dump=True).to_config_proto()


def test_plain_tensorflow_runs_a_session_with_the_proto():
    graph = tf.Graph()
    with graph.as_default():
        total = tf.constant(2.0) * 3.0
    proto = NpuConfig(precision_mode="allow_mix_precision", mix_compile_mode=True).to_config_proto()
    with tf.compat.v1.Session(graph=graph, config=proto) as session:
        assert session.run(total) == 6.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_option_sets_round_trip_exactly(option_sets, data):
    config = NpuConfig(data.draw(option_sets()))
    proto = config.to_config_proto(validate=False)
    back = NpuConfig.from_config_proto(proto)
    expected = config.copy(use_off_line=None) if config.use_off_line is True else config
    assert back == expected
    assert back.import_warnings() == []
    assert back.to_config_proto(validate=False) == proto


def test_use_off_line_true_reads_back_as_the_unset_default():
    back = NpuConfig.from_config_proto(NpuConfig(use_off_line=True).to_config_proto())
    assert back.use_off_line is None and back.effective("use_off_line") is True


# ------------------------------------------------------------------ the seeds' own examples


def _seed_example_lines(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if re.match(r"\s*custom_op\.parameter_map\[", line) and "use_off_line" not in line
    ]


IN_OUT_NAMESPACE = {
    "all_graph_iop": [
        [
            ["import/conv2d_1/convolution"],
            ["import/conv2d_59/BiasAdd", "import/conv2d_67/BiasAdd", "import/conv2d_75/BiasAdd"],
        ]
    ]
}


def test_every_sess_run_example_line_rebuilds_identically_through_npuconfig(seed_text):
    lines = _seed_example_lines(seed_text("session-options-sess-run.zh.txt"))
    assert len(lines) >= 45
    for line in lines:
        proto = _seed_proto(line, namespace=IN_OUT_NAMESPACE)
        key, field = re.match(r"custom_op\.parameter_map\[[\"'](\w+)[\"']\]\.([bis])", line).groups()
        attr = _npu_map(proto)[key]
        value = {"b": attr.b, "i": attr.i, "s": attr.s}[field]
        direct = NpuConfig({key: value})
        assert direct.to_config_proto(validate=False) == proto, line
        imported = NpuConfig.from_config_proto(proto)
        assert imported == direct and imported.import_warnings() == [], line


def test_seed_session_device_id_example_rebuilds_identically():
    for device in (0, 1, 7):
        config_proto = tf.compat.v1.ConfigProto()
        custom_op = config_proto.graph_options.rewrite_options.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
        custom_op.parameter_map["session_device_id"].i = device
        config_proto.graph_options.rewrite_options.remapping = RewriterConfig.OFF
        config_proto.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
        # the seed leaves out use_off_line here; the adapter defaults it to True, and NpuConfig writes it
        ours = NpuConfig(session_device_id=device).to_config_proto()
        del _npu_map(ours)["use_off_line"]
        assert ours == config_proto
        assert NpuConfig.from_config_proto(config_proto) == NpuConfig(session_device_id=device)


def test_seed_mixed_precision_example_rebuilds_identically(seed_text):
    assert 'parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precisi' in seed_text(
        "mixed-precision.txt"
    )
    seed = _seed_proto('custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")')
    assert NpuConfig(precision_mode="allow_mix_precision").to_config_proto() == seed


def test_seed_in_out_pair_example_rebuilds_identically():
    seed = _seed_proto(
        'custom_op.parameter_map["mix_compile_mode"].b = True',
        "custom_op.parameter_map['in_out_pair_flag'].b = False",
        "custom_op.parameter_map['in_out_pair'].s = tf.compat.as_bytes(str(all_graph_iop))",
        namespace=IN_OUT_NAMESPACE,
    )
    ours = NpuConfig(
        mix_compile_mode=True, in_out_pair_flag=False, in_out_pair=str(IN_OUT_NAMESPACE["all_graph_iop"])
    ).to_config_proto()
    assert ours == seed


def test_seed_mixed_computing_example_rebuilds_identically(seed_text):
    assert "mix_compile_mode" in seed_text("mixed-computing.txt")
    seed = _seed_proto('custom_op.parameter_map["mix_compile_mode"].b = True')
    assert NpuConfig(mix_compile_mode=True).to_config_proto() == seed


# ------------------------------------------------------------------ importing what real scripts write


def _proto_with(*entries, name="NpuOptimizer"):
    proto = tf.compat.v1.ConfigProto()
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = name
    for key, field, value in entries:
        setattr(custom.parameter_map[key], field, value)
    return proto


def test_misspelt_and_foreign_keys_become_warnings_with_suggestions():
    proto = _proto_with(
        ("sfusion_switch_file", "s", b"fusion_switch.cfg"),
        ("fp_point", "s", b"conv1/Conv2D"),
        ("precision_mode", "s", b"allow_mix_precision"),
        ("precison_mode", "s", b"force_fp16"),
    )
    config = NpuConfig.from_config_proto(proto)
    assert config.changed() == {"precision_mode": "allow_mix_precision"}
    notes = config.import_warnings()
    assert len(notes) == 3
    assert any("sfusion_switch_file" in n and "'fusion_switch_file'" in n for n in notes)
    assert any("fp_point" in n and "profiling_options" in n for n in notes)
    assert any("precison_mode" in n and "did you mean 'precision_mode'" in n for n in notes)
    assert all(n in config.warnings() for n in notes)


def test_values_set_through_the_wrong_field_are_dropped_with_a_hint():
    proto = _proto_with(("precision_mode", "b", True), ("jit_compile", "b", True), ("op_debug_level", "s", b"2"))
    config = NpuConfig.from_config_proto(proto)
    assert config.changed() == {}
    notes = " | ".join(config.import_warnings())
    assert "precision_mode was set through .b" in notes and "reads .s" in notes
    assert "parameter_map['jit_compile'].s = b'true'" in notes
    assert "parameter_map['op_debug_level'].i = 2" in notes


def test_ints_assigned_to_bool_fields_read_as_true():
    proto = _proto_with(("dynamic_input", "b", 1), ("min_group_size", "b", 20))
    config = NpuConfig.from_config_proto(proto)
    assert config.dynamic_input is True and config.min_group_size is True
    assert any("min_group_size is ignored" in w for w in config.warnings())


def test_invalid_values_are_kept_as_the_adapter_reads_them_but_flagged():
    proto = _proto_with(
        ("profiling_mode", "b", True),
        ("profiling_options", "s", b"task_trace"),
        ("dump_debug_mode", "s", b"./test/output/over_dump"),
    )
    config = NpuConfig.from_config_proto(proto)
    assert config.profiling_options == "task_trace"
    assert config.dump_debug_mode == "./test/output/over_dump"
    notes = config.import_warnings()
    assert len(notes) == 2 and all("kept as the adapter reads it" in n for n in notes)
    with pytest.raises(NpuConfigError) as info:
        config.validate()
    assert len(info.value.problems) == 2
    config.profiling_options = '{"output":"./p","task_trace":"on"}'
    assert len(config.import_warnings()) == 1  # fixing the value clears its remark


def test_optimizers_with_another_name_are_reported_and_not_read():
    proto = _proto_with(("use_off_line", "b", True), ("precision_mode", "s", b"force_fp16"), name="NpuOptimizer1")
    config = NpuConfig.from_config_proto(proto)
    assert config.changed() == {}
    notes = " | ".join(config.import_warnings())
    assert "'NpuOptimizer1' is ignored" in notes and "no custom optimizer named 'NpuOptimizer'" in notes


def test_unnamed_optimizer_is_reported():
    config = NpuConfig.from_config_proto(_proto_with(("use_off_line", "b", True), name=""))
    assert any("(no name)" in n for n in config.import_warnings())


def test_later_npu_optimizer_entries_override_earlier_ones_key_by_key():
    proto = _proto_with(("precision_mode", "s", b"force_fp16"), ("mix_compile_mode", "b", True))
    second = proto.graph_options.rewrite_options.custom_optimizers.add()
    second.name = "NpuOptimizer"
    second.parameter_map["precision_mode"].s = b"force_fp32"
    config = NpuConfig.from_config_proto(proto)
    assert config.changed() == {"mix_compile_mode": True, "precision_mode": "force_fp32"}


def test_strict_import_raises_listing_every_problem_and_returns_nothing():
    proto = _proto_with(("sump_mode", "s", b"all"), ("precision_mode", "b", True), ("dump_mode", "s", b"everything"))
    with pytest.raises(NpuConfigError) as info:
        NpuConfig.from_config_proto(proto, strict=True)
    assert len(info.value.problems) == 3
    assert "did you mean 'dump_mode'" in str(info.value)
    assert NpuConfig.from_config_proto(_proto_with(("dump_mode", "s", b"all")), strict=True).dump_mode == "all"


def test_copy_keeps_import_remarks():
    config = NpuConfig.from_config_proto(_proto_with(("fp_point", "s", b"x")))
    assert config.copy().import_warnings() == config.import_warnings() != []


def test_serialized_protos_import_too():
    proto = NpuConfig(precision_mode="force_fp32").to_config_proto()
    assert NpuConfig.from_config_proto(proto.SerializeToString()) == NpuConfig(precision_mode="force_fp32")
