"""Which ops the adapter offloads: candidate seeding and the host-propagation rules.

This follows today's adapter (``OMPartitionSubgraphsPass``, tests/data/reference/ADAPTER-FACTS.md §3.1–§3.4): a node is
a device *candidate* when its op type is declared by the op table (and, in mixed computing, not marked ``isGray``), it
is not inside ``without_npu_compile_scope`` (honoured in every mode today; older adapters only honoured it in mixed
computing), and a handful of structural rules hold. Host nodes then pull neighbours to the host across
string/resource/variant and ref edges until nothing changes. Clustering and the full-offload "largest cluster only" rule
live in :mod:`partition`.

Every decision carries a sentence for the person reading the plan, not an internal rule id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from npu_jupyter._ops.variable_ops import VARIABLE_OPS
from npu_jupyter._options.grammars import parse_in_out_pair  # one reading of the syntax, shared with the config check
from npu_jupyter._plan import rewrites
from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.settings import PlanSettings
from npu_jupyter._plan.while_frames import frame_rule

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpCaps, OpLibrary

_EDGE_KEPT_OFF_DEVICE = frozenset({"string", "resource", "variant"})
_ITERATOR_OPS = frozenset({"Iterator", "IteratorV2"})
# Besides "*Dataset*" ops, what an iterator initializer's run graph holds (its inputs, fed or constant)
_PIPELINE_OPS = frozenset({"Const", "NoOp", "Identity", "Placeholder", "PlaceholderWithDefault", "MakeIterator"})
_GETNEXT_OPS = frozenset({"IteratorGetNext", "GetNext"})
_NEVER_SEEDED = frozenset({"_Arg", "_Retval", "StringJoin"})


@dataclass
class Placement:
    """Per node index: candidate flag, engine and reason; plus whole-graph findings."""

    device: list[bool]
    engine: list[str]
    reason: list[str]
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    in_out_pair: bool = False  # candidates came from in_out_pair (no propagation, no cut-off)


# --------------------------------------------------------------------------------------------
# per-node support test (§3.2)
# --------------------------------------------------------------------------------------------


def _declared(op: str, lib: OpLibrary, mix: bool) -> bool:
    caps = lib.caps(op)
    if caps is None or caps.engine == "HOST" or not getattr(caps, "declared", True):
        return False
    return not (mix and caps.gray_in_mix)


def _function_problem(
    name: str,
    view: GraphView,
    lib: OpLibrary,
    mix: bool,
    memo: dict[str, str | None],
    active: frozenset[str] = frozenset(),
) -> str | None:
    """First op type inside function ``name`` (recursively) the device cannot run, else None."""
    if name in memo:
        return memo[name]
    info = view.functions.get(name)
    if info is None or name in active:
        return None
    memo[name] = None  # provisional: recursion through itself is not a failure
    problem = None
    for op in info.op_types:
        if op == "Const" or op in view.functions:
            continue
        if not _declared(op, lib, mix):
            problem = op
            break
    if problem is None:
        for callee in info.calls:
            problem = _function_problem(callee, view, lib, mix, memo, active | {name})
            if problem is not None:
                break
    memo[name] = problem
    return problem


def _unsupported_resource(n: Node, view: GraphView) -> bool:
    """Mixed computing: resource ops must read a VarHandleOp directly (iterators, tables stay host).

    The first resource input decides (``list.index``, in C: this runs for every resource node). Its
    producer is found by index, not by name: the name is the same, and the lookup by name costs a
    string comparison with a key that is another string object.
    """
    dtypes = n.input_dtypes
    if "resource" in dtypes:
        j = n.in_idx[dtypes.index("resource")]
        return j < 0 or view.order[j].op != "VarHandleOp"
    if "resource" in n.output_dtypes:
        return n.op != "VarHandleOp"
    return False


def _no_kernel_reason(n: Node, s: PlanSettings) -> str:
    if s.mix_compile_mode:
        return f"{n.op} has no device kernel: runs on the host (mixed computing)"
    return f"{n.op} has no device kernel (not in npu_supported_ops.json): runs on the host CPU"


def _seed(
    n: Node, view: GraphView, lib: OpLibrary, s: PlanSettings, memo: dict[str, str | None]
) -> tuple[bool | None, str]:
    """(True, why) candidate; (False, why) host; (None, why) skipped entirely (rule 4)."""
    mix = s.mix_compile_mode
    op = n.op
    if n.no_need_optimize:
        return False, "marked _NoNeedOptimize: the adapter leaves it to TensorFlow"
    if n.without_npu_compile:
        return False, "inside without_npu_compile_scope: runs on the host"
    if op.endswith(("Dataset", "DatasetV2")):
        return False, "tf.data dataset op: the input pipeline runs on the host, never inside a GeOp"
    if op in _NEVER_SEEDED:
        return False, f"{op} is never offloaded by the adapter"
    if s.enable_data_pre_proc and op in _ITERATOR_OPS | _GETNEXT_OPS | {"AdpGetNext"}:
        return None, ""  # decided as a pair in _seed_data_pre_proc
    if op == rewrites.UNARY_COMPOSITION:
        return rewrites.seed_unary_composition(n, lambda t: _declared(t, lib, mix))
    caps = lib.caps(op)
    if caps is not None and not getattr(caps, "declared", True):
        caps = None
    if caps is None or caps.engine == "HOST":
        if n.functions and op in view.functions:
            problem = _function_problem(op, view, lib, mix, memo)
            if problem is not None:
                return False, f"calls function {op}, which contains {problem} (no device kernel): runs on the host"
        else:
            return False, _no_kernel_reason(n, s)
    elif mix and caps.gray_in_mix:
        what = getattr(caps, "gray_reason", "") or "isGray in the op table"
        return False, f"{op} is kept on the host in mixed computing ({what})"
    for fname in n.functions:
        if fname == op:
            continue
        problem = _function_problem(fname, view, lib, mix, memo)
        if problem is not None:
            return None, (
                f"calls function {fname}, which contains {problem} (no device kernel): "
                "the adapter skips it, so it runs on the host"
            )
    if mix and _unsupported_resource(n, view):
        return False, (
            "uses a resource that is not a variable read directly from VarHandleOp "
            "(iterator, table, captured handle): stays on the host in mixed computing"
        )
    if s.variable_placement == "Host" and op in VARIABLE_OPS:
        return False, "variable_placement='Host': variables stay on the host"
    if caps is not None and not (n.functions and getattr(caps, "kernel", "") == "function_call"):
        return True, _device_reason(caps)
    # caps is None here only for a call of a library function (an unknown op without one returned above)
    return True, f"function call: every op of {', '.join(n.functions)} runs on the device"


def _device_reason(caps: OpCaps) -> str:
    kernel = getattr(caps, "kernel", "")
    if kernel == "ge":
        return f"supported by the device: {caps.ir_type} is executed by GE itself (no compute kernel)"
    where = "AI CPU" if caps.engine == "AI_CPU" else "AI Core"
    return f"supported by the device: {caps.ir_type} on the {where}"


def _engine(n: Node, lib: OpLibrary) -> str:
    if n.op == rewrites.UNARY_COMPOSITION:
        return rewrites.unary_composition_engine(n, lib)
    caps = lib.caps(n.op)
    if caps is None or caps.engine == "HOST":
        return "AI_CORE"  # function calls and consts: compiled into the GeOp
    return caps.engine


def _seed_data_pre_proc(view: GraphView, device: list[bool], reason: list[str]) -> None:
    """enable_data_pre_proc: an iterator and the GetNext it feeds go to the device as a pair."""
    for n in view.order:
        if n.op == "AdpGetNext":
            device[n.index] = True
            reason[n.index] = "AdpGetNext reads the device data queue (enable_data_pre_proc)"
        elif n.op in _GETNEXT_OPS and n.input_names:
            it = view.nodes.get(n.input_names[0])
            if it is not None and it.op in _ITERATOR_OPS and not n.without_npu_compile:
                for m in (n, it):
                    device[m.index] = True
                    reason[m.index] = (
                        "iterator + GetNext pair read the device data queue (enable_data_pre_proc): offloaded together"
                    )
    for n in view.order:
        if not device[n.index] and (n.op in _ITERATOR_OPS or n.op in _GETNEXT_OPS):
            reason[n.index] = _unpaired_reason(n, view)


def _unpaired_reason(n: Node, view: GraphView) -> str:
    """Why enable_data_pre_proc leaves this iterator or GetNext on the host (the adapter's pairing rule).

    The adapter sinks an IteratorGetNext only when it reads an ``Iterator``/``IteratorV2`` (what
    ``make_initializable_iterator`` and ``Iterator.from_structure`` create), and such an iterator only
    when it feeds an IteratorGetNext. A GetNext reading a OneShotIterator (``make_one_shot_iterator``)
    or a captured handle is never a candidate.
    """
    if n.op in _ITERATOR_OPS:
        return (
            f"{n.op} feeds no IteratorGetNext: enable_data_pre_proc sinks an iterator only together "
            "with the GetNext that reads it, so it stays on the host"
        )
    if n.without_npu_compile:
        return "inside without_npu_compile_scope: runs on the host"
    src = view.nodes.get(n.input_names[0]) if n.input_names else None
    what = f"the {src.op} {src.name!r}" if src is not None else "an iterator outside this graph"
    return (
        f"reads {what}, not an Iterator/IteratorV2: enable_data_pre_proc sinks only a GetNext fed by an "
        "initializable iterator (make_initializable_iterator / from_structure), so it stays on the host"
    )


# --------------------------------------------------------------------------------------------
# whole-graph exits (§3.1)
# --------------------------------------------------------------------------------------------


def _only_the_input_pipeline(view: GraphView) -> bool:
    """Whether the graph is an iterator initializer's run and nothing more (datasets, iterator, MakeIterator).

    Every script with an initializable iterator runs one; the adapter leaves it to the data pre-processing
    pass, as expected, so the exit is a note. An op of another type whose every output only feeds the
    pipeline belongs to it too: ``TFRecordDataset(files)`` reshapes its file names (a ``Reshape`` into
    ``TensorSliceDataset``; ModelZoo CycleGAN_ID0716's initializer read "warning: Nothing is offloaded").
    A graph that also holds compute (a whole tf.Graph planned with the initializer in it) offloads none
    of that compute: that stays a warning.
    """
    cons, pipeline = view.consumers(), [False] * len(view.order)
    for n in reversed(view.order):  # consumers first: an op is the pipeline's when all it feeds is
        named = n.op in _PIPELINE_OPS or n.op in _ITERATOR_OPS or "Dataset" in n.op or "SeedGenerator" in n.op
        pipeline[n.index] = named or (bool(cons[n.index]) and all(pipeline[j] for j, _ in cons[n.index]))
        if not pipeline[n.index]:
            return False
    return True


def _early_exit(view: GraphView, s: PlanSettings) -> str | None:
    if not s.use_off_line:
        return "use_off_line is False: the adapter runs the whole graph as plain TensorFlow"
    if s.job in ("ps", "default"):
        return f"job={s.job!r}: the adapter does not partition this graph"
    ops = view.op_counts().keys()
    if "OutfeedDequeueOp" in ops:
        return "the graph contains OutfeedDequeueOp: a host-call graph runs wholly on the host"
    if ops & _ITERATOR_OPS and any("MakeIterator" in op for op in ops):
        return "dataset initialisation graph (MakeIterator + Iterator): handled by the data pre-processing pass"
    return None


# --------------------------------------------------------------------------------------------
# in_out_pair (§3.4)
# --------------------------------------------------------------------------------------------


def _reach(view: GraphView, starts: list[int], forward: bool) -> set[int]:
    """Indices reachable from ``starts`` over data and control edges (inclusive)."""
    if forward:
        succ = _successors(view)
    seen = set(starts)
    stack = list(starts)
    while stack:
        i = stack.pop()
        if forward:
            nxt = succ[i]
        else:
            n = view.order[i]
            nxt = [j for j in (*n.in_idx, *n.ctrl_idx) if j >= 0]
        for j in nxt:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


def _successors(view: GraphView) -> list[list[int]]:
    succ: list[list[int]] = [[] for _ in view.order]
    for n in view.order:
        for j in (*n.in_idx, *n.ctrl_idx):
            if j >= 0:
                succ[j].append(n.index)
    return succ


def _in_out_pair_nodes(view: GraphView, pairs: list[tuple[list[str], list[str]]], warnings: list[str]) -> set[int]:
    collected: set[int] = set()
    for ins, outs in pairs:
        missing = [x for x in ins + outs if x not in view.nodes]
        if missing:
            warnings.append(f"in_out_pair names nodes that are not in the graph: {', '.join(missing)}")
        starts = [view.nodes[x].index for x in ins if x in view.nodes]
        ends = [view.nodes[x].index for x in outs if x in view.nodes]
        if starts and ends:
            collected |= _reach(view, starts, True) & _reach(view, ends, False)
    return collected


def _place_in_out_pair(view: GraphView, lib: OpLibrary, s: PlanSettings, collected: set[int], out: Placement) -> None:
    """in_out_pair_flag=True: exactly the range is offloaded; False: everything but the range."""
    memo: dict[str, str | None] = {}
    for n in view.order:
        i = n.index
        inside = i in collected
        if n.op == "Const":
            ok, why = True, "constant"
        else:
            seeded, why = _seed(n, view, lib, s, memo)  # s is in mixed computing here
            ok = bool(seeded)
        if s.in_out_pair_flag:
            if inside:
                if not ok:
                    out.errors.append(f"{n.name} is not supported npu node.")
                    out.reason[i] = f"inside the in_out_pair range but the device cannot run it ({why})"
                    continue
                out.device[i] = True
                out.reason[i] = "inside the in_out_pair range (in_out_pair_flag=True): offloaded"
            else:
                out.reason[i] = "outside every in_out_pair range (in_out_pair_flag=True): stays on the host"
        elif inside:
            out.reason[i] = "inside an in_out_pair range with in_out_pair_flag=False: stays on the host"
        elif ok:
            out.device[i] = True
            out.reason[i] = "outside the in_out_pair ranges (in_out_pair_flag=False): offloaded"
        else:
            out.reason[i] = why
        if out.device[i]:
            out.engine[i] = _engine(n, lib)


# --------------------------------------------------------------------------------------------
# propagation (§3.3)
# --------------------------------------------------------------------------------------------


def _propagate(view: GraphView, s: PlanSettings, out: Placement, skipped: list[bool]) -> None:
    """Pull candidates to the host across ref and string/resource/variant edges (fixed point)."""
    order = view.order
    device = out.device
    cons = view.consumers()
    ipl1 = s.iterations_per_loop == 1
    work = [n.index for n in order if not device[n.index] and not skipped[n.index]]

    def pull(j: int, why: str) -> None:
        device[j] = False
        out.reason[j] = why
        work.append(j)

    while work:
        i = work.pop()
        n = order[i]
        for j, pos in cons[i]:
            if not device[j]:
                continue
            d = order[j]
            dt = d.input_dtypes[pos]
            if d.input_refs is not None and d.input_refs[pos]:
                pull(
                    j,
                    f"takes a ref input (variable) from host op {n.name}: a ref tensor cannot cross "
                    "into a GeOp, so it runs on the host",
                )
            elif dt in _EDGE_KEPT_OFF_DEVICE:
                if d.op_max_size or d.op == "Assert" or n.op == "Const" or (dt == "string" and ipl1):
                    continue
                pull(j, _edge_reason(dt, "reads", n.name))
        for pos, k in enumerate(n.in_idx):
            if k < 0 or not device[k]:
                continue
            p = order[k]
            dt = n.input_dtypes[pos]
            if n.input_refs is not None and n.input_refs[pos]:
                pull(
                    p.index,
                    f"feeds a ref input of host op {n.name}: a ref tensor cannot leave a GeOp, so it runs on the host",
                )
            elif dt in _EDGE_KEPT_OFF_DEVICE:
                if n.op_max_size or (dt == "string" and ipl1):
                    continue
                if s.enable_data_pre_proc and dt == "string" and p.op in _GETNEXT_OPS:
                    continue
                pull(p.index, _edge_reason(dt, "feeds", n.name))


def _edge_reason(dtype: str, verb: str, other: str) -> str:
    tail = ""
    if dtype == "string":
        tail = " (strings may cross only when iterations_per_loop is 1)"
    return (
        f"{verb} a {dtype} tensor {'from' if verb == 'reads' else 'to'} host op {other}: {dtype} "
        f"tensors never cross a GeOp boundary{tail}, so it runs on the host"
    )


def _add_consts(view: GraphView, out: Placement) -> None:
    """A Const joins the device when a device node consumes it or controls it (AddRelationalConst)."""
    cons = view.consumers()
    device = out.device
    for n in view.order:
        if n.op != "Const":
            continue
        i = n.index
        if n.without_npu_compile or n.no_need_optimize:
            out.reason[i] = (
                "inside without_npu_compile_scope: runs on the host"
                if n.without_npu_compile
                else "marked _NoNeedOptimize: the adapter leaves it to TensorFlow"
            )
            continue
        uses = cons[i]
        # most consts feed one op, whose flag answers without building a generator
        if (uses and device[uses[0][0]]) or any(device[j] for j, _ in uses) or any(device[c] for c in n.ctrl_idx):
            device[i] = True
            out.reason[i] = "constant used by device ops: compiled into the GeOp"
        else:
            out.reason[i] = "constant used only by host ops: stays on the host"


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def place(view: GraphView, lib: OpLibrary, s: PlanSettings) -> Placement:
    """Candidate (device) flag, engine and reason for every node, before clustering."""
    count = len(view.order)
    out = Placement(device=[False] * count, engine=["HOST"] * count, reason=[""] * count)
    exit_reason = _early_exit(view, s)
    if exit_reason is not None:
        out.reason = [exit_reason] * count
        if _only_the_input_pipeline(view):
            out.notes.append(f"Nothing to offload: {exit_reason}.")
        else:
            out.warnings.append(f"Nothing is offloaded: {exit_reason}.")
        return out
    if s.in_out_pair:
        pairs = parse_in_out_pair(s.in_out_pair)
        if not pairs:
            out.errors.append(f"in_out_pair: {s.in_out_pair} is invalid.")
        elif not s.mix_compile_mode:
            out.warnings.append("in_out_pair is only read in mixed computing (mix_compile_mode=True): ignored")
        else:
            collected = _in_out_pair_nodes(view, pairs, out.warnings)
            if collected:
                out.in_out_pair = True
                _place_in_out_pair(view, lib, s, collected, out)
                return out
    counts = view.op_counts()
    getnexts = counts.get("IteratorGetNext", 0)
    if s.input_shape and s.dynamic_dims and getnexts > 1:
        out.errors.append(
            f"dynamic dims func can not support graph with {getnexts} IteratorGetNext node. (input_shape "
            "+ dynamic_dims need exactly one GetNext in the run graph; the adapter aborts the process)"
        )
    if s.iterations_per_loop != 1 and "OneShotIterator" in counts:
        out.errors.append(
            f"iterator_per_loop only support 1 when using OneShotIterator (iterations_per_loop is "
            f"{s.iterations_per_loop}; the adapter aborts the process: use an initializable iterator)"
        )
    if (
        not s.enable_data_pre_proc
        and not _GETNEXT_OPS.isdisjoint(counts)
        and any(n.op in _GETNEXT_OPS and "string" in n.output_dtypes for n in view.order)
    ):
        out.warnings.append("Dataset outputs have string output_type, please set enable_data_pre_proc=True.")
    memo: dict[str, str | None] = {}
    by_type: dict[str, tuple[bool | None, str]] = {}
    by_resource: dict[tuple[str, bool], tuple[bool | None, str]] = {}
    skipped = [False] * count
    mix = s.mix_compile_mode
    unary = rewrites.UNARY_COMPOSITION
    for n in view.order:
        op = n.op
        if op == "Const":
            continue
        # a node :func:`_seed` decides from its op type alone, but for its resource edges, is "plain":
        # no scope flags or called functions, not a fused unary chain. A training graph is almost
        # all such nodes, so each op type is seeded once; in mixed computing, which tests resource
        # edges (:func:`_unsupported_resource`), once per op type and answer of that test for the
        # nodes with a resource input or output (ResNet-50's training step: 2,000 of 8,500 nodes).
        # The test is written out here rather than called: it runs for every node.
        if n.no_need_optimize or n.without_npu_compile or n.functions or op == unary:
            ok, why = _seed(n, view, lib, s, memo)
        elif not (mix and ("resource" in n.input_dtypes or "resource" in n.output_dtypes)):
            seeded = by_type.get(op)  # seeded like every other plain node of its type
            if seeded is None:
                seeded = by_type[op] = _seed(n, view, lib, s, memo)
            ok, why = seeded
        else:  # mixed computing: the op type and whether its resource is a variable's handle decide
            key = (op, _unsupported_resource(n, view))
            seeded = by_resource.get(key)
            if seeded is None:
                seeded = by_resource[key] = _seed(n, view, lib, s, memo)
            ok, why = seeded
        i = n.index
        if ok is None:
            skipped[i] = True
        else:
            out.device[i] = ok
        out.reason[i] = why
    if s.enable_data_pre_proc:
        _seed_data_pre_proc(view, out.device, out.reason)
    if s.mix_compile_mode:
        frame_rule(view, out.device, out.reason, skipped)
    _propagate(view, s, out, skipped)
    _add_consts(view, out)
    _set_engines(view, lib, out)
    return out


def _set_engines(view: GraphView, lib: OpLibrary, out: Placement) -> None:
    """The engine of every device node (looked up once per op type but for fused unary chains)."""
    engine_of: dict[str, str] = {}
    device, engine = out.device, out.engine
    for n in view.order:
        i = n.index
        if not device[i]:
            continue
        op = n.op
        got = engine_of.get(op)
        if got is None:
            got = _engine(n, lib)
            if op != rewrites.UNARY_COMPOSITION:
                engine_of[op] = got
        engine[i] = got
        if op == rewrites.ACCUMULATE:
            out.reason[i] += f"; {rewrites.accumulate_note(n)}"
