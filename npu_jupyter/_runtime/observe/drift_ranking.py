"""Which ops drifted most from float32: the one rule the report, the sweep and the zoo table rank by.

A run with a float32 reference holds, per op, its worst drift over the steps that ran a reference
(``RunReport.drift``). Ops are ranked by the relative RMSE (:func:`~.compare.drift_rank`), not by the
largest element-wise relative error, which one element near zero blows up on a tensor whose cosine is
1.0000. Two kinds of rows are no news and are never named as a largest drift:

* a row with no difference at all (an init run's constants, an ``Initializer/zeros``): zero drift is
  not a drift, so a run where nothing drifted has no worst op;
* a pure copy (``Identity``, ``Snapshot``, ``ReadVariableOp``, a loop's ``Enter`` ...) of an op that
  drifted at least as much: it shows its producer's drift again, so the producer is named instead.

**Cancellation.** A relative error is relative to the float32 reference; when that reference is
(near) zero because terms cancel, it is float32 rounding noise and the relative error against it means
nothing. A Keras conv or dense layer with a bias followed by BatchNormalization is the common case: the
normalization subtracts the batch mean, so the loss does not depend on the bias and its gradient
(``BiasAddGrad``, a sum over the batch of values whose sum is mathematically 0) is ~1e-8 in float32
and ~1e-4 in float16: "relative RMSE 550, cosine 0.0004" for an op that computes what float16 can. Judged against the scale of the data it sums, its error is the ordinary float16 rounding. So:

* an op that sums terms (:data:`SUM_TYPES`: only a sum can cancel; a product's relative error is its
  factors') is *cancelled* when its reference RMS is below :data:`CANCELLED` (2**-16) times its inputs'
  scale. Its inputs' scale is the largest over its inputs of the input's reference RMS times sqrt(k),
  ``k`` = input elements per output element (k terms of independent signs add up to sqrt(k) times their
  RMS: the output's scale had they not cancelled). 2**-16 is 128 float32 epsilons: a reference that
  small is within the rounding error float32 itself makes computing from data of that scale (the
  cancelled bias gradient above is ~20 epsilons), so it is noise; and it is 64 times below float16's
  epsilon, so a program that cancels only partly (``(x + 1000) - 1000``), whose float32 reference is
  resolved while float16 loses the digits, is a real drift and keeps its own figure. A cancelled op is
  ranked by its RMSE over its inputs' scale (``in_rel``), and says so;
* an op that computes only from cancelled values (every input that drifted is cancelled, or computes
  from one: ``from_cancelled``; ``Adam``'s moments and update of that bias) repeats their noise against a
  noise reference: like a copy it is not named (the cancelled op is, by its honest figure);
* a report keeps one row per op, so a consumer of a copy of several inputs (Keras's ``IdentityN`` of all
  gradients) cannot tell which output it reads: when some of that copy's inputs are cancelled, it (and
  what computes only from such ops) ``maybe_cancelled`` ranks after the ops whose figures are sound.

**Near-zero values.** An op whose float32 values are all tiny (a ``Sum`` of tiny values in a DIN model,
an underflowing gradient) has a large relative RMSE for an absolute error no larger than its values:
below float16's smallest normal number (:data:`NEAR_ZERO`, 2**-14 ≈ 6.1e-5) float16 keeps them as
subnormals with fewer digits, or as 0, so "rel. RMSE 1" there says the values are tiny, not that the op
drifted more than one whose values are in range. Such a row (its reference RMS below :data:`NEAR_ZERO`,
neither cancelled nor non-finite: :func:`near_zero`) keeps its figure and its place in the list, ranks
after the ops whose values are in range, and says why (:data:`NEAR_ZERO_NOTE`); its max abs is the
size of its error.

A non-finite row ranks first whatever its basis (an overflow is never a cancellation). The scales are
the rows' own (each op's worst step); a row stored before ``ref_rms`` existed has no scale, so it and
the ops reading it rank by their own relative RMSE, as they did.

It lives below the display layer so that ``npu_jupyter.sweep`` (which may not import the display) picks
its worst op by the same rule as the notebook report (``_display/drift.py``) and the zoo table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from npu_jupyter._runtime.observe.compare import drift_rank

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan

#: Op types whose output holds the values of an input unchanged: their drift is their producer's.
COPY_TYPES = frozenset(
    {"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics", "EnsureShape"}
    | {"ReadVariableOp", "RefIdentity", "Reshape", "Squeeze", "ExpandDims"}
    | {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "Switch", "RefSwitch"}
    | {"Merge", "RefMerge"}
)


#: Op types that sum terms, whose output can cancel to (near) zero while their inputs are large.
SUM_TYPES = (
    frozenset({"Add", "AddV2", "Sub", "AddN", "BiasAdd", "BiasAddV1", "BiasAddGrad", "Sum", "Mean", "Cumsum"})
    | frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "SquaredDifference"})
    | frozenset({"Conv2D", "Conv3D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative"})
    | frozenset({"Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "DepthwiseConv2dNativeBackpropInput"})
    | frozenset({"DepthwiseConv2dNativeBackpropFilter", "FusedBatchNormGrad", "FusedBatchNormGradV2"})
    | frozenset({"FusedBatchNormGradV3", "UnsortedSegmentSum", "SegmentSum", "_FusedMatMul", "_FusedConv2D"})
    # A batch norm's row is its worst output of y, batch mean, batch variance: the mean of an input that is
    # itself zero-mean (a bias-free conv of a normalized tensor) cancels to ~1e-7, and its rel. RMSE is noise.
    | frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
)
#: A summing op's reference below this fraction of its inputs' scale is float32 rounding noise (see above).
CANCELLED = 2.0**-16
#: A reference RMS below float16's smallest normal number: values whose relative error says they are tiny.
NEAR_ZERO = 2.0**-14
#: Said of a near-zero row wherever its figure is shown (labextension/src/optext.ts says the same).
NEAR_ZERO_NOTE = (
    "float32 values ≈ 0 (RMS below 6.1e-05, float16's smallest normal): a relative error of values this "
    "small is large for a tiny absolute error (max abs); ranked after ops with values in range"
)
#: How the sweep and zoo tables label a worst op's figure taken against its inputs' scale.
AGAINST_INPUTS = "against its inputs' scale: its reference cancels to ≈ 0"
#: How a drift figure that is not a number reads (an inf/NaN on either side of the comparison).
NOT_FINITE = "not finite (inf/NaN)"


def figure_text(value: float) -> str:
    """A drift figure as the tables print it: ``0.00123``, ``inf``, or :data:`NOT_FINITE` for a NaN.

    A NaN figure means inf/NaN values were compared (a float16 gradient that overflowed where
    float32 stayed finite); "nan" alone reads as a broken figure.
    """
    return NOT_FINITE if math.isnan(value) else f"{value:.3g}"


#: Said of a cancelled op wherever its figure is shown (labextension/src/optext.ts says the same).
CANCELLED_NOTE = "reference ≈ 0 next to its inputs (cancellation): drift measured against the inputs' scale"
#: Said of an op that computes only from cancelled values (labextension/src/optext.ts says the same).
FROM_CANCELLED_NOTE = "computes from a cancelled value: its float32 reference is rounding noise"
#: Said of an op that may read a cancelled output of a multi-output copy (labextension/src/optext.ts too).
MAYBE_CANCELLED_NOTE = "may compute from a cancelled value (reads a multi-output copy of one): ranked after the others"


class Basis(NamedTuple):
    """How one drifted op is ranked: its figure, and whether it is cancelled or computes from one."""

    rank: float
    in_rel: float | None = None  # the RMSE over its inputs' scale, when it is cancelled
    from_cancelled: bool = False  # computes only from cancelled values: never named
    maybe_cancelled: bool = False  # may read a cancelled output of a multi-output copy: ranked after the others
    near_zero: bool = False  # its float32 values are ≈ 0 (:func:`near_zero`): ranked after the others


def drifted(row: Mapping[str, Any] | None) -> bool:
    """The row records a difference from float32 (a non-finite one counts): zero drift is no drift."""
    return row is not None and bool(row) and row.get("max_abs") != 0


def worst_drift(ops: Sequence[Mapping[str, Any]], top: int, bases: dict[int, Basis] | None = None) -> list[int]:
    """Indices of the ``top`` ops that drifted most, worst first (payload-shaped ops: ``t``, ``i``, ``dr``).

    Non-finite rows first, then by each op's figure (:func:`assess`), then the ops that may compute
    from a cancelled value; ties keep graph order. A copy is left out when an op it copies (through other
    copies) drifted at least as much, and so is an op that computes only from cancelled values.
    """
    bases = assess(ops) if bases is None else bases  # ``bases``: :func:`assess` of these ops, when known
    raw = {k: drift_rank(ops[k]["dr"]) for k in bases}
    kept = [k for k, b in bases.items() if not b.from_cancelled and _copied(ops, k, raw) is None]
    return sorted(kept, key=lambda k: (_tier(bases[k]), -bases[k].rank, k))[:top]


def _tier(basis: Basis) -> int:
    """0: not finite (an overflow ranks first); 1: a figure that means what it says; 2: maybe noise or ≈ 0."""
    return 0 if math.isinf(basis.rank) else 2 if basis.maybe_cancelled or basis.near_zero else 1


def near_zero(row: Mapping[str, Any]) -> bool:
    """The row's float32 values are ≈ 0 (reference RMS below :data:`NEAR_ZERO`) and its figure is its own
    finite, non-zero relative RMSE: it drifted, not cancelled (``in_rel``), not computed from a cancelled value (never ranked),
    not non-finite. The views say :data:`NEAR_ZERO_NOTE` (a payload row carries the marks it reads).
    """
    own, rel = _number(row.get("ref_rms")), _number(row.get("rel_rmse"))
    if own is None or not rel or own >= NEAR_ZERO or row.get("from_cancelled") or not drifted(row):
        return False  # no drift (a constant of zeros matches float32 exactly) is never a tiny value's error
    return _number(row.get("in_rel")) is None


def assess(ops: Sequence[Mapping[str, Any]]) -> dict[int, Basis]:
    """Per drifted op (payload-shaped), how it ranks: by its own relative RMSE, or cancelled, or after the
    others for near-zero values (the module's rules).

    Ops are taken in graph order, producers first (TensorFlow's creation order), so an input's basis is
    known when its consumer is assessed; an input later in the order (a loop's back edge) has none yet.
    """
    raw = {k: drift_rank(op["dr"]) for k, op in enumerate(ops) if drifted(op.get("dr"))}
    bases: dict[int, Basis] = {}
    for k, rank in raw.items():
        op, row = ops[k], ops[k]["dr"]
        inputs = [j for j in op.get("i") or [] if 0 <= j < len(ops)]
        scale = _inputs_scale(ops, inputs, row) if op.get("t") in SUM_TYPES and not math.isinf(rank) else None
        own, rmse = _number(row.get("ref_rms")), _number(row.get("rmse"))
        if scale is not None and own is not None and rmse is not None and own < CANCELLED * scale:
            bases[k] = Basis(rmse / scale, in_rel=rmse / scale)
        elif math.isinf(rank):
            bases[k] = Basis(rank)  # an overflow is never a cancellation, nor noise
        else:
            fed = _fed(op, rank, [bases[j] for j in dict.fromkeys(inputs) if j in bases])
            bases[k] = fed._replace(near_zero=near_zero(row)) if not fed.from_cancelled else fed
    return bases


def _fed(op: Mapping[str, Any], rank: float, sources: list[Basis]) -> Basis:
    """Whether an op computes from cancelled values, from the bases of its inputs that drifted.

    Every such input cancelled (or fed by one): its reference is noise too. A copy of several inputs
    (``IdentityN``, ``Merge``) is one row per op, so a consumer cannot tell which output it reads: when
    some of its inputs are noise, it and what computes from it may be; they rank after the others.
    """
    noisy = [_cancelled_or_fed(b) for b in sources]
    maybe = [b.maybe_cancelled for b in sources]
    if noisy and all(noisy):
        return Basis(rank, from_cancelled=True)
    several = op.get("t") in COPY_TYPES and len(sources) > 1
    doubtful = any(noisy) if several else bool(sources) and all(n or m for n, m in zip(noisy, maybe))
    return Basis(rank, maybe_cancelled=doubtful and (any(noisy) or any(maybe)))


def _cancelled_or_fed(basis: Basis) -> bool:
    """The op is cancelled or computes only from cancelled values: its reference is rounding noise."""
    return basis.in_rel is not None or basis.from_cancelled


def _inputs_scale(ops: Sequence[Mapping[str, Any]], inputs: list[int], row: Mapping[str, Any]) -> float | None:
    """The scale the op's output would have had its terms not cancelled: the largest input RMS times sqrt(k)."""
    size = _number(row.get("size"))
    scales = []
    for j in inputs:
        source = ops[j].get("dr") or {}
        rms, count = _number(source.get("ref_rms")), _number(source.get("size"))
        if rms is not None and count is not None and size:
            scales.append(rms * math.sqrt(max(1.0, count / size)))
    best = max(scales, default=0.0)
    return best if best > 0 else None


def _number(value: object) -> float | None:
    """A finite number from a row (None: absent, null in a payload, or inf/NaN)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _copied(ops: Sequence[Mapping[str, Any]], k: int, ranks: Mapping[int, float]) -> int | None:
    """The op whose drift copy ``k`` shows again (an op it copies that drifted at least as much), or None."""
    if ops[k].get("t") not in COPY_TYPES:
        return None
    seen, todo = {k}, [int(j) for j in ops[k].get("i") or []]
    while todo:
        src = todo.pop()
        if src in seen or not 0 <= src < len(ops):
            continue
        seen.add(src)
        if src in ranks and ranks[src] >= ranks[k] * (1 - 1e-9):
            return src
        if ops[src].get("t") in COPY_TYPES:
            todo += [int(j) for j in ops[src].get("i") or []]
    return None


class Ranking(NamedTuple):
    """One assessment of a plan's drift rows: the ops ranked first and what the cancellation rule found."""

    worst: list[str]  # the names ranked first, worst first
    marks: dict[str, dict[str, Any]]  # per op the rule changed: the fields its payload row adds
    bases: dict[str, Basis]  # per drifted op: how it is ranked


def rank_plan(plan: Plan, drift: Mapping[str, Mapping[str, Any]], top: int) -> Ranking:
    """The ``top`` ops :func:`worst_drift` ranks first among ``plan``'s ops, and the cancellation marks of
    every op (``in_rel``, ``from_cancelled``, ``maybe_cancelled``), from one assessment of the whole plan:
    a report's payload needs both, and each costs a pass over every op.
    """
    if not drift:
        return Ranking([], {}, {})
    names = list(plan.ops)
    ops = _plan_ops(plan, drift)
    by_index = assess(ops)
    worst = [names[k] for k in worst_drift(ops, top, by_index)]
    marks: dict[str, dict[str, Any]] = {}
    for k, basis in by_index.items():
        if basis.in_rel is not None:
            marks[names[k]] = {"in_rel": basis.in_rel}
        elif basis.from_cancelled:
            marks[names[k]] = {"from_cancelled": True}
        elif basis.maybe_cancelled:
            marks[names[k]] = {"maybe_cancelled": True}
    return Ranking(worst, marks, {names[k]: basis for k, basis in by_index.items()})


def worst_ops(plan: Plan, drift: Mapping[str, Mapping[str, Any]], top: int) -> list[str]:
    """The names :func:`worst_drift` ranks first among ``plan``'s ops, given a run's drift rows.

    Empty when nothing drifted (no reference, or every row has zero drift): there is no worst op then.
    """
    return rank_plan(plan, drift, top).worst


def worst_op_figure(plan: Plan, drift: Mapping[str, Mapping[str, Any]]) -> tuple[str, float | None, bool] | None:
    """The op ranked first, the figure it is ranked by (None when not finite) and whether that figure is
    against its inputs' scale (a cancelled reference); None when no op drifted. The sweep and zoo show it.
    """
    ranking = rank_plan(plan, drift, 1)
    if not ranking.worst:
        return None
    name = ranking.worst[0]
    in_rel = ranking.bases[name].in_rel
    figure = in_rel if in_rel is not None else _number(drift[name].get("rel_rmse"))
    return name, figure, in_rel is not None


def cancellation_marks(plan: Plan, drift: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per op whose ranking the cancellation rule changed, the fields its payload row adds (``in_rel``,
    ``from_cancelled``, ``maybe_cancelled``), computed over the whole plan so a truncated payload still says them.
    """
    return rank_plan(plan, drift, 0).marks


def _plan_ops(plan: Plan, drift: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``plan``'s ops shaped as a payload's (type, input indices, drift row), in the plan's order."""
    index = {name: k for k, name in enumerate(plan.ops)}
    return [
        {"t": d.op_type, "i": [index[s] for s in d.inputs if s in index], "dr": drift.get(name)}
        for name, d in plan.ops.items()
    ]


def overflowed(row: Mapping[str, Any]) -> bool:
    """The emulated values went inf/NaN where the float32 reference stayed finite (a drift row, or the
    metrics of one step it is made from): the one test the note below and the step count it says share.
    """
    return drifted(row) and math.isinf(drift_rank(row)) and _number(row.get("ref_rms")) is not None


#: Ops a discarded-overflow note names before it counts the rest.
_NAMED_OVERFLOWS = 3


def discarded_overflow_note(
    drift: Mapping[str, Mapping[str, Any]],
    non_finite_found: bool,
    overflow_steps: int = 0,
    steps: int = 0,
    op_types: Mapping[str, str] | None = None,
) -> str:
    """Say why overflows lead a run's drift ranking while its results stayed finite ("" when they do not).

    An op whose emulated values went inf/NaN where its float32 reference stayed finite ranks first (an
    overflow is the largest drift). In a run with no non-finite finding (``non_finite_found`` False: no
    fetched value and no checked variable write held inf/NaN), the program discarded or masked them:
    a Transformer's ``-1e9`` attention mask is ``-inf`` in float16 and the softmax reads both as 0; with
    dynamic loss scaling (an initial scale of 2**32, as ModelZoo scripts set), the first steps' scaled
    gradients overflow by design and the optimizer skips the update. Without this note the zoo table
    of such a run read "ok" beside a worst op "not finite", and the report's Largest drift line an
    overflow, with nothing to say it did no harm.

    ``overflow_steps`` of the ``steps`` compared held such an overflow (a session's count; 0 where none
    was counted): said, because "the first steps" can be every step. GRU4Rec_ID0128 (initial scale
    2**32) overflowed in all 9 steps of a one-epoch run: no update was applied, its global step stayed 0.
    ``op_types`` (op -> type, the plan's) lets the note leave out pure copies (:data:`COPY_TYPES`), as
    the ranking does: GRU4Rec's note named ``gradients/MatMul_grad/tuple/control_dependency`` among three.
    """
    if non_finite_found:
        return ""
    names = [op for op, row in drift.items() if overflowed(row)]
    # a pure copy shows its producer's overflow again: the ranking leaves it out, so does the note
    types = op_types or {}
    names = [op for op in names if types.get(op) not in COPY_TYPES] or names
    if not names:
        return ""
    shown = ", ".join(names[:_NAMED_OVERFLOWS])
    more = f" and {len(names) - _NAMED_OVERFLOWS} more" if len(names) > _NAMED_OVERFLOWS else ""
    counted = overflow_steps > 0 and steps >= overflow_steps
    where = f" (in {overflow_steps} of the {steps} steps compared, measured)" if counted else ""
    skipped = f": if these are such gradients, those {overflow_steps} steps applied no update" if counted else ""
    return (
        f"Overflows that did not reach the results: {shown}{more} went inf/NaN in the emulated run where "
        f"float32 stayed finite{where}, so they lead the drift ranking; but no fetched or returned value and no "
        f"checked variable write held inf/NaN (writes inside tf.cond or while bodies are not checked). The "
        f"program discarded, masked or absorbed them, e.g. a -1e9 attention mask is -inf in float16 and the "
        f"softmax reads both as 0; with dynamic loss scaling (an initial scale such as 2**32), the first steps' "
        f"scaled gradients overflow by design and the update is skipped while the scale falls, as on the "
        f"device{skipped}. Absorbed is not always harmless: a variance that overflows makes its rsqrt 0 and a "
        f"layer norm's outputs 0, so the drift of the ops after them says what they changed."
    )


def worst_fetch_drift(drift: Mapping[str, Mapping[str, Any]], fetches: Iterable[str]) -> Mapping[str, Any] | None:
    """The drift row of the fetch that drifted most (by the same rank), or None when no fetch has one.

    ``fetches`` are tensor or op names (``loss:0``, ``train``); a fetch with no float output has no row.
    """
    rows = [drift[op] for op in dict.fromkeys(name.split(":")[0] for name in fetches) if op in drift]
    return max(rows, key=drift_rank, default=None)
