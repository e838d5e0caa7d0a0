"""Failure injection for dumps and profiles: bad paths, a full disk, a budget, a killed process.

The promise tested is in docs/contract.md, Dumps and profiles.

What must hold: a bad ``dump_path`` (or profiling output) is a clear error before anything runs and
nothing is written; when space runs out (the runtime's size budget, or a real 1 MB tmpfs) the error or
warning is clear, earlier steps stay complete, and the dump never lists a file that is not complete;
after a SIGKILL in the middle of dumping, ``load_dump`` reads every step the manifest lists and every
listed file loads.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError

tf = pytest.importorskip("tensorflow")
HERE = Path(__file__).resolve().parent


def _graph(size: int = 4):
    """x[size,size] -> three float32 ops; each step dumps four size*size tensors in output mode."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [size, size], name="x")
        a = tf.math.multiply(x, 2.0, name="double")
        b = tf.math.add(a, 1.0, name="plus")
        tf.math.negative(b, name="neg")
    return graph


def _feed(size: int = 4, step: int = 0):
    return {"x:0": np.full((size, size), float(step), np.float32)}


def _session(dump_dir, **options):
    from npu_jupyter._runtime.backends import session

    cfg = NpuConfig(enable_dump=True, dump_path=str(dump_dir), **options)
    return session(cfg, graph=_graph(options.pop("size", 4)), backend="emulator")


def _all_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _assert_every_listed_file_is_complete(dump_dir: Path) -> list[int]:
    """load_dump reads every step the index lists and every file of those steps loads with its size."""
    from npu_jupyter._runtime.observe.dump import load_dump

    dump = load_dump(dump_dir)
    index = json.loads((dump_dir / "manifest.json").read_text()) if (dump_dir / "manifest.json").exists() else {}
    for step in index.get("steps", []):
        assert step in dump.steps, (step, dump.steps)
    for step in dump.steps:
        manifest = json.loads((dump_dir / f"step_{step}" / "manifest.json").read_text())
        for record in manifest["tensors"]:
            path = dump_dir / f"step_{step}" / record["file"]
            assert path.stat().st_size == record["bytes"]
            array = np.load(path, allow_pickle=False)
            assert list(array.shape) == record["shape"] and str(array.dtype) == record["dtype"]
    return dump.steps


# ------------------------------------------------------------------------------------ bad paths


@pytest.mark.parametrize("case", ["missing", "under_a_file", "a_file", "unset"])
def test_a_bad_dump_path_is_a_clear_error_before_anything_runs_and_nothing_is_written(tmp_path, case):
    (tmp_path / "file").write_text("a regular file")
    path = {
        "missing": tmp_path / "missing" / "deeper",
        "under_a_file": tmp_path / "file" / "dumps",
        "a_file": tmp_path / "file",
        "unset": None,
    }[case]
    before = _all_files(tmp_path)
    from npu_jupyter._runtime.backends import session

    cfg = NpuConfig(enable_dump=True) if path is None else NpuConfig(enable_dump=True, dump_path=str(path))
    with pytest.raises(NpuConfigError) as caught:
        session(cfg, graph=_graph(), backend="emulator")
    assert ("dump_path" in str(caught.value)) if path is None else (str(path) in str(caught.value))
    assert _all_files(tmp_path) == before


