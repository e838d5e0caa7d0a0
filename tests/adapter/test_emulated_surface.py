"""The emulated npu_bridge surface: opt-in, never over a real adapter, clear about what it lacks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from IPython.core.error import UsageError

from npu_jupyter import adapter
from npu_jupyter.adapter.surface import NotEmulatedError, reasons, spec_table

TF1_ROOTS = ("npu_bridge", "hccl")  # the TF1 adapter and CANN's HCCL API it re-exports
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime import backends

tf = pytest.importorskip("tensorflow")


def test_nothing_is_emulated_until_asked(no_adapter):
    assert not adapter.is_emulated()
    with pytest.raises(ImportError):
        import npu_bridge  # noqa: F401


def test_star_import_of_npu_init_brings_the_emulated_names(emulated):
    namespace: dict = {}
    exec("from npu_bridge.npu_init import *", namespace)
    for name in (
        "NPURunConfig",
        "npu_config_proto",
        "NPULossScaleOptimizer",
        "FixedLossScaleManager",
        "ExponentialUpdateLossScaleManager",
        "NPUDistributedOptimizer",
        "RewriterConfig",
        "npu_hooks_append",
        "npu_ops",
        "npu_scope",
    ):
        assert name in namespace, name
    assert namespace["RewriterConfig"].OFF == 2


def test_the_loss_scale_optimizer_module_gives_the_fixed_manager_it_imports(emulated):
    # The adapter's npu_loss_scale_optimizer.py imports FixedLossScaleManager from npu_loss_scale_manager,
    # and subpixel_ID2093's model.py imports it from there: it is the emulated manager, not a stand-in
    # saying "part of the Ascend adapter but is not emulated".
    from npu_bridge.estimator.npu import npu_loss_scale_manager
    from npu_bridge.estimator.npu.npu_loss_scale_optimizer import FixedLossScaleManager

    assert FixedLossScaleManager is npu_loss_scale_manager.FixedLossScaleManager
    assert FixedLossScaleManager(loss_scale=1).get_loss_scale() is not None


def test_a_name_not_emulated_fails_naming_it(emulated):
    from npu_bridge.npu_init import NPUOptimizer  # importable, as a script's imports must be

    with pytest.raises(
        NotEmulatedError,
        match=r"npu_bridge\.npu_init\.NPUOptimizer is part of the Ascend adapter "
        r"but is not emulated.*NPURunConfig",
    ):
        NPUOptimizer(None)
    from npu_bridge.estimator import npu_ops

    with pytest.raises(NotEmulatedError, match="npu_ops.LARS is part of the Ascend adapter"):
        npu_ops.LARS(None)


def test_a_submodule_not_emulated_fails_naming_it(emulated):
    with pytest.raises(NotEmulatedError, match="npu_bridge.estimator.npu.npu_rnn is part of the Ascend.*fused"):
        exec("from npu_bridge.estimator.npu.npu_rnn import npu_dynamic_rnn", {})
    with pytest.raises(NotEmulatedError, match="npu_bridge.hccl"):
        exec("from npu_bridge.hccl import hccl_ops", {})


def test_an_unknown_name_is_an_attribute_error_listing_the_emulated_ones(emulated):
    from npu_bridge import npu_init

    with pytest.raises(AttributeError, match="has no attribute 'npu_magic'.*npu_config_proto"):
        npu_init.npu_magic


def test_emulation_refuses_a_real_adapter_and_changes_nothing(adapter_double):
    with pytest.raises(RuntimeError, match="npu_bridge / npu_device\\) is installed here.*never shadows"):
        adapter.emulate_adapter()
    assert not adapter.is_emulated()
    assert "npu_bridge.npu_init" not in sys.modules
    assert tf.compat.v1.Session is __import__("tensorflow.python.client.session", fromlist=["x"]).Session


def test_uninstall_removes_the_modules_and_restores_the_sessions(no_adapter):
    original = tf.compat.v1.Session
    adapter.emulate_adapter()
    assert tf.compat.v1.Session is not original
    adapter.emulate_adapter(False)
    assert tf.compat.v1.Session is original
    assert not any(name.split(".")[0] == "npu_bridge" for name in sys.modules)


def test_the_emulation_is_not_taken_for_the_adapter(emulated):
    assert not backends.ascend_available()
    with pytest.raises(RuntimeError, match="emulated surface"):
        backends.session(None, tf.Graph(), backend="ascend")


def test_npu_config_proto_makes_the_adapters_edits_and_the_emulator_reads_them(emulated):
    from npu_bridge.npu_init import RewriterConfig, npu_config_proto

    proto = tf.compat.v1.ConfigProto(log_device_placement=True)
    custom = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["precision_mode"].s = b"force_fp16"
    result = npu_config_proto(config_proto=proto)
    assert result is proto  # edited in place, as the adapter's
    assert proto.allow_soft_placement and not proto.log_device_placement
    assert proto.graph_options.rewrite_options.remapping == RewriterConfig.OFF
    assert proto.graph_options.optimizer_options.global_jit_level == tf.compat.v1.OptimizerOptions.OFF
    fresh = npu_config_proto()
    assert [c.name for c in fresh.graph_options.rewrite_options.custom_optimizers] == ["NpuOptimizer"]
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.multiply(x, 3.0, name="y")
    with tf.compat.v1.Session(graph=g, config=proto) as sess:
        assert sess.backend == "emulator" and sess.config.precision_mode == "force_fp16"
        assert sess.run("y:0", {"x:0": [1.0, 2.0]}).tolist() == [3.0, 6.0]


def test_a_session_without_config_gets_the_adapter_defaults_on_the_emulator(emulated):
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0, name="c")
    with tf.compat.v1.Session(graph=g) as sess:
        assert sess.backend == "emulator" and sess.config.changed() == {}


def test_interactive_session_becomes_the_default_emulator_session(emulated):
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(2.0, name="c")
        sess = tf.compat.v1.InteractiveSession(graph=g)
        try:
            assert sess.backend == "emulator" and c.eval() == 2.0
        finally:
            sess.close()


def test_npu_run_config_reads_its_arguments_like_the_adapter(emulated):
    from npu_bridge.estimator.npu.npu_config import DumpConfig, NPURunConfig

    config = NPURunConfig(
        model_dir="/tmp/model",
        precision_mode="allow_mix_precision",
        dump_config=DumpConfig(enable_dump=True, dump_path="/tmp", dump_step="0|2"),
    )
    assert config.model_dir == "/tmp/model"
    changed = config.npu_config.changed()
    assert changed["precision_mode"] == "allow_mix_precision" and changed["dump_step"] == "0|2"
    session_config = config.session_config
    assert NpuConfig.from_config_proto(session_config).precision_mode == "allow_mix_precision"
    assert session_config.allow_soft_placement


def test_npu_run_config_generated_code_round_trips(emulated):
    config = NpuConfig(precision_mode="force_fp16", iterations_per_loop=4, enable_dump=True, dump_path="/tmp")
    namespace: dict = {}
    exec(config.to_code(api="estimator"), namespace)
    for key, value in config.changed().items():
        assert namespace["config"].npu_config.changed()[key] == value


def test_npu_run_config_rejects_a_misspelt_argument_with_one_clear_error(emulated):
    from npu_bridge.estimator.npu.npu_config import NPURunConfig

    with pytest.raises(Exception, match="precison_mode"):
        NPURunConfig(precison_mode="force_fp16")
    with pytest.raises(TypeError, match="keyword arguments only"):
        NPURunConfig(10)


def test_dropout_keeps_the_adapters_signature_and_checks(emulated):
    from npu_bridge.estimator import npu_ops

    g = tf.Graph()
    with g.as_default():
        x = tf.ones([1000], name="x")
        assert npu_ops.dropout(x, 1.0) is x
        with pytest.raises(ValueError, match="keep_prob must be in \\(0, 1\\]"):
            npu_ops.dropout(x, 0.0)
        with pytest.raises(ValueError, match="floating point"):
            npu_ops.dropout(tf.ones([3], tf.int32), 0.5)
        out = npu_ops.dropout(x, 0.8, seed=1)
    with tf.compat.v1.Session(graph=g) as sess:
        values = sess.run(out)
    assert set(np.round(np.unique(values), 4)) <= {0.0, 1.25}
    assert 0.7 < np.mean(values > 0) < 0.9


def test_hooks_and_ranks_are_one_device(emulated):
    from npu_bridge.npu_init import get_npu_rank_id, get_npu_rank_size, npu_hooks_append

    hooks = npu_hooks_append()
    assert len(hooks) == 1 and isinstance(hooks[0], tf.compat.v1.train.SessionRunHook)
    assert (get_npu_rank_id(), get_npu_rank_size()) == (0, 1)


def test_the_distributed_optimizer_refuses_more_than_one_rank(emulated, monkeypatch):
    from npu_bridge.npu_init import NPUDistributedOptimizer

    monkeypatch.setenv("RANK_SIZE", "8")
    with pytest.raises(RuntimeError, match="RANK_SIZE=8.*one device"):
        NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))


def _doc() -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[2] / "docs" / "emulated-adapter.md").read_text(encoding="utf-8")


def test_every_emulated_name_is_documented():
    head, _, rest = _doc().partition("## TF1 adapter (`npu_bridge`): names not emulated")
    doc = head + rest[rest.index("\n## ") :]  # every section but the table of names not emulated
    for module, entry in spec_table().items():
        for name in entry["emulated"]:
            assert f"`{name}`" in doc, f"{module}.{name} is missing from docs/emulated-adapter.md"


def test_the_docs_table_of_names_not_emulated_is_surface_json():
    import re

    section = _doc().split("## TF1 adapter (`npu_bridge`): names not emulated")[1].split("\n## ")[0]
    documented = {}
    for module, names, reason in re.findall(r"^\| `([\w.]+)` \| (.+?) \| (.+) \|$", section, flags=re.MULTILINE):
        for name in re.findall(r"`(\w+)`", names):
            documented[(module, name)] = reason
    tf1 = {m: entry for m, entry in spec_table().items() if m.split(".")[0] in TF1_ROOTS}
    expected = {(m, n): r for m, entry in tf1.items() for n, r in reasons(entry).items()}
    assert documented == expected, "regenerate the table from npu_jupyter/adapter/surface.json"


def test_npu_adapter_magic_switches_the_emulation(ip, no_adapter, capsys):
    ip.run_line_magic("npu", "adapter emulate")
    assert adapter.is_emulated() and "emulated" in capsys.readouterr().out
    ip.run_line_magic("npu", "adapter off")
    assert not adapter.is_emulated() and "none installed" in capsys.readouterr().out
    with pytest.raises(UsageError, match="Usage: %npu adapter"):
        ip.run_line_magic("npu", "adapter on")


def test_npu_adapter_magic_refuses_over_a_real_adapter(ip, adapter_double):
    with pytest.raises(UsageError, match="never shadows"):
        ip.run_line_magic("npu", "adapter emulate")
    assert not adapter.is_emulated()


def test_importing_the_adapter_package_does_not_import_tensorflow():
    code = "import sys, npu_jupyter.adapter as a; a.status(); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_tensorflow_the_emulation_says_what_to_install_and_changes_nothing(no_adapter, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tensorflow(name, *args, **kwargs):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ImportError("No module named 'tensorflow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorflow)
    with pytest.raises(RuntimeError, match="needs TensorFlow.*pip install"):
        adapter.emulate_adapter()
    monkeypatch.undo()
    assert not adapter.is_emulated() and "npu_bridge" not in sys.modules
