"""ExperimentalConfig emulation: accelerate_train_mode phases and the graph_compiler_cache_dir plan cache."""

from __future__ import annotations

import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.snapshot import ConfigSnapshot
from npu_jupyter._runtime.observe.run_settings import read_run_settings, reduced_phase
from npu_jupyter._runtime.session.emulator import EmulatorSession


def test_step_trigger_runs_the_first_ninety_percent_reduced(monkeypatch):
    monkeypatch.setenv("TOTAL_STEP", "10")
    monkeypatch.delenv("STEP_NOW", raising=False)
    phases = [reduced_phase(("fast", "step", 0.9), step) for step in range(10)]
    assert phases == [True] * 9 + [False]


def test_loss_trigger_is_reduced_until_the_loss_nears_the_target(monkeypatch):
    monkeypatch.setenv("TARGET_LOSS", "1.0")
    monkeypatch.setenv("LOSS_NOW", "2.0")
    assert reduced_phase(("fast", "loss", 1.05), 0)
    monkeypatch.setenv("LOSS_NOW", "1.01")
    assert not reduced_phase(("fast", "loss", 1.05), 0)


def test_without_progress_variables_there_is_no_reduced_phase(monkeypatch):
    monkeypatch.delenv("TOTAL_STEP", raising=False)
    assert not reduced_phase(("fast", "step", 0.9), 0)


def test_accelerate_train_mode_switches_precision_and_keeps_weights(tf, monkeypatch):
    monkeypatch.setenv("TOTAL_STEP", "4")
    monkeypatch.delenv("STEP_NOW", raising=False)
    g = tf.Graph()
    with g.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [1, 2], name="a")
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([[1.0], [1e-4]]))
        out = tf.matmul(a, w, name="out")
        init = tf.compat.v1.global_variables_initializer()
    cfg = NpuConfig(precision_mode="must_keep_origin_dtype", experimental_accelerate_train_mode="fast|step|0.5")
    with EmulatorSession(cfg, g) as sess:
        sess.run(init)  # step 0
        reduced = sess.run(out, {a: [[1.0, 1.0]]})  # step 1 < 2: reduced precision
        sess.run(out, {a: [[1.0, 1.0]]})  # step 2: original precision from here
        original = sess.run(out, {a: [[1.0, 1.0]]})
    assert reduced[0, 0] == 1.0
    assert original[0, 0] == pytest.approx(1.0001, abs=1e-6)


def test_plans_are_cached_on_disk_under_graph_compiler_cache_dir(tf, tmp_path):
    g = tf.Graph()
    with g.as_default():
        tf.add(tf.constant(1.0), 2.0, name="s")
    cfg = NpuConfig(graph_compiler_cache_dir=str(tmp_path))
    with EmulatorSession(cfg, g) as sess:
        assert sess.run("s:0") == 3.0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files and all(f.startswith("npu_jupyter_plan_") and f.endswith(".json") for f in files)
    calls = []

    def counting_plan(graph, config, fetches=None):
        calls.append(fetches)
        raise AssertionError("the disk cache should have answered")

    with EmulatorSession(cfg, g, plan_fn=counting_plan) as sess:
        assert sess.run("s:0") == 3.0
    assert calls == []


def test_a_missing_cache_dir_is_refused_before_running(tmp_path):
    with pytest.raises(ValueError, match="graph_compiler_cache_dir"):
        read_run_settings(ConfigSnapshot.checked({"graph_compiler_cache_dir": str(tmp_path / "nope")}))
