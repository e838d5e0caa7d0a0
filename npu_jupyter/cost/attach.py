"""The cost model's estimate as a run report carries it: the per-step block and the per-op times.

``RunReport.estimate`` (a :class:`CostEstimate`) is what ``_display/mime.py`` renders as the estimated
NPU step time, memory and per-op estimates, labelled as estimates (docs/report-schema.md). The runtime
attaches it where it builds a report, as a :class:`PendingEstimate`: computed when the report is first
read (``session().last_report.estimate``, or ``%%npu`` showing it), never in the training loop, at the
shapes the run fed, with the copies its feeds and fetches add to each step
(:func:`~npu_jupyter.cost.roofline.run_copies`). The sweep and the zoo check take their estimate from
here too, so a table and the report of the same run give the same figures. A plan the adapter would
refuse to compile (``Plan.errors``) gets no time: its block says it is refused.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover - typing only; the cost model is imported when an estimate is read
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph
    from npu_jupyter.cost.roofline import StepCost
    from npu_jupyter.cost.shapes import OpFacts

FedShapes = Dict[str, List[int]]
#: (plan id, fed shapes, fetches) -> the estimate: the reports of one plan fed the same shapes share one.
Memo = Dict[Tuple[int, Tuple[Tuple[str, Tuple[int, ...]], ...], Tuple[str, ...]], Optional["CostEstimate"]]


@dataclass(frozen=True)
class CostBlock:
    """The cost model's per-step estimate (the payload's ``cost_model``): estimated, never measured."""

    step_ms: float | None  # estimated NPU time of one step
    memory_bytes: int | None  # activation + weight memory in the decided dtypes
    step_ratio_fp32: float | None  # step_ms / the same estimate with every op in float32
    memory_ratio_fp32: float | None
    basis: str  # what the estimate rests on ("roofline over published peak rates; ..." or "refused: ...")
    launch_share: float | None = None  # the share of step_ms that is fixed launch and copy latency

    @classmethod
    def of(cls, cost: StepCost) -> CostBlock:
        """The block of a :class:`~npu_jupyter.cost.roofline.StepCost`."""
        return cls(
            cost.step_ms, cost.memory_bytes, cost.step_ratio_fp32, cost.memory_ratio_fp32, cost.basis, cost.launch_share
        )


@dataclass(frozen=True)
class CostEstimate:
    """The estimate of a report's plan: the per-step block and estimated µs per op that costs anything."""

    block: CostBlock | None = None
    est_us: Mapping[str, float] = field(default_factory=dict)


def refused_block(plan: Plan) -> CostBlock | None:
    """The block of a plan the adapter would not compile (None when it would)."""
    errors = list(getattr(plan, "errors", None) or [])
    if not errors:
        return None
    first = str(errors[0])
    first = first if len(first) <= 200 else first[:199] + "…"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return CostBlock(
        step_ms=None,
        memory_bytes=None,
        step_ratio_fp32=None,
        memory_ratio_fp32=None,
        basis=f"refused: the adapter would not compile this graph, so no step time is estimated: {first}{more}",
    )


def estimate_of(
    plan: Plan | None,
    graph: Graph | None,
    fed_shapes: FedShapes | None = None,
    memo: Memo | None = None,
    fetches: Sequence[str] = (),
) -> CostEstimate | None:
    """The estimate of ``plan`` on ``graph`` at ``fed_shapes`` fetching ``fetches``; None if it cannot be made.

    ``memo`` lets reports of one plan share one estimate. A graph the model cannot read (no
    ``tf.Graph``) gives None: the estimate is an extra, never a reason to fail.
    """
    if graph is None or plan is None:
        return None
    refused = refused_block(plan)
    if refused is not None:
        return CostEstimate(refused, {})
    fed = fed_shapes or None
    key = (id(plan), tuple(sorted((name, tuple(shape)) for name, shape in (fed or {}).items())), tuple(fetches))
    if memo is not None and key in memo:
        return memo[key]
    from npu_jupyter.cost.roofline import estimate
    from npu_jupyter.cost.stand_ins import replacement, stand_ins

    emulated = stand_ins(plan, graph)  # the emulator's ops in place of the device's: no per-op estimate
    skipped, in_place = replacement(emulated)
    try:
        cost = estimate(plan, graph, fed_shapes=fed, stood_in=skipped, in_place=in_place, fetched=fetches)
    except Exception:  # noqa: BLE001 - the estimate is an extra; reading a report must never fail for it
        return None
    found = CostEstimate(CostBlock.of(cost), {name: us for name, us in cost.est_us().items() if name not in emulated})
    if memo is not None:
        memo[key] = found
    return found


