"""Backend choice: ascend when npu_bridge is installed, the emulator otherwise."""

from __future__ import annotations

import subprocess
import sys

import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime import backends


def test_unknown_backend_lists_the_choices():
    with pytest.raises(ValueError, match="'auto', 'ascend', 'emulator'"):
        backends.session(backend="gpu")


def test_ascend_without_npu_bridge_names_it_and_the_alternative(tf):
    if backends.ascend_available():
        pytest.skip("npu_bridge is installed here")
    with pytest.raises(RuntimeError, match="npu_bridge.*backend='emulator'"):
        backends.session(NpuConfig(), tf.Graph(), backend="ascend")


def test_auto_picks_the_emulator_without_npu_bridge(tf):
    assert backends.available_backends()[-1] == "emulator"
    if backends.ascend_available():
        pytest.skip("npu_bridge is installed here")
    sess = backends.session(None, tf.Graph())
    assert sess.backend == "emulator"
    sess.close()


def test_a_hand_written_config_proto_is_read_and_kept(tf):
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    proto = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["use_off_line"].b = True
    custom.parameter_map["precision_mode"].s = b"force_fp16"
    proto.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    sess = backends.session(proto, tf.Graph(), backend="emulator")
    assert sess.config.precision_mode == "force_fp16"
    assert sess._proto().allow_soft_placement
    sess.close()


def test_only_the_inner_session_runs_without_grappler_the_users_and_the_adapters_protos_keep_it(tf):
    cfg = NpuConfig(precision_mode="allow_mix_precision")
    user_proto = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    sess = backends.session(user_proto, tf.Graph(), backend="emulator")
    assert sess._proto().graph_options.rewrite_options.disable_meta_optimizer
    assert not user_proto.graph_options.rewrite_options.disable_meta_optimizer
    assert not cfg.to_config_proto().graph_options.rewrite_options.disable_meta_optimizer
    sess.close()


def test_a_config_of_the_wrong_type_is_one_clear_error():
    with pytest.raises(TypeError, match="NpuConfig, a tf.compat.v1.ConfigProto"):
        backends.session(config=42)


def test_session_copies_the_config_so_later_edits_do_not_leak_in(tf):
    cfg = NpuConfig(precision_mode="force_fp32")
    sess = backends.session(cfg, tf.Graph(), backend="emulator")
    cfg.precision_mode = "force_fp16"
    assert sess.config.precision_mode == "force_fp32"
    sess.close()


def test_importing_the_backends_module_does_not_import_tensorflow():
    code = "import sys, npu_jupyter._runtime.backends as b; b.available_backends(); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
