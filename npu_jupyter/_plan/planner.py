"""``plan(graph, config)``: the adapter's decisions for every op, with reasons.

Pipeline: normalise the graph once (:mod:`graph`), seed and propagate device candidates
(:mod:`placement`), cluster them into GeOps and list the boundary tensors (:mod:`partition`), then pick
dtypes per precision mode (:mod:`precision`). Pure: no session, no I/O beyond the op tables and the
files the config names.
"""

from __future__ import annotations

import functools
import gc
import os
import weakref
from typing import TYPE_CHECKING, cast

from npu_jupyter._plan.model import OpDecision, Plan
from npu_jupyter._plan.readonly import NO_STRINGS, dtype_list

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from npu_jupyter._ops.library import OpLibrary
    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._plan.approximate import ApproximateMarks
    from npu_jupyter._plan.graph.graph import GraphView, Node
    from npu_jupyter._plan.model import Engine
    from npu_jupyter._plan.placement import Placement
    from npu_jupyter._plan.precision import OpPrecision
    from npu_jupyter._progress import Progress
    from npu_jupyter._tf_types import ConcreteFunction, Graph, GraphDef

_CACHE_ENV = ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH")


@functools.lru_cache(maxsize=8)
def _library(soc: str, env: tuple[str | None, ...]) -> OpLibrary:
    """Op tables per SoC, cached per process (keyed on the CANN paths so a new install is seen)."""
    from npu_jupyter._ops.library import load_library

    return load_library(soc)


def library_for(soc: str) -> OpLibrary:
    """The op library of ``soc`` (cached; a changed ASCEND_OPP_PATH loads again)."""
    return _library(soc, tuple(os.environ.get(k) for k in _CACHE_ENV))


# Normalised views of tf.Graph objects, with the fetches they were pruned to and the bytes of the
# GraphDef they were read from. Re-planning the same graph under another config (the panel, %%npu
# overrides, the emulator's per-config plans) then skips building the view, the larger half of a plan.
# The graph's content is compared, not just graph.version: that notices attributes set after
# construction, e.g. keep_tensors_dtypes. TensorFlow writes attribute maps in no fixed order, so two
# exports of one graph rarely have equal bytes: the kept bytes are parsed again and compared as a
# GraphDef (:func:`_same_graph`). Bytes, not the parsed GraphDef: 1.3 MB instead of 5.8 MB for
# ResNet-50's training step, whose view is 4.9 MB. Views are never mutated after construction.
_VIEW_CACHE: weakref.WeakKeyDictionary[Graph, tuple[tuple[str, ...], bytes, GraphView]] = weakref.WeakKeyDictionary()


def _same_graph(kept: bytes, data: bytes, graph_def: GraphDef) -> bool:
    """Whether the GraphDef exported as ``kept`` has the content of ``graph_def`` (exported as ``data``)."""
    if kept == data:
        return True
    from npu_jupyter._plan.graph.export import parsed

    return parsed(kept) == graph_def  # protobuf equality: map entries in any order


def _view(graph: object, fetches: object) -> GraphView:
    """The cached view of ``graph`` when its content and fetches are unchanged, else a new one.

    The export's bytes spare the view the tests for scope attributes that occur nowhere in the graph.
    """
    from npu_jupyter._plan.graph.export import exported
    from npu_jupyter._plan.graph.fetches import fetch_names
    from npu_jupyter._plan.graph.view import view_of

    graph_def, tf_graph, serialized = exported(graph)
    if tf_graph is None:  # a GraphDef is never cached
        return view_of(graph_def, None, fetches, serialized)
    wanted = tuple(fetch_names(fetches))
    try:
        hit = _VIEW_CACHE.get(tf_graph)
    except TypeError:  # not weak-referenceable
        return view_of(graph_def, tf_graph, fetches, serialized)
    if hit is not None and hit[0] == wanted and _same_graph(hit[1], serialized, graph_def):
        return hit[2]
    # The cached view reaches its graph through a weak proxy: a view holding the graph itself would
    # keep the cache's weak key alive, so every graph ever planned would stay in memory. The entry
    # goes with the graph, so the proxy is never read after the graph is gone.
    view = view_of(graph_def, cast("Graph", weakref.proxy(tf_graph)), fetches, serialized)
    _VIEW_CACHE[tf_graph] = (wanted, serialized, view)
    return view


_FLOAT_NAMES = frozenset({"float16", "bfloat16", "float32", "float64"})


