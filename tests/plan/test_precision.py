"""Precision decisions per mode, lists, files and scopes on real TF graphs (tests/data/reference/ADAPTER-FACTS.md §4)."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

from npu_jupyter._options.snapshot import ConfigSnapshot
from npu_jupyter._plan.planner import plan
from npu_jupyter._plan.precision import effective_mode
from npu_jupyter._plan.settings import read_settings
from npu_jupyter.scope import keep_dtype_scope, without_npu_compile_scope


def _after(p, name):
    return p.ops[name].dtype_after


# ---- defaults ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "soc", "mode"),
    [
        ({}, "Ascend910", "allow_fp32_to_fp16"),
        ({"graph_run_mode": 0}, "Ascend910", "force_fp16"),
        ({}, "Ascend910B", "must_keep_origin_dtype"),
        ({"precision_mode_v2": "mixed_float16"}, "Ascend910", "mixed_float16"),
        ({"precision_mode": "force_fp32"}, "Ascend910B", "force_fp32"),
    ],
)
def test_effective_mode_follows_precision_mode_then_v2_then_the_soc_default(options, soc, mode):
    assert effective_mode(read_settings(ConfigSnapshot.checked(options), soc)).name == mode


def test_plan_records_the_effective_mode_and_soc(conv_net):
    p = plan(conv_net, soc="Ascend910B")
    assert p.precision_mode == "must_keep_origin_dtype"
    assert p.soc == "Ascend910B"


# ---- each mode on conv + matmul + softmax ------------------------------------------------------


def test_cube_ops_go_to_float16_and_vector_ops_keep_float32_under_allow_fp32_to_fp16(conv_net):
    p = plan(conv_net, {"precision_mode": "allow_fp32_to_fp16"})
    assert _after(p, "conv") == "float16" and _after(p, "mm") == "float16"
    assert "cube op" in p.ops["mm"].precision_reason
    assert _after(p, "relu") == "float32" and _after(p, "probs") == "float32"
    assert p.ops["mm"].input_dtypes == ["float16", "float16"]
    assert p.ops["probs"].input_dtypes == ["float32"]


def test_every_float_tensor_goes_to_float16_under_force_fp16(conv_net):
    p = plan(conv_net, {"precision_mode": "force_fp16"})
    for name in ("conv", "relu", "mm", "logits", "probs", "total"):
        assert _after(p, name) == "float16", name
    assert p.ops["x"].dtype_after == "float32"  # Placeholder: GE plumbing keeps the fed dtype


def test_precision_mode_v2_fp16_matches_force_fp16(conv_net):
    a = plan(conv_net, {"precision_mode": "force_fp16"})
    b = plan(conv_net, {"precision_mode_v2": "fp16"})
    assert [d.output_dtypes for d in a.ops.values()] == [d.output_dtypes for d in b.ops.values()]


def test_matmul_falls_back_to_ai_cpu_under_must_keep_origin_dtype_on_ascend910(conv_net):
    p = plan(conv_net, {"precision_mode": "must_keep_origin_dtype"})
    mm = p.ops["mm"]
    assert mm.engine == "AI_CPU" and mm.placement == "device"
    assert mm.dtype_after == "float32"
    assert "falls back to the AI CPU kernel" in mm.precision_reason


def test_conv_without_any_float32_kernel_is_a_compile_error_under_must_keep_origin_dtype(conv_net):
    p = plan(conv_net, {"precision_mode": "must_keep_origin_dtype"})
    assert any(e.startswith("conv (Conv2D)") and "float32" in e for e in p.errors)


def test_must_keep_origin_dtype_keeps_float32_on_the_ai_core_of_ascend910b(conv_net):
    p = plan(conv_net, soc="Ascend910B")
    assert p.ops["mm"].engine == "AI_CORE"
    assert all(d.dtype_after == d.dtype_before for d in p.ops.values())
    assert p.errors == []


def test_precision_mode_v2_origin_matches_must_keep_origin_dtype(conv_net):
    a = plan(conv_net, {"precision_mode": "must_keep_origin_dtype"}, soc="Ascend910B")
    b = plan(conv_net, {"precision_mode_v2": "origin"}, soc="Ascend910B")
    assert [d.output_dtypes for d in a.ops.values()] == [d.output_dtypes for d in b.ops.values()]


@pytest.mark.parametrize("mode", ["force_fp32", "cube_fp16in_fp32out"])
def test_cube_ops_read_float16_and_write_float32_under_force_fp32(conv_net, mode):
    p = plan(conv_net, {"precision_mode": mode})
    mm = p.ops["mm"]
    assert mm.input_dtypes == ["float16", "float16"] and mm.output_dtypes == ["float32"]
    assert _after(p, "relu") == "float32"
    # reading float16 is a precision change although the output dtype is not (issue 19)
    assert mm.lowered_reads == ["float16"] and mm.precision_changed and not p.ops["relu"].precision_changed
    assert p.summary()["precision_changed"] == sum(d.input_dtypes != d.declared_input_dtypes for d in p.ops.values())


def test_mixed_precision_white_goes_float16_black_keeps_float32_gray_follows(conv_net):
    p = plan(conv_net, {"precision_mode": "allow_mix_precision"})
    assert (p.ops["mm"].policy, _after(p, "mm")) == ("white", "float16")
    assert (p.ops["logits"].policy, _after(p, "logits")) == ("gray", "float16")
    assert "follows its producer" in p.ops["logits"].precision_reason
    assert _after(p, "probs") == "float16"
    assert (p.ops["total"].policy, _after(p, "total")) == ("black", "float32")
    assert p.ops["total"].input_dtypes[0] == "float32"


def test_gray_op_fed_from_the_host_uses_allow_fp32_to_fp16():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        with without_npu_compile_scope():
            h = tf.square(x, name="host_square")
        tf.nn.relu(h, name="relu")
    p = plan(g, {"precision_mode": "allow_mix_precision", "mix_compile_mode": True})
    assert _after(p, "relu") == "float32"
    assert "no producer inside the GeOp" in p.ops["relu"].precision_reason


def test_gray_op_jumps_over_an_up_cast_to_follow_the_float16_before_it():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float16, [2, 2], name="x")
        up = tf.cast(x, tf.float32, name="up")
        tf.nn.relu(up, name="relu")
    p = plan(g, {"precision_mode": "allow_mix_precision"})
    assert "Cast is dtype-sensitive" in p.ops["up"].precision_reason
    assert _after(p, "up") == "float32"
    assert _after(p, "relu") == "float16"


def test_an_argmax_reading_its_float16_producer_did_not_change_precision():
    """Reviewer: ArgMax counted as "changed precision" under allow_mix_precision, though its int64 output
    does not change and it reads the float16 its producer wrote: the adapter inserts a Cast only where
    producer and consumer dtypes differ (FE dtype selection, ADAPTER-FACTS 4.2), so none is before it."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        w = v1.placeholder(tf.float32, [8, 3], name="w")
        logits = tf.matmul(x, w, name="mm")
        tf.argmax(logits, 1, name="pred")
    p = plan(g, {"precision_mode": "allow_mix_precision"})
    pred = p.ops["pred"]
    assert _after(p, "mm") == "float16" and pred.input_dtypes[0] == "float16" and pred.dtype_after == "int64"
    assert pred.followed_reads == ["float16"] and pred.lowered_reads == [] and not pred.precision_changed
    assert p.summary()["precision_changed"] == 1  # the MatMul only


