"""The fast partition stage decides exactly as the plain one did, on random graphs (§3.5).

:mod:`partition_reference` holds the partition functions as they were before they were made faster
(plain passes, bitsets for every rejoin question, whole-graph reachability in full offload). Each
random graph is partitioned with the product's functions and with the reference ones swapped in,
under full offload, mixed computing (variables on the device and on the host) and lazy_recompile
with data pre-processing; every field must agree: clusters and their names, the nodes moved to the
host with their reasons, transfers (tensor, bytes, consumers in order), errors, warnings and notes.
The searches' budget is also set to nothing (whole-graph passes answer every question) and to
plenty (searches answer all), so both ways of answering are compared with the reference.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Iterator

import pytest

tf = pytest.importorskip("tensorflow")

import partition_reference as ref  # tests/ is on sys.path (tests/conftest.py)

from npu_jupyter._plan import clustering, partition
from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.placement import Placement
from npu_jupyter._plan.settings import PlanSettings

SETTINGS = {
    "full offload": PlanSettings(),
    "mixed computing": PlanSettings(mix_compile_mode=True),
    "mixed, variables on host": PlanSettings(mix_compile_mode=True, variable_placement="Host"),
    "lazy_recompile + data pre-processing": PlanSettings(
        dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile", enable_data_pre_proc=True
    ),
}
# op types the partition rules look at, with how often a random node gets one
OPS = {
    "MatMul": 30,
    "Const": 14,
    "VariableV2": 4,
    "VarHandleOp": 4,
    "Identity": 5,
    "NoOp": 3,
    "PyFunc": 8,
    "IteratorGetNext": 2,
    "SaveV2": 2,
    "StringJoin": 2,
    "Merge": 2,
}
SOURCES = frozenset({"Const", "VariableV2", "VarHandleOp"})
DTYPES = ("float32", "float32", "float16", "int32", "string", "bool", "resource", "")
SHAPES = ([2, 3], [4], [], [None, 3], None)


class _FakeTensor:
    def __init__(self, shape: list[int | None] | None) -> None:
        self.shape = tf.TensorShape(shape)


class _FakeOp:
    def __init__(self, rng: random.Random) -> None:
        self.outputs = [_FakeTensor(rng.choice(SHAPES)) for _ in range(rng.randint(1, 2))]


class _FakeGraph:
    """Static shapes for the view's lazy lookups: two outputs at most, some not fully known."""

    def __init__(self, names: list[str], rng: random.Random) -> None:
        self.ops = {name: _FakeOp(rng) for name in names}

    def _get_operation_by_name(self, name: str) -> _FakeOp:
        return self.ops[name]


