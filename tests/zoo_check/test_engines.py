"""The engines hand tasks to workers and rows back to the caller; no scheduling of their own."""

from __future__ import annotations

import pytest

from npu_jupyter._zoo_check import engines, isolate


def _fake_isolated(calls: list[str]):
    def run(task, timeout, python_path):
        calls.append(task["entry"])
        return {"entry": task["entry"], "timeout": timeout, "path_given": bool(python_path)}

    return run


def test_the_local_engine_runs_every_task_and_passes_the_time_limit_and_import_path(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(isolate, "run_isolated", _fake_isolated(calls))
    rows: list[dict] = []
    engines.run_local([{"entry": f"e{i}"} for i in range(5)], 42.0, 2, rows.append)
    assert sorted(calls) == [f"e{i}" for i in range(5)]
    assert all(r["timeout"] == 42.0 and r["path_given"] for r in rows) and len(rows) == 5


def test_an_interrupt_starts_no_further_tasks(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(isolate, "run_isolated", _fake_isolated(calls))

    def on_row(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engines.run_local([{"entry": f"e{i}"} for i in range(20)], 1.0, 1, on_row)
    assert len(calls) < 20  # the queued tasks were cancelled, not run


def test_ray_missing_is_one_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ImportError, match=r"pip install 'npu_jupyter\[ray\]'"):
        engines.run_ray([{"entry": "e"}], 1.0, None, lambda row: None)