def test_a_cast_before_an_op_is_still_a_precision_change_of_that_op(conv_net):
    """force_fp32 cube ops read float16 of a float32 producer: rounded at that op, so counted (issue 19)."""
    mm = plan(conv_net, {"precision_mode": "force_fp32"}).ops["mm"]
    assert mm.producer_dtypes[0] == "float32" and mm.lowered_reads == ["float16"] and mm.followed_reads == []


def test_bf16_modes_are_refused_on_ascend910_and_applied_on_ascend910b(conv_net):
    p910 = plan(conv_net, {"precision_mode": "allow_mix_precision_bf16"})
    assert any("Current soc not support dtype of BFloat16" in e for e in p910.errors)
    p910b = plan(conv_net, {"precision_mode_v2": "mixed_bfloat16"}, soc="Ascend910B")
    assert p910b.errors == []
    assert _after(p910b, "mm") == "bfloat16"
    assert _after(p910b, "total") == "float32"


def test_allow_fp32_to_bf16_keeps_float32_where_the_kernel_supports_it(conv_net):
    p = plan(conv_net, {"precision_mode": "allow_fp32_to_bf16"}, soc="Ascend910B")
    assert _after(p, "mm") == "float32" and _after(p, "probs") == "float32"


def test_host_ops_keep_their_original_dtype(conv_net):
    p = plan(conv_net, {"precision_mode": "force_fp16", "use_off_line": False})
    assert all(d.dtype_after == d.dtype_before for d in p.ops.values())
    assert p.ops["mm"].precision_reason == "runs on the host in its original dtype"


