"""Progress bars show only in a notebook frontend, only for long work, and close themselves."""

from __future__ import annotations

from IPython.utils.capture import capture_output

from npu_jupyter._progress import progress_bar


def test_outside_a_notebook_frontend_nothing_is_shown_or_printed():
    with capture_output() as cap, progress_bar(3, "precision sweep", delay=0) as bar:
        for mode in ("a", "b", "c"):
            bar.describe(mode)
            bar.advance()
    assert bar.shown == 0 and not bar.enabled
    assert cap.stdout == "" and cap.stderr == "" and not cap.outputs


def test_quick_work_shows_no_bar_even_in_a_frontend():
    with progress_bar(3, "precision sweep", enabled=True, delay=3600) as bar:
        bar.advance(3)
    assert bar.shown == 0


def test_long_work_shows_one_bar_that_tracks_the_items_and_is_closed_at_the_end():
    with capture_output(), progress_bar(2, "precision sweep", enabled=True, delay=0) as bar:
        bar.describe("force_fp16")
        progress, label = bar.widget.children
        bar.advance()
        assert progress.value == 1 and progress.max == 2
        assert label.value == "precision sweep: 1/2 force_fp16"
    assert bar.shown == 1 and bar.widget is None


def test_a_large_plan_reports_its_stages_and_a_small_one_shows_nothing(monkeypatch):
    import pytest

    tf = pytest.importorskip("tensorflow")
    from npu_jupyter import _progress as progress
    from npu_jupyter._plan import planner

    seen = []
    real = progress.progress_bar

    def spy(total, title, *, enabled=None, delay=None):
        ctx = real(total, title, enabled=enabled, delay=0)
        seen.append((title, enabled))
        return ctx

    monkeypatch.setattr(progress, "progress_bar", spy)
    monkeypatch.setattr(progress, "in_notebook_frontend", lambda: True)
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        for k in range(3):
            x = tf.nn.relu(x, name=f"r{k}")
    with capture_output():
        planner.plan(g)
        monkeypatch.setattr(planner, "PROGRESS_MIN_OPS", 2)
        planner.plan(g, fetches=["r2"])
    assert seen[0] == ("plan of 4 ops", False)
    assert seen[1] == ("plan of 4 ops", None)


def test_a_large_dump_shows_progress_in_a_notebook_frontend(monkeypatch, tmp_path):
    import numpy as np

    from npu_jupyter import _progress as progress
    from npu_jupyter._runtime.observe.dump.writer import DumpEntry, DumpWriter

    seen = []
    real = progress.progress_bar

    def spy(total, title, **kwargs):
        seen.append((total, title))
        return real(total, title, enabled=False)

    monkeypatch.setattr(progress, "progress_bar", spy)
    writer = DumpWriter(str(tmp_path))
    entries = [DumpEntry(f"op{k}", "Relu", "output", 0, np.ones(3, np.float32), "float32") for k in range(5)]
    writer.write_step(0, entries)
    assert seen and seen[0][0] == 5 and "dump" in seen[0][1]
