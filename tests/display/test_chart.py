"""Costliest-ops bars: ordering, stability and escaping."""

from __future__ import annotations

from npu_jupyter._display.chart import cost_bars, costliest


def test_costliest_orders_by_time_then_graph_order_and_skips_untimed_ops():
    ops = [
        {"n": "a", "t": "Add", "us": 2.0},
        {"n": "b", "t": "Add"},
        {"n": "c", "t": "Add", "us": 5.0},
        {"n": "d", "t": "Add", "us": 2.0},
    ]
    assert [op["n"] for op in costliest(ops)] == ["c", "a", "d"]


def test_bars_escape_op_names_and_are_empty_without_profile():
    assert cost_bars([{"n": "a", "t": "Add"}]) == ""
    out = cost_bars([{"n": '<b onclick="x">', "t": "<T>", "us": 1.0}])
    assert "<b onclick" not in out and "&lt;b onclick=&quot;x&quot;&gt;" in out and "&lt;T&gt;" in out