def test_host_ops_that_share_an_answer_keep_their_own_dtypes():
    """Host ops share one precision answer per pair of dtype lists: ops whose outputs match but whose
    inputs differ (AsString of a float and of an int) each keep their own input dtypes."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
        k = tf.compat.v1.placeholder(tf.int32, [4], name="k")
        tf.strings.as_string(x, name="sx")
        tf.strings.as_string(k, name="sk")
        tf.strings.as_string(x * 2.0, name="sx2")
    p = plan(g, {"mix_compile_mode": True, "precision_mode": "force_fp16"}, fetches=["sx", "sk", "sx2"])
    host = {name: p.ops[name] for name in ("sx", "sk", "sx2")}
    assert all(d.engine == "HOST" for d in host.values())
    assert list(host["sx"].input_dtypes) == list(host["sx2"].input_dtypes) == ["float32"]
    assert list(host["sk"].input_dtypes) == ["int32"]
    assert all(list(d.output_dtypes) == ["string"] for d in host.values())


# ---- scopes and files -------------------------------------------------------------------------


def test_keep_dtype_scope_keeps_float32_for_a_cube_op_that_supports_it():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2, 2], name="x")
        with keep_dtype_scope():
            kept = tf.matmul(x, x, name="kept")
        tf.matmul(kept, x, name="plain")
    p = plan(g, {"precision_mode": "allow_fp32_to_fp16"}, soc="Ascend910B")
    assert _after(p, "kept") == "float32" and "_keep_dtype" in p.ops["kept"].precision_reason
    assert _after(p, "plain") == "float16"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_modify_mixlist_moves_ops_between_lists_by_ascend_or_tensorflow_name(conv_net, tmp_path):
    mix = _write(tmp_path, "mix.json", '{"black-list": {"to-add": ["Softmax", "MatMulV2"]}}')
    p = plan(conv_net, {"precision_mode": "allow_mix_precision", "modify_mixlist": mix}, soc="Ascend910B")
    assert p.ops["mm"].policy == "black" and _after(p, "mm") == "float32"
    assert p.ops["probs"].policy == "black" and "modify_mixlist" in p.ops["probs"].precision_reason
    assert p.errors == []


def test_modify_mixlist_removing_from_white_only_makes_the_op_gray(conv_net, tmp_path):
    mix = _write(tmp_path, "mix.json", '{"white-list": {"to-remove": ["MatMul"]}}')
    p = plan(conv_net, {"precision_mode": "allow_mix_precision", "modify_mixlist": mix})
    assert p.ops["mm"].policy == "gray"


def test_modify_mixlist_warns_about_names_that_match_no_op_type(conv_net, tmp_path):
    mix = _write(tmp_path, "mix.json", '{"gray-list": {"to-add": ["NotAnOp"]}}')
    p = plan(conv_net, {"precision_mode": "allow_mix_precision", "modify_mixlist": mix})
    assert any("'NotAnOp'" in w and "matches no Ascend IR op type" in w for w in p.warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"grey-list": {"to-add": ["Relu"]}}', "should be 'gray-list' or 'white-list' or 'black-list'"),
        ('{"gray-list": {"add": ["Relu"]}}', "should be 'to-add' or 'to-remove'"),
        ('{"gray-list": {"to-add": "Relu"}}', "under 'gray-list'/'to-add' should be array"),
        ('{"gray-list": ["Relu"]}', "Second level of json file"),
        ('{"gray-list": {"to-add": ["Relu"]}, "red-list": {}}', "got 'red-list'"),
        (
            '{"gray-list": {"to-add": ["Relu"]}, "white-list": {"to-add": ["Relu"]}}',
            "Operation add-gray+add-white for op Relu is invalid",
        ),
    ],
)
def test_malformed_modify_mixlist_is_an_error_with_the_graph_engine_text(conv_net, tmp_path, text, message):
    mix = _write(tmp_path, "mix.json", text)
    p = plan(conv_net, {"precision_mode": "allow_mix_precision", "modify_mixlist": mix})
    assert any(message in e for e in p.errors), p.errors


def test_modify_mixlist_without_a_mixed_mode_is_the_adapter_error(conv_net, tmp_path):
    mix = _write(tmp_path, "mix.json", '{"gray-list": {"to-add": ["Relu"]}}')
    p = plan(conv_net, {"precision_mode": "force_fp16", "modify_mixlist": mix})
    assert any(e.startswith("modify_mixlist is assigned, please ensure that precision_mode") for e in p.errors)


def test_customize_dtypes_sets_dtypes_by_op_name_and_by_op_type(conv_net, tmp_path):
    rules = _write(
        tmp_path,
        "cust.cfg",
        "relu::InputDtype:float16,OutputDtype:float16\nOpType::MatMulV2:InputDtype:float,float,OutputDtype:float\n",
    )
    p = plan(conv_net, {"customize_dtypes": rules}, soc="Ascend910B")
    p2 = plan(conv_net, {"customize_dtypes": rules, "precision_mode": "allow_fp32_to_fp16"}, soc="Ascend910B")
    assert p.ops["relu"].dtype_after == "float32"  # ignored under must_keep_origin_dtype
    assert any("no effect under must_keep_origin_dtype" in w for w in p.warnings)
    assert p2.ops["relu"].input_dtypes == ["float16"] and _after(p2, "relu") == "float16"
    assert _after(p2, "mm") == "float32" and "customize_dtypes line 2" in p2.ops["mm"].precision_reason


def test_customize_dtypes_accepts_tensorflow_op_type_names(conv_net, tmp_path):
    rules = _write(tmp_path, "cust.cfg", "OpType::Softmax:OutputDtype:float16\n")
    p = plan(conv_net, {"customize_dtypes": rules})
    assert _after(p, "probs") == "float16"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("relu::OutputDtype:float16,InputDtype:float16\n", "The content format of the customization file is incorrect"),
        ("relu::InputDtype:half\n", "half is an invalid dtype"),
        ("# comment\nrelu::InputDtype:float16\n", "comment lines are not skipped"),
    ],
)
def test_malformed_customize_dtypes_rejects_the_whole_file(conv_net, tmp_path, text, message):
    rules = _write(tmp_path, "cust.cfg", text)
    p = plan(conv_net, {"customize_dtypes": rules})
    assert any(message in e for e in p.errors), p.errors
    assert _after(p, "relu") == "float32"


@pytest.mark.parametrize(
    ("token", "dtype"),
    [
        ("float32", "float32"),
        ("FLOAT", "float32"),
        ("bfloat16", "bfloat16"),
        ("Float16", "float16"),
        ("double", "float64"),
    ],
)
def test_customize_dtypes_accepts_every_name_of_ges_dtype_table(conv_net, tmp_path, token, dtype):
    # FE looks "DT_" + token.upper() up in GE's kStringTodataTypeMap, which holds DT_FLOAT32 and DT_BFLOAT16
    rules = _write(tmp_path, "cust.cfg", f"mm::InputDtype:{token},{token},OutputDtype:{token}\n")
    p = plan(conv_net, {"customize_dtypes": rules, "precision_mode": "force_fp16"})
    assert not p.errors, p.errors
    assert _after(p, "mm") == dtype and "customize_dtypes line 1" in p.ops["mm"].precision_reason


@pytest.mark.parametrize("token", ["bf16", "undefined", "fp32"])
def test_customize_dtypes_refuses_names_outside_ges_table(conv_net, tmp_path, token):
    rules = _write(tmp_path, "cust.cfg", f"mm::OutputDtype:{token}\n")
    p = plan(conv_net, {"customize_dtypes": rules, "precision_mode": "force_fp16"})
    assert any(f"{token} is an invalid dtype" in e and "float32" in e for e in p.errors), p.errors
    assert _after(p, "mm") == "float16"


def test_customize_dtypes_keeps_the_op_dtype_for_a_ge_only_dtype(conv_net, tmp_path):
    rules = _write(tmp_path, "cust.cfg", "mm::OutputDtype:hifloat8\n")
    p = plan(conv_net, {"customize_dtypes": rules, "precision_mode": "allow_fp32_to_fp16"})
    assert not p.errors, p.errors
    assert any("hifloat8" in w and "no TensorFlow equivalent" in w for w in p.warnings), p.warnings


@pytest.fixture
def batch_matmul_net():
    """One MatMul (IR MatMulV2) and one rank-3 matmul (TF's BatchMatMulV2, IR BatchMatMulV2)."""
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [2, 3, 4], name="a")
        b = tf.constant(0.5, tf.float32, [2, 4, 5], name="b")
        tf.matmul(a, b, name="bmm")
        tf.matmul(v1.placeholder(tf.float32, [3, 4], name="x"), tf.constant(0.5, tf.float32, [4, 5]), name="mm")
    return g