def _first_float_index(dtypes: list[str]) -> int | None:
    """Which output a person reads as "the op's dtype": the first float one, else the first."""
    if not dtypes:
        return None
    if dtypes[0] in _FLOAT_NAMES:
        return 0
    for k, d in enumerate(dtypes):
        if d in _FLOAT_NAMES:
            return k
    return 0


def _decisions(
    view: GraphView,
    placed: Placement,
    clusters: list[str | None],
    precisions: list[OpPrecision],
    marks: ApproximateMarks | None,
) -> dict[str, OpDecision]:
    """One OpDecision per node, in topological order, from the three stages' per-index answers.

    ``marks`` (None: the op tables are exact) says which decisions rest on approximate data
    (:mod:`npu_jupyter._plan.approximate`); a decision's triple is looked up here, as it is built.

    The decisions hold the view's and the precision stage's lists as they are: every one is a
    read-only list (:mod:`npu_jupyter._plan.readonly`), shared by every plan of a cached graph and by
    ops with the same dtypes, so no decision can change another's or a later plan's. Copying them
    instead made six lists per op: for ResNet-50's training step, about 4 ms of this function's
    13 ms, and half of the 116,000 objects the collector scans after a cold plan. Producer dtypes
    are the one list made here, and only where they differ from both the decided and the declared
    input dtypes (an input cast by the adapter).

    The decisions are filled in attribute by attribute on a bare instance: calling the dataclass's
    generated ``__init__`` with 17 keyword arguments costs about four times as much.
    :func:`_check_decision_fields` (on the first decision of each plan) makes sure a field added to
    OpDecision later cannot be left unset here. What a decision reads from its precision answer is
    read once per answer (:func:`_answer_fields`): ResNet-50's training step, mixed computing, 7.4 →
    6.8 ms.
    """
    new = object.__new__
    ops: dict[str, OpDecision] = {}
    device, reasons = placed.device, placed.reason
    engines = cast("list[Engine]", placed.engine)  # placement engines are the three Engine names
    decided_of = [p.output_dtypes for p in precisions]
    # what most inputs read: output 0 of a producer in the view (None: no output, or position -1)
    first: list[str | None] = [o[0] if o else None for o in decided_of]
    first.append(None)
    first_at = first.__getitem__
    answers: dict[int, tuple[OpPrecision, list[str], str, str, list[str], list[str], str, str | None, str | None]] = {}
    for n, p in zip(view.order, precisions):
        i = n.index
        on_device = device[i]
        engine: Engine = engines[i] if on_device else "HOST"
        reason = reasons[i]
        outs = n.output_dtypes
        got = answers.get(id(p))
        if got is None or got[1] is not outs:
            got = answers[id(p)] = _answer_fields(p, outs)
        _, _, before, after, decided, input_dtypes, p_reason, impl, policy = got
        if on_device and p.engine is not None and p.engine != engine:
            engine = cast("Engine", p.engine)
            reason = f"{reason}; {p_reason}"
        idx = n.in_idx
        declared = n.input_dtypes
        if idx:
            # most inputs read output 0 of a producer in the view: one lookup per input
            found = list(map(first_at, idx))
            written = _producer_dtypes(n, decided_of) if None in found or any(n.input_slots) else found
            # what the op reads is what its producers write, unless the adapter casts in between
            if written == input_dtypes:
                produced = input_dtypes
            else:
                produced = declared if written == declared else dtype_list(tuple(cast("list[str]", written)))
        else:
            produced = NO_STRINGS
        d = new(OpDecision)  # fields in declaration order, as the generated __init__ sets them
        d.name = name = n.name
        d.op_type = n.op
        d.placement = "device" if on_device else "host"
        d.engine = engine
        d.placement_reason = reason
        d.dtype_before = before
        d.dtype_after = after
        d.precision_reason = p_reason
        d.cluster = clusters[i]
        d.inputs = n.input_names  # read-only lists, shared (see above)
        d.input_dtypes = input_dtypes
        d.output_dtypes = decided
        d.impl_mode = impl
        d.policy = policy
        d.body_ops = n.body
        if marks is None:
            d.approximate = False
        else:
            flag = marks.known.get((n.op, engine, after))
            d.approximate = marks.flagged(d) if flag is None else flag
        d.declared_input_dtypes = declared
        d.producer_dtypes = produced
        ops[name] = d
    if ops:
        _check_decision_fields(next(iter(ops.values())))
    return ops


