"""The real adapter's handoff, proved on the adapter test double (tests/adapter_double).

The double records what a ``Session`` received (deterministically serialised) and what ``NPURunConfig``
was given, so these tests compare bytes and arguments, not our own reading of them.
"""

from __future__ import annotations

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from npu_jupyter._display.mime import MIME_TYPE
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime import backends

tf = pytest.importorskip("tensorflow")

GRAPH = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
    y = tf.reduce_sum(tf.nn.relu(x * 2.0, name="act"), name="total")
"""


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.multiply(x, 2.0, name="y")
    return g


def test_auto_picks_the_adapter_when_npu_bridge_imports(adapter_double):
    assert backends.ascend_available()
    assert backends.available_backends() == ["ascend", "emulator"]
    sess = backends.session(NpuConfig(precision_mode="force_fp16"), _graph())
    try:
        assert sess.backend == "ascend" and isinstance(sess, tf.compat.v1.Session)
        assert sess.run("y:0", {"x:0": [1.0, 2.0]}).tolist() == [2.0, 4.0]
    finally:
        sess.close()


def test_the_session_receives_exactly_the_config_proto_of_the_config(adapter_double):
    config = NpuConfig(precision_mode="allow_mix_precision", mix_compile_mode=True, op_debug_level=1)
    expected = config.to_config_proto().SerializeToString(deterministic=True)
    with backends.session(config, _graph(), backend="ascend"):
        pass
    assert adapter_double.session_configs == [expected]


def test_a_hand_written_proto_reaches_the_adapter_with_its_other_settings_kept(adapter_double):
    proto = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=3, allow_soft_placement=True)
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["precision_mode"].s = b"force_fp32"
    custom.parameter_map["use_off_line"].b = True
    with backends.session(proto, _graph()):
        pass
    [handed] = adapter_double.session_configs
    received = tf.compat.v1.ConfigProto.FromString(handed)
    assert received.intra_op_parallelism_threads == 3
    assert handed == NpuConfig.from_config_proto(proto).to_config_proto(proto).SerializeToString(deterministic=True)


def test_npu_cell_hands_the_adapter_the_merged_config_byte_for_byte(adapter_double, ip):
    ip.run_line_magic("npu", "set precision_mode=allow_fp32_to_fp16 enable_small_channel=1")
    cell = (
        GRAPH
        + """
with tf.compat.v1.Session(graph=g) as sess:
    value = sess.run(y, {x: np.ones((2, 3), np.float32)})
    kind = type(sess).__name__
"""
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision force_fp16 --mix", cell)
    assert ip.user_ns["kind"] == "AscendSession" and ip.user_ns["value"] == 12.0
    expected = NpuConfig(precision_mode="force_fp16", enable_small_channel=1, mix_compile_mode=True)
    assert adapter_double.session_configs == [expected.to_config_proto().SerializeToString(deterministic=True)]
    [report] = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    assert report["run"]["backend"] == "ascend"


def test_npu_cell_keeps_the_users_own_proto_settings_for_the_adapter(adapter_double, ip):
    cell = (
        GRAPH
        + """
proto = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
custom = proto.graph_options.rewrite_options.custom_optimizers.add()
custom.name = "NpuOptimizer"
custom.parameter_map["precision_mode"].s = b"force_fp32"
custom.parameter_map["enable_dump"].b = False
with tf.compat.v1.Session(graph=g, config=proto) as sess:
    sess.run(y, {x: np.ones((2, 3), np.float32)})
"""
    )
    with capture_output():
        ip.run_cell_magic("npu", "--set op_debug_level=2", cell)
    proto = ip.user_ns["proto"]
    base = type(proto)()
    base.CopyFrom(proto)
    del base.graph_options.rewrite_options.custom_optimizers[:]
    expected = NpuConfig(precision_mode="force_fp32", enable_dump=False, op_debug_level=2).to_config_proto(base)
    assert adapter_double.session_configs == [expected.SerializeToString(deterministic=True)]


def test_npu_run_config_code_hands_the_adapter_exactly_the_config_kwargs(adapter_double):
    config = NpuConfig(
        precision_mode="allow_mix_precision",
        enable_dump=True,
        dump_path="/tmp",
        iterations_per_loop=10,
        op_debug_level=1,
    )
    exec(config.to_code(api="estimator"), {})
    assert adapter_double.run_configs == [config.to_run_config_kwargs()]


def test_a_script_importing_npu_bridge_keeps_working_inside_an_npu_cell(adapter_double, ip):
    cell = """
import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu import npu_scope
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
    with npu_scope.without_npu_compile_scope():
        h = tf.identity(x, name="on_host")
    y = tf.reduce_sum(npu_ops.dropout(h, 1.0), name="y")
config = npu_config_proto(tf.compat.v1.ConfigProto())
with tf.compat.v1.Session(graph=g, config=config) as sess:
    value = sess.run(y, {x: np.ones(4, np.float32)})
    kind = type(sess).__name__
"""
    with capture_output():
        ip.run_cell_magic("npu", "--precision force_fp32", cell)
    assert ip.user_ns["value"] == 4.0 and ip.user_ns["kind"] == "AscendSession"
    received = tf.compat.v1.ConfigProto.FromString(adapter_double.session_configs[-1])
    assert received.allow_soft_placement  # npu_config_proto's setting reached the adapter


def test_the_tf2_adapter_double_records_options_set_by_a_script(adapter_double):
    import npu_device

    npu_device.global_options().precision_mode = "allow_mix_precision"
    npu_device.open().as_default()
    assert adapter_double.device_calls == [("open", {"precision_mode": "allow_mix_precision"})]


def test_the_double_leaves_no_trace_after_the_test(adapter_double):
    import npu_bridge.npu_init  # noqa: F401 - wraps Session.__init__ as the real one does
    from tensorflow.python.client import session

    assert session.Session.__init__ is not adapter_double.original_session_init


def test_after_the_double_the_emulator_is_chosen_again(no_adapter):
    assert not backends.ascend_available()
    from tensorflow.python.client import session

    assert "recording" not in getattr(session.Session.__init__, "__qualname__", "")
    with backends.session(None, _graph()) as sess:
        assert sess.backend == "emulator"
        assert np.allclose(sess.run("y:0", {"x:0": [1.0, 2.0]}), [2.0, 4.0])
