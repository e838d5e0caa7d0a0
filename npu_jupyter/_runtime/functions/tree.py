"""One plan for a traced function and every function it calls: what the report of "Calls of X" shows.

The emulator plans each function of a call tree on its own (the TF2 adapter's NodePlacer places each
graph; GE compiles the called functions with their caller). A report titled after the function that
was called must show *that* function's decisions, and its counts — ops, precision changes, host ops,
clusters, transfers — must include what the functions it calls do: a ``train_step`` whose float16
MatMuls sit in a called ``tf.function`` changes precision, although its own body does not.

:func:`tree_plan` joins the plans: the called function's ops keep their names, the ops of the
functions it calls are named ``<function>/<op>`` (as dumps, drift and non-finite findings name them,
:func:`npu_jupyter._runtime.functions.findings.op_name`), and ``Plan.functions`` lists the functions in
call-tree order, the called one first, so every view can group the ops by function.
"""

from __future__ import annotations

import dataclasses

from npu_jupyter._plan.model import Plan, Subgraph, Transfer
from npu_jupyter._plan.tf2.placement import NPU_DEVICE_WORDS, npu_device_words
from npu_jupyter._runtime.functions.labels import python_name


def tree_plan(plans: list[tuple[str, Plan]]) -> Plan:
    """The plans of a call tree, ``(function name, plan)`` with the called function first, as one plan.

    A single plan is returned unchanged (apart from ``functions``). Findings of a called function
    (warnings, errors, notes) are prefixed with its Python name, so a reader knows whose they are.
    """
    (top_name, top), rest = plans[0], plans[1:]
    if not rest:
        return dataclasses.replace(top, functions=[top_name])
    ops = dict(top.ops)
    top = dataclasses.replace(top, subgraphs=[Subgraph(sub.name, list(sub.ops)) for sub in top.subgraphs])
    subgraphs, transfers = top.subgraphs, list(top.transfers)
    warnings, errors, notes = list(top.warnings), list(top.errors), list(top.notes)
    whole = _whole(top)
    for name, plan in rest:
        prefix = f"{name}/"
        for op, decision in plan.ops.items():
            cluster = decision.cluster and (whole.name if whole is not None else prefix + decision.cluster)
            ops[prefix + op] = dataclasses.replace(
                decision, name=prefix + op, inputs=[prefix + src for src in decision.inputs], cluster=cluster
            )
        if whole is not None:  # GE compiles the called functions into the caller's one NPU graph
            whole.ops += [prefix + op for sub in plan.subgraphs for op in sub.ops]
        else:
            subgraphs += [Subgraph(prefix + sub.name, [prefix + op for op in sub.ops]) for sub in plan.subgraphs]
        transfers += [_prefixed(t, prefix) for t in plan.transfers]
        who = f"in {python_name(name)}: "
        warnings += [who + message for message in plan.warnings]
        errors += [who + message for message in plan.errors]
        notes += [who + note for note in plan.notes]
    return dataclasses.replace(
        top,
        ops=ops,
        subgraphs=subgraphs,
        transfers=transfers,
        warnings=list(dict.fromkeys(warnings)),
        errors=list(dict.fromkeys(errors)),
        notes=list(dict.fromkeys(notes)),
        title=_tree_title(top.title, len(ops), len(plans), whole is not None, len(subgraphs)),
        functions=[name for name, _ in plans],
    )


def _tree_title(title: str, ops: int, functions: int, whole: bool, clusters: int) -> str:
    """The called function's plan title restated for the whole call tree.

    Its op count and, under npu_device, its NPU cluster count become the tree's, so the title agrees
    with the counts line under it ("2 device clusters" must not sit under "mixed, 1 NPU cluster(s)").
    """
    head, _, tail = title.partition(" · ")
    if not head.endswith(" ops"):
        return title
    mode, sep, rest = tail.partition(" · ")
    if mode.startswith(NPU_DEVICE_WORDS):
        mode = npu_device_words(whole, clusters)
    return f"{ops} ops in {functions} functions · {mode}{sep}{rest}"


def _whole(plan: Plan) -> Subgraph | None:
    """The one NPU graph of a function npu_device compiles whole (every op on the device), else None."""
    if len(plan.subgraphs) == 1 and all(d.placement == "device" for d in plan.ops.values()):
        return plan.subgraphs[0]
    return None


def _prefixed(transfer: Transfer, prefix: str) -> Transfer:
    return dataclasses.replace(
        transfer,
        src=prefix + transfer.src,
        dst=prefix + transfer.dst,
        tensor=prefix + transfer.tensor,
        consumers=[prefix + c for c in transfer.consumers],
    )


def function_of(op: str, functions: list[str]) -> int:
    """Index in ``functions`` of the function an op of a tree plan belongs to (0: the called one)."""
    for index, name in enumerate(functions[1:], start=1):
        if op.startswith(name + "/"):
            return index
    return 0


__all__ = ["function_of", "tree_plan"]