def _answer_fields(
    p: OpPrecision, outs: list[str]
) -> tuple[OpPrecision, list[str], str, str, list[str], list[str], str, str | None, str | None]:
    """What a decision reads from its precision answer ``p`` and its node's declared output dtypes ``outs``.

    (p, outs, dtype before, dtype after, decided outputs, decided inputs, reason, impl mode, policy).
    Answers are shared by the nodes of one op type and dtypes (:meth:`precision._Decider.decide`),
    so :func:`_decisions` reads these once per answer; ``p`` is kept so its id stays unique.
    """
    k = 0 if outs and outs[0] in _FLOAT_NAMES else _first_float_index(outs)
    decided = p.output_dtypes
    after = decided[k] if k is not None and k < len(decided) else ""
    before = outs[k] if k is not None else ""
    return p, outs, before, after, decided, p.input_dtypes, p.reason, p.impl_mode, p.policy


def _promote_to_oldest_generation() -> None:
    """Move the objects the collector tracks to its oldest generation, without collecting.

    A cold plan builds its objects with the collector off (about 14 per node: the view's nodes and
    lists, the decisions). The first allocation after :func:`plan` switches it back on collects the
    youngest generation, which is all of them, only to find them alive: they are the cached view and
    the plan. That scan was about 5 ms of a 65-70 ms cold plan of ResNet-50's training step
    (``bench/plan_bench.py``), and a middle-generation collection later scans them once more. Freezing
    and unfreezing (two list splices, no scan) puts them in the oldest generation, where objects that
    live that long end up anyway, and which only full collections scan.

    The user's young objects move with them: a garbage cycle among those is freed by the next full
    collection instead of a young one. Skipped when the process froze objects itself (a server before
    ``fork()``): ``gc.unfreeze()`` would thaw them.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _producer_dtypes(n: Node, decided_of: list[list[str]]) -> list[str]:
    """Each data input's dtype as its producer writes it (decided), else as the graph declares it."""
    return [
        decided_of[j][slot] if j >= 0 and slot < len(decided_of[j]) else dt
        for j, slot, dt in zip(n.in_idx, n.input_slots, n.input_dtypes)
    ]


def _check_decision_fields(decision: OpDecision) -> None:
    """Fail loudly when a decision :func:`_decisions` built lacks a field OpDecision declares.

    Compared with the dataclass's own field list, so a field added to OpDecision later and not set
    in :func:`_decisions` is one clear error, not an AttributeError wherever it is first read.
    """
    from dataclasses import fields

    declared = {f.name for f in fields(OpDecision)}
    missing = declared - vars(decision).keys()
    if missing:
        raise AssertionError(f"planner._decisions leaves OpDecision's {sorted(missing)} unset: set every field there")


# Plans of real models (tens of thousands of ops) take seconds; smaller ones never show a bar.
PROGRESS_MIN_OPS = 5000


def _stage_progress(ops: int) -> AbstractContextManager[Progress]:
    """A notebook progress bar over the planner's stages for large graphs (``npu_jupyter._progress``)."""
    from npu_jupyter._progress import progress_bar

    enabled = None if ops >= PROGRESS_MIN_OPS else False
    return progress_bar(3, f"plan of {ops} ops", enabled=enabled)


def _refuse_tf_function(graph: object) -> None:
    """A ``tf.function`` holds no graph until traced for argument types: say what to pass instead."""
    if hasattr(graph, "get_concrete_function") and not hasattr(graph, "as_graph_def") and not hasattr(graph, "graph"):
        name = getattr(graph, "__name__", None) or "fn"
        raise TypeError(
            f"plan() was given the tf.function {name!r}, which has no graph until it is traced for its "
            f"argument types: pass {name}.get_concrete_function(...) with example arguments or "
            f"tf.TensorSpec(shape, dtype) for each, e.g. "
            f"plan({name}.get_concrete_function(tf.TensorSpec([None, 8], tf.float32)))"
        )


ADAPTERS = {
    "tf1": "TF Adapter 1.x (npu_bridge, sess.run graphs)",
    "tf2": "TF Adapter 2.x (npu_device, tf.function graphs)",
}


def _check_adapter(adapter: object) -> None:
    """One clear error for an unknown ``adapter=`` value, naming the allowed ones."""
    if adapter not in ADAPTERS:
        allowed = "; ".join(f"{k!r}: {v}" for k, v in ADAPTERS.items())
        raise ValueError(f"plan(adapter={adapter!r}) is not a known adapter; allowed: {allowed}")