# The ModelZoo's SVD_ID2019 switch_config.txt names the IR types MatMulV2, BatchMatMul and BatchMatMulV2, one
# line each; the fusion engine matches these names literally, so no line repeats another.
SVD_SWITCH = (
    "OpType::MatMulV2:InputDtype:float16,float16,float32,OutputDtype:float32\n"
    "OpType::BatchMatMul:InputDtype:float16,float16,OutputDtype:float32\n"
    "OpType::BatchMatMulV2:InputDtype:float16,float16,OutputDtype:float32\n"
)


def test_customize_dtypes_lines_for_batchmatmul_and_batchmatmulv2_do_not_repeat_each_other(batch_matmul_net, tmp_path):
    p = plan(batch_matmul_net, {"customize_dtypes": _write(tmp_path, "switch.txt", SVD_SWITCH)})
    assert not p.errors and not [w for w in p.warnings if "repeats" in w], p.warnings
    assert "customize_dtypes line 3: OpType::BatchMatMulV2" in p.ops["bmm"].precision_reason
    assert "customize_dtypes line 1: OpType::MatMulV2" in p.ops["mm"].precision_reason


@pytest.mark.parametrize("order", [("BatchMatMul", "BatchMatMulV2"), ("BatchMatMulV2", "BatchMatMul")])
def test_customize_dtypes_rule_naming_the_ir_type_wins_over_a_tensorflow_name_reading(
    batch_matmul_net, tmp_path, order
):
    dtype = {"BatchMatMul": "float16", "BatchMatMulV2": "float32"}
    text = "".join(f"OpType::{t}:InputDtype:{dtype[t]},{dtype[t]},OutputDtype:{dtype[t]}\n" for t in order)
    p = plan(batch_matmul_net, {"customize_dtypes": _write(tmp_path, "c.cfg", text), "precision_mode": "force_fp16"})
    assert p.ops["bmm"].input_dtypes == ["float32", "float32"] and _after(p, "bmm") == "float32"
    assert "OpType::BatchMatMulV2" in p.ops["bmm"].precision_reason and not p.warnings, p.warnings


