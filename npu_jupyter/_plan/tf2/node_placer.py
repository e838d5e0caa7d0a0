"""npu_device's NodePlacer in mix mode: which nodes of a function graph go to the NPU, which to the CPU.

Steps of ``NodePlacer::Apply`` (``tf_adapter_2.x/npu_device/core/optimizers/runtime/node_placer.cpp``) on
the planner's graph view, in order: DeterminedSurelyNodes, SpreadCpuNode (with the function's return
values as CPU ``_Retval`` consumers), BuildConcreteCluster, SpreadNpuNode and CopyShareableNode; the
rules are listed in :mod:`npu_jupyter._plan.tf2.placement` and ``docs/faithfulness.md``. Op support
(``NpuDevice::Supported``) and the dtypes that can cross between CPU and NPU
(``DataTypeCanUseMemcpy``) are answered here too, from ``tf2_placement.json``.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Callable, Collection

from npu_jupyter._package_data import read_package_text
from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.placement import Placement, _device_reason

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpLibrary

CPU, ANY, NPU = 0, 1, 2
SOURCE = "node_placer.cpp"


@functools.lru_cache(maxsize=1)
def op_lists() -> dict[str, frozenset[str]]:
    """The op lists of ``tf2_placement.json`` as frozensets (parsed once per process)."""
    data = json.loads(read_package_text("npu_jupyter._plan.tf2", "tf2_placement.json"))
    return {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}


def supported(op: str, lib: OpLibrary) -> bool:
    """``NpuDevice::Supported``: a key of npu_supported_ops.json (isGray not read) or an add-on op."""
    if op in op_lists()["addon_supported_ops"]:
        return True
    caps = lib.caps(op)
    return caps is not None and caps.engine != "HOST" and bool(getattr(caps, "declared", True))


def subgraph_unsupported(names: Collection[str], view: GraphView, lib: OpLibrary) -> list[str]:
    """Unsupported op types inside functions ``names`` and all they call (``GetSubgraphUnsupportedOps``)."""
    queue, seen = list(names), set(names)
    found: list[str] = []
    while queue:
        info = view.functions.get(queue.pop(0))
        if info is None:
            continue
        found.extend(op for op in info.op_types if op not in found and not supported(op, lib))
        for callee in info.calls:
            if callee not in seen:
                seen.add(callee)
                queue.append(callee)
    return found


def copyable(dtype: str) -> bool:
    """``DataTypeCanUseMemcpy``: can a tensor of ``dtype`` cross between CPU and NPU."""
    return dtype not in op_lists()["non_copyable_dtypes"] and not dtype.endswith("_ref")


def is_arg(n: Node) -> bool:
    """True for a function argument (a traced graph's input Placeholder; NodePlacer's ``_Arg``)."""
    return n.op == "Placeholder" and not n.input_names


def supported_reason(n: Node, lib: OpLibrary) -> str:
    """The support sentence of a supported op, saying when the TF1 adapter would have kept it off."""
    if n.op == "Const":
        return "constant"
    if n.functions:
        return f"calls {', '.join(n.functions)}, whose ops are all supported"
    caps = lib.caps(n.op)
    if caps is None or caps.engine == "HOST":
        return f"{n.op} is an add-on op npu_device supports (npu_device.cpp LoadSupportedOps)"
    text = _device_reason(caps)
    if caps.gray_in_mix:
        text += " (isGray: the TF1 adapter keeps it on the host in mixed computing; npu_device ignores isGray)"
    return text


def place_mixed(
    view: GraphView, lib: OpLibrary, placed: Placement, substitutes: dict[int, str], cpu_res: dict[int, str]
) -> list[bool]:
    """Steps 1-4 and 6 of NodePlacer::Apply; device flags and reasons into ``placed``.

    Returns which nodes must be on the NPU (step 1), which step 5 needs.
    """
    lists = op_lists()
    state = [ANY] * len(view.order)
    must_npu = [False] * len(view.order)
    reason = placed.reason
    for n in view.order:
        i = n.index
        state[i], reason[i] = _determined(n, view, lib, substitutes, cpu_res)
        must_npu[i] = state[i] == NPU
    _returned_uncopyable(view, state, reason, must_npu, placed.errors)
    _spread_cpu(view, state, reason, must_npu, placed.errors, substitutes, lambda root: _verdict_data(root, view, lib))
    _concrete(view, state, reason, substitutes)
    mutex = any(n.op in lists["cpu_only_marker_ops"] for n in view.order)
    for n in view.order:
        i = n.index
        if state[i] == ANY and n.op != "Const" and mutex:
            state[i] = CPU
            reason[i] = (
                f"npu_device: the function holds MutexLock (tf.CriticalSection), so only ops that must run on the "
                f"NPU are compiled: runs on the CPU ({SOURCE} SpreadNpuNode)"
            )
        elif state[i] != CPU and n.op != "Const":
            state[i] = NPU
            if not reason[i]:
                reason[i] = f"npu_device: {supported_reason(n, lib)}; joins an NPU cluster ({SOURCE} SpreadNpuNode)"
    for n in view.order:
        placed.device[n.index] = state[n.index] == NPU
    _copied_consts(view, placed)
    return must_npu


def _determined(
    n: Node, view: GraphView, lib: OpLibrary, substitutes: dict[int, str], cpu_res: dict[int, str]
) -> tuple[int, str]:
    """``DeterminedSurelyNodes``: (state, reason) of one node before any spreading."""
    where = f"({SOURCE} DeterminedSurelyNodes)"
    if n.index in substitutes:
        what = substitutes[n.index]
        return (
            NPU,
            f"npu_device: resource argument replaced by its NPU {what} (_is_substitute): on the NPU {where}",
        )
    if n.index in cpu_res:
        return CPU, f"npu_device: {cpu_res[n.index]} (_Arg frame node): on the CPU {where}"
    if is_arg(n):
        return (
            CPU,
            f"npu_device: function argument (_Arg frame node): on the CPU; its value enters NPU clusters as an input {where}",
        )
    if n.op == "Const":
        return ANY, ""
    if not supported(n.op, lib):
        return CPU, f"npu_device: {n.op} is not in npu_supported_ops.json: runs on the CPU {where}"
    if n.op in op_lists()["npu_specific_ops"]:
        return NPU, f"npu_device: {n.op} is an op of the adapter's own library (npu specific): on the NPU {where}"
    problems = subgraph_unsupported(n.functions, view, lib) if n.functions else []
    if problems:
        return CPU, (
            f"npu_device: calls {', '.join(n.functions)}, which holds {', '.join(problems[:3])} (not in "
            f"npu_supported_ops.json): runs on "
            f"the CPU {where}; the ops inside are placed again by the same rule (PlaceCpuNodeSubgraphs)"
        )
    return ANY, ""


def _returned_uncopyable(
    view: GraphView, state: list[int], reason: list[str], must_npu: list[bool], errors: list[str]
) -> None:
    """A function output feeds a ``_Retval`` (a CPU frame node): an uncopyable one pulls its producer."""
    for out in getattr(view.tf_graph, "outputs", None) or []:
        n = view.nodes.get(out.op.name)
        dtype = out.dtype.name
        if n is None or copyable(dtype) or state[n.index] == CPU:
            continue
        if must_npu[n.index]:
            errors.append(
                f"Failed spread place {n.name} on cpu as has placed on npu (npu_device {SOURCE} SpreadCpuNode)"
            )
            continue
        state[n.index] = CPU
        reason[n.index] = (
            f"npu_device: returns a {dtype} tensor from the function; the return value (_Retval) is on the CPU and "
            f"{dtype} tensors cannot be copied, so it runs on the CPU ({SOURCE} SpreadCpuNode)"
        )


def _verdict_data(root: Node, view: GraphView, lib: OpLibrary) -> str:
    """Whether a compile-failure verdict rests on approximate op data: the op types that put ``root`` on the CPU.

    Bundled tables approximate which op types npu_supported_ops.json declares; a type absent from them
    is a guess, a curated host-only type (a Python callback, a tf.data op) is not.
    """
    types = [root.op] if not root.functions else subgraph_unsupported(root.functions, view, lib)
    if not types or not getattr(lib, "approximate", False):
        return ""
    guessed = [t for t in types if lib.caps(t) is None]
    if guessed:
        return (
            f" This verdict rests on approximate op data: {', '.join(guessed[:3])} is not in the bundled "
            "approximation of npu_supported_ops.json (no CANN install was read)."
        )
    return (
        f" It does not rest on approximate op data: {', '.join(types[:3])} is a host-only op type in the "
        "bundled tables (with its source)."
    )


def _spread_cpu(
    view: GraphView,
    state: list[int],
    reason: list[str],
    must_npu: list[bool],
    errors: list[str],
    substitutes: dict[int, str],
    approximate: Callable[[Node], str] | None = None,
) -> None:
    """``SpreadCpuNode``: CPU placement crosses every uncopyable data edge, both ways, to a fixed point.

    A substitute or constant reached is the copy of one consumer (CopyShareableNode): the spread
    does not go on from it to its other consumers. A node that must be on the NPU reached by the
    spread is the adapter's compile error; the verdict names it, the CPU node that reached it, why
    the spread began there (the node first determined CPU), and whether that rests on approximate data.
    """
    order, cons = view.order, view.consumers()
    work = [i for i, st in enumerate(state) if st == CPU]
    origin = {i: i for i in work}  # node -> the node determined CPU that the spread started from
    seen = set(work)
    while work:
        i = work.pop()
        n = order[i]
        edges = [(j, order[j].input_dtypes[pos], "feeds") for j, pos in cons[i]]
        edges += [(k, n.input_dtypes[pos], "reads") for pos, k in enumerate(n.in_idx) if k >= 0]
        for j, dtype, verb in edges:
            if j in seen or copyable(dtype):
                continue
            seen.add(j)
            origin[j] = origin[i]
            if j not in substitutes and order[j].op != "Const":
                work.append(j)
            if must_npu[j]:
                root = order[origin[i]]
                what = _arg_label(view, order[j].name) if is_arg(order[j]) else order[j].op
                errors.append(
                    f"Failed spread place {order[j].name} on cpu as has placed on npu (npu_device {SOURCE} "
                    f"SpreadCpuNode): {order[j].name} ({what}) must run on the NPU but exchanges a {dtype} tensor "
                    f"with CPU op {n.name}, so the function fails to compile. The CPU placement starts at "
                    f"{root.name} ({root.op}): {_strip(reason[root.index])}."
                    + (approximate(root) if approximate is not None else "")
                )
                continue
            if state[j] == ANY:
                state[j] = CPU
                other = "to" if verb == "reads" else "from"
                reason[j] = (
                    f"npu_device: {'gets' if verb == 'feeds' else 'sends'} a {dtype} tensor {other} CPU op {n.name}; "
                    f"{dtype} tensors cannot be copied between CPU and NPU, so it runs on the CPU ({SOURCE} SpreadCpuNode)"
                )


def _arg_label(view: GraphView, name: str) -> str:
    """``resource argument: variable dense/kernel:0`` for a captured variable's placeholder, when known."""
    graph = view.tf_graph
    try:
        handles = {id(v.handle): v.name for v in getattr(graph, "variables", ())}
        for external, internal in getattr(graph, "captures", ()):
            if internal.op.name == name and id(external) in handles:
                return f"resource argument: variable {handles[id(external)]}"
    except Exception:  # noqa: BLE001, S110 - a graph without captures: the plain label below
        pass
    return "resource argument"