def plan(
    graph: Graph | GraphDef | ConcreteFunction,
    config: ConfigSource = None,
    *,
    fetches: object = None,
    soc: str | None = None,
    adapter: str = "tf1",
) -> Plan:
    """Decide placement, engine, precision and partition for every op of ``graph``.

    Parameters
    ----------
    graph : tf.Graph, GraphDef or ConcreteFunction
        The graph to plan; for a ``tf.function`` its concrete function (its ``.graph`` is read).
    config : NpuConfig, mapping of parameter_map keys, or None
        Session options; unset options take the adapter's C++ defaults (full offload, training).
        A bad value or unknown key raises NpuConfigError; broken cross-option rules (what
        ``NpuConfig.validate()`` rejects) are planned anyway and listed in ``plan.errors``.
    fetches : op or tensor names (or tensors/operations), optional
        Plan only what these need.
    soc : str, optional
        SoC table to use ("Ascend910", "Ascend910B"); wins over ``config.soc_config``.
    adapter : "tf1" or "tf2"
        Whose placement rule decides: the TF1 adapter's partition pass (default), or the TF2
        adapter's ``npu_device`` NodePlacer (:mod:`npu_jupyter._plan.tf2.placement`) for ``tf.function`` graphs.
        Precision is GE's in both.

    """
    from npu_jupyter._plan.approximate import approximate_marks
    from npu_jupyter._plan.functional_flow import functional_flow_note
    from npu_jupyter._plan.graph import graph_exec
    from npu_jupyter._plan.partition import partition
    from npu_jupyter._plan.placement import place
    from npu_jupyter._plan.precision import decide_precision
    from npu_jupyter._plan.settings import checked_config, config_changes, read_settings

    _check_adapter(adapter)
    _refuse_tf_function(graph)
    config, config_errors = checked_config(config)
    settings = read_settings(config, soc)
    tf2 = None
    if adapter == "tf2":
        from npu_jupyter._plan.tf2 import placement as tf2_placement

        settings, unread = tf2_placement.tf2_settings(settings, config_changes(config))
        from npu_jupyter._options.tf2 import tf2_options

        tf2_options(config)  # a value npu_device refuses raises as it would there
    lib = library_for(settings.soc)
    # Planning allocates many small acyclic objects; the cyclic collector would only rescan them.
    was_enabled = gc.isenabled()
    gc.disable()
    planned = False
    try:
        view = _view(graph, fetches)
        graph_notes: list[str] = []
        if adapter == "tf1":  # the TF1 partition pass reads the graph's own dynamic config over the session's
            settings, graph_notes, graph_errors = graph_exec.apply(settings, view.exec_config)
            config_errors = config_errors + graph_errors
            # not of a ConcreteFunction: TF 2 code, for which TF 1.15's control flow is no advice
            flow_note = None if hasattr(graph, "graph") else functional_flow_note(view)
            if flow_note is not None:
                graph_notes = [*graph_notes, flow_note]
        with _stage_progress(len(view.order)) as bar:
            bar.describe("placement")
            if adapter == "tf2":
                tf2 = tf2_placement.place_tf2(view, lib, settings)
                placed, part = tf2.placed, tf2.part
            else:
                placed = place(view, lib, settings)
            bar.advance()
            bar.describe("partition")
            if tf2 is None:
                part = partition(view, placed, settings)
            bar.advance()
            bar.describe("precision")
            prec = decide_precision(view, placed.device, part.cluster_of, lib, settings)
            bar.advance()
        # npu_device never reads isGray: no TF2 decision rests on the approximate host-kept list
        marks = approximate_marks(lib, settings.mix_compile_mode and tf2 is None)
        ops = _decisions(view, placed, part.cluster_of, prec.ops, marks)
        prec.ops = []  # now held by the decisions: freed before the collector runs, so never scanned
        planned = True
    finally:
        if was_enabled:
            if planned:
                _promote_to_oldest_generation()
            gc.enable()
    mode_word = "mixed computing" if settings.mix_compile_mode else "full offload"
    notes = graph_notes + placed.notes + part.notes
    if tf2 is not None:
        mode_word = tf2.mode_word
        notes = tf2.notes + placed.notes + part.notes + tf2_placement.unread_note(unread)
    return Plan(
        ops=ops,
        subgraphs=part.subgraphs,
        transfers=part.transfers,
        warnings=placed.warnings + part.warnings + prec.warnings,
        errors=config_errors + placed.errors + part.errors + prec.errors,
        soc=settings.soc,
        precision_mode=prec.mode.name,
        config_changes=config_changes(config),
        title=f"{len(ops)} ops · {mode_word} · {prec.mode.name} ({prec.mode.source}) · {settings.soc}",
        notes=notes,
    )
