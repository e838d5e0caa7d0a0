"""Ascend-backend reports: labelled as predictions, pointing at the adapter's outputs, actual next to predicted."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from npu_jupyter._display import html, text
from npu_jupyter._display.mime import report_payload
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.ascend import adapter_outputs
from npu_jupyter._runtime.ascend.backend import AscendSession

tf = pytest.importorskip("tensorflow")

BUILD = Path(__file__).with_name("data") / "ge_dump" / "ge_proto_00000001_Build.txt"


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.constant(np.full((8, 3), 0.5, np.float32), name="w")
        y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="y")
        tf.reduce_sum(y, name="total")
    return g


def _run(config, monkeypatch=None, ge_dir=None):
    if monkeypatch is not None:
        if ge_dir is None:
            monkeypatch.delenv("DUMP_GE_GRAPH", raising=False)
        else:
            monkeypatch.setenv("DUMP_GE_GRAPH", "2")
            monkeypatch.setenv("DUMP_GRAPH_PATH", str(ge_dir))
    with AscendSession(config, graph=_graph(), config=config.to_config_proto()) as sess:
        if ge_dir is not None:  # GE writes its dump while the first run compiles the graph
            shutil.copy(BUILD, Path(ge_dir) / BUILD.name)
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        return sess.last_report


def test_an_ascend_report_says_its_placement_and_precision_are_predictions(monkeypatch):
    report = _run(NpuConfig(precision_mode="allow_mix_precision"), monkeypatch)
    payload = report_payload(report)
    assert "prediction" in payload["run"]["prediction"] and payload["run"]["actual"] is None
    assert "Predicted, not measured" in html.render(payload)
    assert "Predicted, not measured: " in text.render(payload)


def test_the_report_points_at_the_adapters_dump_and_profiling_folders(monkeypatch, tmp_path):
    profile_dir = tmp_path / "prof"
    config = NpuConfig(
        enable_dump=True,
        dump_path=str(tmp_path),
        profiling_mode=True,
        profiling_options=f'{{"output": "{profile_dir}", "task_trace": "on"}}',
    )
    report = _run(config, monkeypatch)
    places = {p["label"]: p for p in report_payload(report)["run"]["adapter_outputs"]}
    assert places["Data dump (adapter)"] == {"label": "Data dump (adapter)", "path": str(tmp_path), "exists": True}
    assert places["Profiling output (adapter)"]["path"] == str(profile_dir)
    assert not places["Profiling output (adapter)"]["exists"]
    rendered = text.render(report_payload(report))
    assert f"Profiling output (adapter): {profile_dir} (not written yet)" in rendered


def test_with_ge_graph_dumps_the_report_sets_actual_next_to_predicted(monkeypatch, tmp_path):
    report = _run(NpuConfig(precision_mode="allow_mix_precision"), monkeypatch, ge_dir=tmp_path)
    actual = report_payload(report)["run"]["actual"]
    assert actual["files"] == [str(tmp_path / BUILD.name)] and actual["error"] is None
    rows = {row["n"]: row for row in actual["rows"]}
    assert set(rows) == {"mm", "y", "total"}  # x is GE plumbing (Data); w was folded away
    assert (rows["mm"]["ae"], rows["mm"]["ad"], rows["mm"]["ge"]) == ("AI_CORE", ["float16"], "mm_y_fused")
    assert rows["total"]["ae"] == "AI_CPU" and rows["total"]["ad"] == ["float32"]
    assert rows["total"]["pe"] == report.plan.ops["total"].engine
    assert rows["mm"]["same"] == (
        report.plan.ops["mm"].engine == "AI_CORE" and report.plan.ops["mm"].output_dtypes == ["float16"]
    )
    assert actual["compared"] == 3 and actual["differ"] == sum(not r["same"] for r in actual["rows"])
    page = html.render(report_payload(report))
    assert "Actual (read from the GE compiled-graph dump)" in page  # GE's decisions, not a measurement
    assert f"mm:</strong> predicted {rows['mm']['pe']}" in page
    assert ("[DIFFERS]" in page) == (actual["differ"] > 0)
    assert "measured on the device" not in text.render(report_payload(report))


def test_ge_dumps_switched_on_but_absent_say_so(monkeypatch, tmp_path):
    monkeypatch.setenv("DUMP_GE_GRAPH", "2")
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    with AscendSession(NpuConfig(), graph=_graph(), config=NpuConfig().to_config_proto()) as sess:
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        payload = report_payload(sess.last_report)
    assert payload["run"]["actual"]["files"] == []
    assert "GE graph dump:</strong> on, but none from this session was found yet" in html.render(payload)


def test_an_unreadable_ge_dump_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("DUMP_GE_GRAPH", "1")
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path))
    with AscendSession(NpuConfig(), graph=_graph(), config=NpuConfig().to_config_proto()) as sess:
        (tmp_path / "ge_proto_00000009_Build.txt").write_text("graph { op {", encoding="utf-8")
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        payload = report_payload(sess.last_report)
    assert "could not read the GE graph dump" in payload["run"]["actual"]["error"]
    assert "could not read the GE graph dump" in text.render(payload)


def test_paths_and_op_names_from_the_adapter_are_escaped_in_html(monkeypatch, tmp_path):
    hostile = tmp_path / "<script>alert(1)"
    hostile.mkdir()
    report = _run(NpuConfig(enable_dump=True, dump_path=str(hostile)), monkeypatch)
    report.actual = {
        "files": ["<b>f</b>"],
        "rows": [
            {
                "n": "<img src=x>",
                "pe": "AI_CORE",
                "ae": "<i>",
                "pd": ["float16"],
                "ad": ["<u>"],
                "ge": "g",
                "same": False,
            }
        ],
        "missing": 0,
        "error": None,
    }
    page = html.render(report_payload(report))
    assert "<script>" not in page and "<img" not in page and "<b>f" not in page and "<u>" not in page
    assert "&lt;script&gt;" in page


def test_emulator_reports_carry_no_adapter_fields():
    from npu_jupyter._runtime.backends import session

    with session(NpuConfig(), _graph(), backend="emulator") as sess:
        sess.run("total:0", {"x:0": np.ones((4, 8), np.float32)})
        run = report_payload(sess.last_report)["run"]
    assert run["prediction"] is None and run["adapter_outputs"] == [] and run["actual"] is None


def test_output_locations_is_empty_for_a_config_that_writes_nothing():
    assert adapter_outputs.output_locations(NpuConfig(), environ={}) == []
