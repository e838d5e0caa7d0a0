"""Variable-initialiser runs: told apart by the structure of their plan, not by a fetch name.

A ``session.run(init)`` initialises variables and computes nothing a person came to see: reports
mention it in one line, profiling never traces it, and its dump holds statistics only (so it never
spends the dump budget the training steps need). The op-type sets live in ``initializer_ops.json``
beside this module; the variable op types come from ``ops.variable_ops``. :func:`graph_role` also
tells a training step (gradients, optimizer applies), which ``load_dump`` opens by default, and
:func:`is_iterator_init_plan` a run that only initialised a dataset iterator, which reports name in
one line too.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

from npu_jupyter._ops.variable_ops import VARIABLE_OPS

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan


@functools.lru_cache(maxsize=1)
def _initializer_types() -> dict[str, frozenset[str]]:
    """Op-type sets of ``initializer_ops.json`` (group, assignments, variables, external_inputs)."""
    text = Path(__file__).with_name("initializer_ops.json").read_text(encoding="utf-8")
    kinds = {key: frozenset(value) for key, value in json.loads(text).items() if not key.startswith("_")}
    kinds["variables"] |= VARIABLE_OPS  # one source for the variable op types
    return kinds


def graph_role(plan: Plan, fetches: list[str]) -> str:
    """``"initializer"``, ``"training"`` (the plan computes gradients or applies an optimizer) or ``""``."""
    if is_initializer_plan(plan, fetches):
        return "initializer"
    return "training" if is_training_plan(plan) else ""


def is_training_plan(plan: Plan) -> bool:
    """Whether ``plan`` is a training step: an optimizer apply op, or gradients (``tf.gradients`` or a tape).

    A Keras evaluate function updates metric variables too, so variable writes alone do not count.
    """
    kinds = _initializer_types()
    prefixes = tuple(kinds["training_type_prefixes"])
    scopes = tuple(kinds["training_scopes"])
    for name, decision in plan.ops.items():
        if decision.op_type.startswith(prefixes):
            return True
        if any(name == scope or name.startswith(scope + "/") or f"/{scope}/" in name for scope in scopes):
            return True
    return False


def is_initializer_plan(plan: Plan, fetches: list[str]) -> bool:
    """:func:`is_initializer_run` for a plan and the names it was run for (also used by profiling)."""
    kinds = _initializer_types()
    ops = plan.ops
    fetched = [name.split(":")[0] for name in fetches]
    if not fetched or any(name not in ops or ops[name].op_type not in kinds["group"] for name in fetched):
        return False
    if any(d.op_type in kinds["external_inputs"] for d in ops.values()):
        return False
    consumers: dict[str, list[str]] = {}
    for d in ops.values():
        for src in d.inputs:
            consumers.setdefault(src, []).append(d.name)
    feeds_assignment: set[str] = set()  # ops whose every consumer is an assignment or feeds one
    assigned = False
    for d in reversed(list(ops.values())):  # plan.ops is topological: consumers are seen first
        if d.op_type in kinds["assignments"]:
            assigned = True
            feeds_assignment.add(d.name)
        elif d.op_type in kinds["variables"]:
            feeds_assignment.add(d.name)
        elif d.op_type in kinds["group"]:
            continue
        else:
            users = consumers.get(d.name, [])
            if not users or not all(u in feeds_assignment for u in users):
                return False
            feeds_assignment.add(d.name)
    return assigned


def is_iterator_init_plan(plan: Plan, fetches: list[str]) -> bool:
    """Whether the run only initialised a dataset iterator (``sess.run(iterator.initializer)``).

    Its fetches are ``MakeIterator`` ops (or NoOp groups of them) and every op of its plan stays on the
    host: the adapter's data pre-processing pass handles the whole graph and nothing reaches the device,
    so a full report (a 0.000 ms NPU estimate, a table of host ops all giving one reason) says nothing a
    person can use. A run that also fetches a step (``sess.run([it.initializer, train_op])``) fetches
    more than these, and one whose graph holds device ops is not all host: both keep their report.
    """
    kinds = _initializer_types()
    allowed = kinds["iterator_init"] | kinds["group"]
    fetched = [name.split(":")[0] for name in fetches]
    ops = plan.ops
    if not fetched or any(name not in ops or ops[name].op_type not in allowed for name in fetched):
        return False
    makes = any(d.op_type in kinds["iterator_init"] for d in ops.values())
    return makes and all(d.engine == "HOST" for d in ops.values())
