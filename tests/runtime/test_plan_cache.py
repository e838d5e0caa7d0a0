"""The graph_compiler_cache_dir plan cache stores data (JSON), never pickle, and distrusts what it reads."""

from __future__ import annotations

import pickle
import warnings

import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.session import plan_cache
from npu_jupyter._runtime.session.emulator import EmulatorSession


def _cnn_plan(mode="allow_mix_precision"):
    from models import cnn_v1

    from npu_jupyter._plan.planner import plan

    model = cnn_v1()
    return plan(model.graph, NpuConfig(precision_mode=mode), fetches=list(model.fetches))


def test_a_real_plan_comes_back_from_json_equal_field_by_field():
    original = _cnn_plan()
    again = plan_cache.plan_from_json(plan_cache.plan_to_json(original))
    assert again == original
    assert again.summary() == original.summary() and list(again.ops) == list(original.ops)
    assert type(next(iter(again.ops.values()))).__name__ == "OpDecision"
    assert again.subgraphs and type(again.subgraphs[0]).__name__ == "Subgraph"


def _graph(tf):
    g = tf.Graph()
    with g.as_default():
        tf.add(tf.constant(1.0), 2.0, name="s")
    return g


def _cache_files(folder):
    return sorted(p for p in folder.iterdir() if p.name.startswith("npu_jupyter_plan_"))


class _RunsCode:
    """A pickle payload that would create a file when unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("content", ["pickle", "garbage", "foreign_json", "wrong_shape"])
def test_a_corrupt_or_foreign_cache_file_is_ignored_with_a_warning_and_never_executed(tf, tmp_path, content):
    g = _graph(tf)
    cfg = NpuConfig(graph_compiler_cache_dir=str(tmp_path))
    with EmulatorSession(cfg, g) as sess:
        sess.run("s:0")
    files = _cache_files(tmp_path)
    assert files and all(p.suffix == ".json" for p in files)
    marker = tmp_path / "code_ran"
    payload = {
        "pickle": pickle.dumps(_RunsCode(str(marker))),
        "garbage": b"\x00\xff not json",
        "foreign_json": b'{"format": "someone-else", "plan": {}}',
        "wrong_shape": b'{"format": "npu-jupyter.plan", "version": 2, "plan": {"ops": {"s": [1, 2]}}}',
    }[content]
    for path in files:
        path.write_bytes(payload)
    calls = []

    def counting_plan(graph, config, fetches=None):
        from npu_jupyter._plan.planner import plan

        calls.append(fetches)
        return plan(graph, config, fetches=fetches)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with EmulatorSession(cfg, g, plan_fn=counting_plan) as sess:
            assert sess.run("s:0") == 3.0
    assert not marker.exists()
    assert calls, "a bad cache file must be re-planned, not used"
    messages = [str(w.message) for w in caught if "plan cache" in str(w.message)]
    assert messages and str(files[0]) in " ".join(messages)
    for path in _cache_files(tmp_path):  # rewritten as valid data
        plan_cache.plan_from_json(path.read_text())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left