def test_a_read_only_dump_path_is_refused_for_a_user_without_write_permission(tmp_path):
    """As root the permission bits do not apply, so the check runs in a child that drops to 'nobody'
    (after importing, since the interpreter itself is under /root)."""
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    os.chmod(folder, 0o500)
    os.chmod(tmp_path, 0o755)
    script = textwrap.dedent(f"""
        import os, sys
        from npu_jupyter._options.config import NpuConfig
        from npu_jupyter._options.errors import NpuConfigError
        from npu_jupyter._runtime.observe.run_settings import read_run_settings
        if os.geteuid() == 0:  # imports done as root (the interpreter lives under /root); now drop
            os.setgid(65534); os.setuid(65534)
        try:
            read_run_settings(NpuConfig(enable_dump=True, dump_path={str(folder)!r}).snapshot())
        except NpuConfigError as err:
            print("REFUSED", err)
            sys.exit(0)
        print("ACCEPTED")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": "/tmp"}
    )
    assert "REFUSED" in done.stdout, done.stdout + done.stderr
    assert str(folder) in done.stdout
    assert list(folder.iterdir()) == []


def test_a_profiling_output_under_a_regular_file_is_a_clear_error_before_anything_runs(tmp_path):
    from npu_jupyter._runtime.backends import session

    (tmp_path / "file").write_text("a regular file")
    output = tmp_path / "file" / "prof"
    cfg = NpuConfig(profiling_mode=True, profiling_options=json.dumps({"output": str(output), "task_trace": "on"}))
    with pytest.raises(NpuConfigError, match="file"):
        sess = session(cfg, graph=_graph(), backend="emulator")
        try:
            sess.run("neg:0", _feed())
        finally:
            sess.close()


# ------------------------------------------------------------------------------------ running out of space


def test_the_dump_budget_stops_dumping_with_a_clear_warning_and_keeps_earlier_steps(tmp_path, monkeypatch):
    probe = tmp_path / "probe"
    probe.mkdir()
    with _session(probe) as sess:
        sess.run("neg:0", _feed())
    step_bytes = sum(r["bytes"] for r in json.loads((probe / "step_0" / "manifest.json").read_text())["tensors"])
    array_bytes = sum(np.load(p).nbytes for p in (probe / "step_0").glob("*.npy"))
    monkeypatch.setenv("NPU_JUPYTER_DUMP_BUDGET", str(int(array_bytes * 2.5)))
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    with _session(dump_dir) as sess, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(5):
            sess.run("neg:0", _feed(step=step))
        report = sess.last_report
    messages = [str(w.message) for w in caught if "budget" in str(w.message)]
    assert len(messages) == 1 and "step 2" in messages[0] and str(dump_dir) in messages[0]
    assert any("budget" in w for w in report.warnings)
    assert _assert_every_listed_file_is_complete(dump_dir) == [0, 1]
    assert not [p for p in dump_dir.iterdir() if p.name.startswith(".")]  # no temp folders left
    assert step_bytes > array_bytes  # the manifest's byte counts include the .npy headers


def _mount_tmpfs(folder: Path) -> None:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a 1 MB tmpfs here ({done.stderr.strip() or done.returncode}); "
            "the size-budget test covers running out of space"
        )


def _dump_until_full(disk: Path) -> Exception | None:
    """Dump 4 x 64 KiB per step onto the 1 MB disk until a run fails; the failure (or None)."""
    from npu_jupyter._runtime.backends import session

    sess = session(NpuConfig(enable_dump=True, dump_path=str(disk)), graph=_graph(128), backend="emulator")
    try:
        for step in range(40):
            try:
                sess.run("neg:0", _feed(128, step))
            except Exception as exc:
                return exc
        return None
    finally:
        sess.close()


def test_a_full_disk_mid_dump_stops_the_run_and_earlier_steps_stay_complete(tmp_path):
    disk = tmp_path / "small_disk"
    _mount_tmpfs(disk)
    try:
        error = _dump_until_full(disk)
        assert isinstance(error, OSError), f"1 MB filled without an OSError: {error!r}"
        steps = _assert_every_listed_file_is_complete(disk)
        assert steps == list(range(len(steps))) and len(steps) >= 2
        assert not [p for p in disk.iterdir() if p.name.endswith(".partial")]  # the failed step was cleaned up
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_full_disk_mid_dump_is_reported_with_a_message_naming_the_disk_problem_and_dump_path(tmp_path):
    disk = tmp_path / "small_disk"
    _mount_tmpfs(disk)
    try:
        error = _dump_until_full(disk)
        assert error is not None
        text = str(error)
        assert "space" in text.lower() and str(disk) in text, repr(error)
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# ------------------------------------------------------------------------------------ killed mid-dump

_DUMP_LOOP = """
import sys, numpy as np, tensorflow as tf
sys.path.insert(0, {here!r})
from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime.backends import session
graph = tf.Graph()
with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [256, 256], name="x")
    y = tf.math.multiply(x, 2.0, name="double")
    tf.math.add(y, 1.0, name="plus")
sess = session(NpuConfig(enable_dump=True, dump_path={dump!r}), graph=graph, backend="emulator")
for step in range(100000):
    sess.run("plus:0", {{"x:0": np.full((256, 256), float(step), np.float32)}})
    print(step, flush=True)
"""


@pytest.mark.slow
def test_after_a_sigkill_mid_dump_every_step_the_manifest_lists_loads(tmp_path):
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    script = _DUMP_LOOP.format(here=str(HERE), dump=str(dump_dir))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 120
        steps_seen = 0
        while steps_seen < 5 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            steps_seen = int(line) + 1
        assert steps_seen >= 5, "the dumping child did not get going"
        time.sleep(0.05)  # land somewhere inside a later step's write
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    steps = _assert_every_listed_file_is_complete(dump_dir)
    assert len(steps) >= 5
    for step in steps:
        assert float(np.load(dump_dir / f"step_{step}" / "plus.output.0.npy")[0, 0]) == 2.0 * step + 1.0