def _random_graph(rng: random.Random, count: int, p_device: float) -> tuple[GraphView, Placement]:
    """A view of ``count`` nodes in topological order (plus a few back edges) and candidate flags."""
    ops, weights = list(OPS), list(OPS.values())
    order: list[Node] = []
    for i in range(count):
        op = rng.choices(ops, weights)[0] if i else "Const"
        n = Node(f"n{i}", op)
        n.index = i
        if op not in SOURCES and i:
            idx = [rng.randrange(i) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.03:
                idx.append(-1)  # a producer pruned from the view
            if op == "Merge":
                idx.append(rng.randrange(i, count))  # a loop's back edge (or the node itself)
            n.in_idx = idx
            n.input_names = [f"n{j}" if j >= 0 else "pruned" for j in idx]
            n.input_slots = [rng.choice((0, 0, 0, 1)) for _ in idx]
            n.input_dtypes = [rng.choice(DTYPES) for _ in idx]
            if rng.random() < 0.15:
                n.input_refs = [rng.random() < 0.5 for _ in idx]
        if i and rng.random() < 0.1:
            n.ctrl_idx = [rng.randrange(i) for _ in range(rng.randint(1, 2))]
        n.output_dtypes = [rng.choice(("float32", "string", "string", "bool"))]
        order.append(n)
    device = [n.op not in ("PyFunc", "SaveV2") and rng.random() < p_device for n in order]
    placed = Placement(device, ["AICORE" if d else "HOST" for d in device], [f"reason {i}" for i in range(count)])
    graph = _FakeGraph([n.name for n in order], rng)
    return GraphView({n.name: n for n in order}, order, tf_graph=graph), placed  # type: ignore[arg-type]


def _graphs() -> Iterator[tuple[GraphView, Placement]]:
    rng = random.Random(2023)
    for k in range(160):
        count = rng.choice((2, 8, 30, 80, 200))
        p_device = (0.5, 0.8, 0.95, 0.99)[k % 4]
        yield _random_graph(rng, count, p_device)


def _partitioned(view: GraphView, placed: Placement, s: PlanSettings) -> tuple[dict[str, object], dict[str, object]]:
    """Every field of the partition and of the placement it changed, as plain data."""
    mine = copy.deepcopy(placed)
    part = partition.partition(view, mine, s)
    return dataclasses.asdict(part), dataclasses.asdict(mine)


# the reference functions in place of the product's (the product's boundary checks also take the
# nodes outside the largest GeOp, which the reference finds by scanning everything)
REFERENCE = {
    "group_candidates": ref.group_candidates,
    "merge_unreachable": ref.merge_unreachable,
    "_replicated": lambda view, cluster_of, s, part, _outside: ref._replicated(view, cluster_of, s, part),
    "_transfers": lambda view, cluster_of, replicated, part, _outside: ref._transfers(
        view, cluster_of, replicated, part
    ),
}


def test_partition_decides_as_the_plain_reference_on_random_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {"cut off": 0, "several GeOps": 0, "transfer bytes": 0, "errors": 0, "notes": 0, "split then rejoined": 0}
    rejoined = clustering._rejoin

    def counting_rejoin(groups: list[list[int]], *args: object) -> list[list[int]]:
        out = rejoined(groups, *args)  # type: ignore[arg-type]
        seen["split then rejoined"] += len(out) < len(groups)
        return out

    for view, placed in _graphs():
        for label, s in SETTINGS.items():
            with monkeypatch.context() as m:
                m.setattr(clustering, "_rejoin", counting_rejoin)
                fast = _partitioned(view, placed, s)
            for budget in (0, 10**6):
                with monkeypatch.context() as m:
                    m.setattr(clustering, "SEARCH_BUDGET", budget)
                    assert _partitioned(view, placed, s) == fast, (label, budget)
            with monkeypatch.context() as m:
                for name, plain in REFERENCE.items():
                    m.setattr(partition, name, plain)
                assert _partitioned(view, placed, s) == fast, label
            part = fast[0]
            seen["cut off"] += any(r == partition.CUT_OFF_REASON for r in fast[1]["reason"])  # type: ignore[attr-defined]
            seen["several GeOps"] += len(part["subgraphs"]) > 1  # type: ignore[arg-type]
            seen["transfer bytes"] += any(t["bytes"] for t in part["transfers"])  # type: ignore[attr-defined]
            seen["errors"] += bool(part["errors"])
            seen["notes"] += bool(part["notes"])
    # the random graphs reach every rule compared above, not just the easy cases
    assert min(seen.values()) >= 5, seen


def test_view_producer_lists_are_the_earlier_data_and_control_inputs() -> None:
    """``GraphView.preds`` (what clustering walks) on graphs with pruned producers and back edges."""
    for view, _ in _graphs():
        for n, ps in zip(view.order, view.preds()):
            assert list(ps) == [j for j in (*n.in_idx, *n.ctrl_idx) if 0 <= j < n.index]


def _levels_walking_every_node(device: list[bool], preds: list[list[int]]) -> list[int]:
    """Clustering's levels by the plain rule: one walk over every node in topological order."""
    level, tainted = [0] * len(device), [False] * len(device)
    for i, ps in enumerate(preds):
        if device[i]:
            level[i] = max([level[p] for p in ps if device[p]] + [level[p] + 1 for p in ps if tainted[p]], default=0)
        else:
            tainted[i] = any(device[p] or tainted[p] for p in ps)
            level[i] = max((level[p] for p in ps if device[p] or tainted[p]), default=0)
    return level


def test_levels_start_where_the_first_level_can_rise_and_equal_the_whole_walk() -> None:
    """``clustering._levels`` skips the nodes before the first device node fed by a tainted host node."""
    raised = 0
    for view, placed in _graphs():
        preds, succs = view.preds(), view.succs()
        for device in (placed.device, [not d for d in placed.device]):
            want = _levels_walking_every_node(device, preds)  # type: ignore[arg-type]
            assert clustering._levels(device, preds, succs) == want
            raised += any(want)
    assert raised >= 20


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["lstm_train_step", "bert_train_step", "mlp_v1"])
def test_clustering_shortcuts_on_real_training_graphs_equal_the_plain_passes(
    builder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Levels and mixed computing's merge on real graphs, with the candidates placement seeds.

    Mixed computing leaves a training step's variable updates on the host: levels start late, and
    the merge's searches end early (both checked against the passes over every node). The searches
    get budget enough to answer every question here, so that they are compared on each graph.
    """
    import models

    from npu_jupyter._plan.graph.view import build_view
    from npu_jupyter._plan.placement import place
    from npu_jupyter._plan.planner import library_for

    model = getattr(models, builder)()
    view = build_view(getattr(model, "graph", model))
    preds, succs = view.preds(), view.succs()
    for s in (PlanSettings(), PlanSettings(mix_compile_mode=True)):
        device = place(view, library_for(s.soc), s).device
        assert clustering._levels(device, preds, succs) == _levels_walking_every_node(device, preds)  # type: ignore[arg-type]
        groups = clustering.group_candidates(device, preds, succs, s.mix_compile_mode)
        with monkeypatch.context() as m:
            m.setattr(clustering, "SEARCH_BUDGET", 10**6)
            searched = clustering._merge_by_search(groups, preds, succs)
        assert searched == clustering._merge_by_bitsets(groups, preds)