def function_estimate(
    plan: Plan | None,
    members: Sequence[tuple[str, Graph]],
    fed_shapes: FedShapes | None = None,
    fetches: Sequence[str] = (),
) -> CostEstimate | None:
    """The estimate of a traced function's report plan, over the function and the functions it calls.

    ``members`` are ``(prefix, FuncGraph)``: the called function's graph with prefix "", then each
    function it calls with the prefix its ops carry in the report's plan ("<function>/"). Shapes are
    each graph's own: a function is traced for the shapes it is called with, and a dimension its trace
    leaves unknown (a dataset iterator's batch) is counted as 1 and said in the basis, as for a session
    graph's. ``fed_shapes`` (the call's host tensors: its arguments) and ``fetches`` (its outputs) are
    the copies each call adds, as a session run's feeds and fetches. A call of a member is not
    estimated itself (its callee's ops are), and a loop body's ops are counted once, as in a session
    graph. None when it cannot be made.
    """
    if plan is None or not members:
        return None
    refused = refused_block(plan)
    if refused is not None:
        return CostEstimate(refused, {})
    from npu_jupyter._plan.functional_flow import FUNCTION_CALLS
    from npu_jupyter.cost.roofline import estimate
    from npu_jupyter.cost.shapes import graph_facts
    from npu_jupyter.cost.stand_ins import replacement, stand_ins

    try:
        facts: dict[str, OpFacts] = {}
        emulated: dict[str, str] = {}
        for prefix, graph in members:
            for name, fact in graph_facts(graph).items():
                if prefix:
                    fact.inputs = [(prefix + src, slot) for src, slot in fact.inputs]
                facts.setdefault(prefix + name, fact)
            emulated.update({prefix + name: kind for name, kind in stand_ins(plan, graph, prefix).items()})
        skipped, in_place = replacement(emulated)
        if len(members) > 1:  # the callees' own ops are estimated: their calls are no kernels of their own
            skipped |= {name for name, decision in plan.ops.items() if decision.op_type in FUNCTION_CALLS}
        cost = estimate(
            plan,
            members[0][1],
            facts=facts,
            fed_shapes=fed_shapes,
            stood_in=skipped,
            in_place=in_place,
            fetched=fetches,
        )
    except Exception:  # noqa: BLE001 - the estimate is an extra; reading a report must never fail for it
        return None
    return CostEstimate(CostBlock.of(cost), {name: us for name, us in cost.est_us().items() if name not in emulated})


class PendingEstimate:
    """The estimate of one report's plan, computed once when it is first read.

    The runtime attaches one where it builds a report, so ``session().last_report`` carries the same
    estimate as ``%%npu`` shows; copies of the report (a cell's collapsed report) share it. The plan
    and graph are held, not estimated, until then: a training loop pays nothing for it.
    """

    def __init__(
        self,
        plan: Plan | None,
        graph: Graph | None,
        fed_shapes: FedShapes | None = None,
        memo: Memo | None = None,
        fetches: Sequence[str] = (),
    ) -> None:
        self._compute: Callable[[], CostEstimate | None] | None = functools.partial(
            estimate_of, plan, graph, fed_shapes, memo, tuple(fetches)
        )
        self._result: CostEstimate | None = None

    @classmethod
    def of_function(
        cls, plan: Plan | None, members: Sequence[tuple[str, Graph]], fed_shapes: FedShapes, fetches: Sequence[str]
    ) -> PendingEstimate:
        """The pending :func:`function_estimate` of a traced function's report."""
        pending = cls(None, None)
        pending._compute = functools.partial(function_estimate, plan, list(members), fed_shapes, tuple(fetches))
        return pending

    def result(self) -> CostEstimate | None:
        """The estimate (computed on the first call), or None when the plan cannot be estimated."""
        if self._compute is not None:
            compute, self._compute = self._compute, None  # the graphs are no longer needed: let them go
            self._result = compute()
        return self._result

    def __repr__(self) -> str:
        return f"PendingEstimate(done={self._compute is None})"