def _strip(reason: str) -> str:
    """A placement reason without its ``npu_device:`` lead and source reference, to quote in a sentence."""
    lead = "npu_device: "
    text = reason[len(lead) :] if reason.startswith(lead) else reason
    return text.split(f" ({SOURCE}", 1)[0] if f"({SOURCE}" in text else text


def _concrete(view: GraphView, state: list[int], reason: list[str], substitutes: dict[int, str]) -> None:
    """``BuildConcreteCluster``: ends of an uncopyable edge and the nodes on paths between them stay together.

    Constants and substitutes are copied per consumer first (CopyShareableNode), so an edge leaving
    one ties nothing else together. A group holding a CPU node goes wholly to the CPU.
    """
    order = view.order
    parent = list(range(len(order)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    for n in order:
        for pos, u in enumerate(n.in_idx):
            if u < 0 or copyable(n.input_dtypes[pos]) or state[u] == CPU:
                continue
            if order[u].op == "Const" or u in substitutes:
                continue  # a copy of its own for this consumer: nothing else is tied to it
            union(u, n.index)
            for k in _path_nodes(view, u, n.index):
                union(k, n.index)
    groups: dict[int, list[int]] = {}
    for i in range(len(order)):
        groups.setdefault(find(i), []).append(i)
    for members in groups.values():
        cpu = [i for i in members if state[i] == CPU]
        if len(members) < 2 or not cpu:
            continue
        for i in members:
            if state[i] != CPU:
                state[i] = CPU
                reason[i] = (
                    f"npu_device: joined to CPU op {order[cpu[0]].name} by string/resource/variant tensors (or lies on a "
                    f"path between the ends of one), so they are placed together on the CPU ({SOURCE} BuildConcreteCluster)"
                )


def _path_nodes(view: GraphView, u: int, v: int) -> set[int]:
    """Nodes strictly between ``u`` and ``v`` on some path from ``u`` to ``v`` (data and control edges)."""
    preds, succs = view.preds(), view.succs()
    down: set[int] = set()
    stack = [u]
    while stack:
        for j in succs[stack.pop()]:
            if j < v and j not in down:
                down.add(j)
                stack.append(j)
    up: set[int] = set()
    stack = [v]
    while stack:
        for j in preds[stack.pop()]:
            if j > u and j not in up and j in down:
                up.add(j)
                stack.append(j)
    return up


def _copied_consts(view: GraphView, placed: Placement) -> None:
    """``CopyShareableNode``: a constant is copied to each consumer, so it is on the NPU when one is."""
    cons, succs = view.consumers(), view.succs()
    for n in view.order:
        if n.op != "Const":
            continue
        i = n.index
        on_npu = any(placed.device[j] for j, _ in cons[i]) or any(placed.device[j] for j in succs[i])
        placed.device[i] = on_npu
        placed.reason[i] = (
            f"npu_device: constant, copied into the NPU cluster of each consumer ({SOURCE} CopyShareableNode)"
            if on_npu
            else f"npu_device: constant used only by CPU ops: stays on the CPU ({SOURCE} CopyShareableNode)"
        )