def test_customize_dtypes_still_warns_about_a_type_named_twice(batch_matmul_net, tmp_path):
    text = "OpType::BatchMatMulV2:OutputDtype:float16\nOpType::BatchMatMulV2:OutputDtype:float32\n"
    p = plan(batch_matmul_net, {"customize_dtypes": _write(tmp_path, "c.cfg", text), "precision_mode": "force_fp32"})
    assert any("line 2 repeats line 1's rule for BatchMatMulV2: ignored" in w for w in p.warnings), p.warnings
    assert _after(p, "bmm") == "float16"


def test_modify_mixlist_may_put_batchmatmul_and_batchmatmulv2_on_different_lists(batch_matmul_net, tmp_path):
    mix = _write(
        tmp_path, "mix.json", '{"black-list": {"to-add": ["BatchMatMul"]}, "white-list": {"to-add": ["BatchMatMulV2"]}}'
    )
    p = plan(batch_matmul_net, {"precision_mode": "allow_mix_precision", "modify_mixlist": mix})
    assert p.errors == [] and p.ops["bmm"].policy == "white"


def test_unreadable_precision_file_is_an_error(conv_net, tmp_path):
    p = plan(conv_net, {"customize_dtypes": str(tmp_path / "missing.cfg")})
    assert any("customize_dtypes file" in e and "cannot be read" in e for e in p.errors)


def test_op_select_implmode_is_recorded_for_the_listed_op_types_only(conv_net):
    p = plan(conv_net, {"op_select_implmode": "high_precision", "optypelist_for_implmode": "MatMulV2,Softmax"})
    assert p.ops["mm"].impl_mode == "high_precision" and p.ops["probs"].impl_mode == "high_precision"
    assert p.ops["relu"].impl_mode is None


def test_op_precision_mode_file_wins_over_op_select_implmode(conv_net, tmp_path):
    ini = _write(tmp_path, "ops.ini", "[ByOpType]\nSoftmaxV2=high_performance\n[ByNodeName]\nrelu=high_precision\n")
    p = plan(conv_net, {"op_precision_mode": ini, "op_select_implmode": "high_precision_for_all"})
    assert p.ops["probs"].impl_mode == "high_performance"
    assert p.ops["relu"].impl_mode == "high_precision"
    assert p.ops["mm"].impl_mode == "high_precision_for_all"


# ---- one answer per (op type, dtypes) ------------------------------------------------------------


def _mixed_dtype_graph():
    """The same op types on float32 and float16 data, from the device and from the host, one in a
    keep_dtype scope, and two convolutions that are a compile error under must_keep_origin_dtype."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.constant(0.5, tf.float32, [8, 8], name="w")
        a = tf.matmul(x, w, name="mm32")
        h = tf.cast(a, tf.float16, name="to16")
        b = tf.matmul(h, tf.cast(w, tf.float16), name="mm16")
        host = v1.py_func(lambda t: t, [a], tf.float32, name="host")
        host.set_shape([4, 8])
        tf.add(a, a, name="add_after_mm")  # gray: follows a white-list producer under mixed precision
        tf.add(host, host, name="add_after_host")  # gray, fed from the host
        tf.add(tf.cast(b, tf.float32), 1.0, name="add_after_up_cast")
        with keep_dtype_scope():
            tf.matmul(a, w, name="mm_kept")
        tf.nn.relu(b, name="relu16")
        tf.nn.relu(a, name="relu32")
        tf.cast(tf.argmax(b, 1), tf.float32, name="argmax_then_cast")
        image = tf.reshape(x, [1, 4, 8, 1])
        f = tf.constant(0.1, tf.float32, [3, 3, 1, 1])
        for name in ("conv_a", "conv_b"):  # an error names each op: no float32 conv kernel on Ascend910
            tf.nn.conv2d(image, f, strides=1, padding="SAME", name=name)
    return g


@pytest.mark.parametrize(
    ("options", "soc"),
    [
        ({}, "Ascend910"),
        ({"precision_mode": "force_fp16"}, "Ascend910"),
        ({"precision_mode": "must_keep_origin_dtype"}, "Ascend910"),
        ({"precision_mode": "must_keep_origin_dtype"}, "Ascend910B"),
        ({"precision_mode": "allow_mix_precision"}, "Ascend910"),
        ({"precision_mode": "allow_mix_precision", "mix_compile_mode": True}, "Ascend910"),
        ({"precision_mode": "force_fp32"}, "Ascend910B"),
        ({"precision_mode": "allow_fp32_to_bf16"}, "Ascend910B"),
        ({"precision_mode_v2": "mixed_bfloat16"}, "Ascend910B"),
        ({"op_select_implmode": "high_precision", "optypelist_for_implmode": "MatMul"}, "Ascend910"),
    ],
)
def test_answers_shared_by_op_type_and_dtypes_equal_deciding_every_op(monkeypatch, options, soc):
    """The planner reuses one answer for ops that only their type and dtypes tell apart; deciding
    every op on its own (no shared answers) must give the same plan, findings included."""
    import models

    from npu_jupyter._plan import precision

    graphs = [_mixed_dtype_graph(), models.mlp_v1().graph, models.cnn_v1().graph]
    shared = [plan(g, options, soc=soc) for g in graphs]
    shared_answers = []
    decide_all = precision._Decider.__init__

    def every_op_decided(self, *args, **kwargs):
        decide_all(self, *args, **kwargs)
        shared_answers.append(self._answers)
        self._answers = None

    monkeypatch.setattr(precision._Decider, "__init__", every_op_decided)
    alone = [plan(g, options, soc=soc) for g in graphs]
    assert all(answers is not None for answers in shared_answers)  # the config allows sharing
    for s, a in zip(shared, alone):
        assert s.ops == a.ops
        assert (s.errors, s.warnings) == (a.errors, a.warnings)
    # sharing a list between decisions is safe only because no decision can change it
    from npu_jupyter._plan.model import _LIST_FIELDS
    from npu_jupyter._plan.readonly import ReadOnlyList

    for p in shared + alone:
        assert {type(getattr(d, f)) for d in p.ops.values() for f in _LIST_FIELDS} == {ReadOnlyList}


def test_device_ops_of_one_type_and_dtypes_share_one_answer(monkeypatch):
    """Answers are keyed by the identities of the view's dtype lists, which are interned: were equal
    dtypes ever two objects, every op would be decided on its own again (same plan, several times the
    work), which the equivalence test above cannot see."""
    import models

    from npu_jupyter._plan import precision

    deciders = []
    init = precision._Decider.__init__

    def kept(self, *args, **kwargs):
        init(self, *args, **kwargs)
        deciders.append(self)

    monkeypatch.setattr(precision._Decider, "__init__", kept)
    p = plan(models.cnn_v1().graph, {"precision_mode": "allow_fp32_to_fp16"})
    on_device = sum(d.placement == "device" for d in p.ops.values())
    assert on_device > 150
    assert 0 < len(deciders[0]._answers) < on_device / 3  # 47 answers for 185 ops when written
