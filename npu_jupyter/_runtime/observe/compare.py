"""Per-op accuracy comparison, with the metrics of the Ascend accuracy comparison tool.

``compare(a, b)`` takes two dumps (folders or :class:`~npu_jupyter._runtime.observe.dump.Dump` objects) or two
RunReports and matches tensors by step, op and slot. For each pair it computes cosine similarity,
maximum absolute error, maximum relative error, accumulated relative error and RMSE. ``a`` is the run
under test, ``b`` the reference (usually float32): relative errors divide by ``|b|``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from npu_jupyter._renderers import render_html

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from npu_jupyter._runtime.observe.dump import Dump
    from npu_jupyter._runtime.report import RunReport

    #: What ``compare`` reads: a dump folder, a loaded dump, or a report.
    Source = Union[str, os.PathLike[str], Dump, RunReport]
    #: (step, op, "kind:slot") -> a dumped tensor or a recorded value.
    _Table = dict[tuple[Union[int, None], str, str], object]

# Relative errors divide by |reference|; this floor keeps exact zeros in the reference from turning a
# tiny absolute difference into an infinite relative one (the comparison tool does the same).
_EPS = 1e-7
METRICS = ("cosine", "max_abs", "max_rel", "accumulated_rel", "rmse")  # a Row's, as the comparison tool has them


def metrics(actual: ArrayLike, expected: ArrayLike) -> dict[str, float]:
    """The :data:`METRICS` of ``actual`` against ``expected`` (same shape; compared in float64), the
    relative RMSE drift is ranked by (:func:`relative_rmse`), and what a ranking needs to tell a cancelled
    reference (:mod:`.drift_ranking`): the reference's root mean square ``ref_rms`` and the ``size`` compared.

    Non-finite values propagate: an inf in ``actual`` where ``expected`` is finite gives inf errors and
    a NaN cosine, which is what a person comparing an overflowed float16 run needs to see. A position
    where both hold the same non-finite value (NaN and NaN, inf and inf: values the float32 program
    makes by design) is no difference and is left out, so a tensor equal to its reference has no drift.
    """
    a = np.asarray(actual, dtype=np.float64).ravel()
    b = np.asarray(expected, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"cannot compare tensors of {a.size} and {b.size} elements")
    with np.errstate(all="ignore"):
        same_non_finite = ~np.isfinite(b) & ((a == b) | (np.isnan(a) & np.isnan(b)))
    if same_non_finite.any():
        a, b = a[~same_non_finite], b[~same_non_finite]
    if a.size == 0:
        zero = {"max_abs": 0.0, "max_rel": 0.0, "accumulated_rel": 0.0, "rmse": 0.0, "rel_rmse": 0.0}
        return {"cosine": 1.0, **zero, "ref_rms": 0.0, "size": 0.0}
    with np.errstate(all="ignore"):
        mean_square = float(np.mean(b * b))
        diff = np.abs(a - b)
        rel = diff / np.maximum(np.abs(b), _EPS)
        identical = bool(np.array_equal(a, b) and np.isfinite(a).all())
        cos = cosine(float(np.dot(a, b)), float(np.linalg.norm(a)), float(np.linalg.norm(b)), identical)
        rmse = float(math.sqrt(float(np.mean(diff * diff))))
        return {
            "cosine": cos,
            "max_abs": float(np.max(diff)),
            "max_rel": float(np.max(rel)),
            "accumulated_rel": float(np.sum(diff) / max(float(np.sum(np.abs(b))), _EPS)),
            "rmse": rmse,
            "rel_rmse": relative_rmse(rmse, mean_square),
            "ref_rms": math.sqrt(mean_square),
            "size": float(a.size),
        }


def relative_rmse(rmse: float, mean_square_reference: float) -> float:
    """RMSE over the reference's root mean square: how far a tensor is from float32, relative to its scale.

    Why this ranks drift: the largest element-wise relative error divides by the reference's smallest
    values, so one element near zero reads "1.16 rel" on a tensor whose cosine is 1.0000; this figure
    weighs every element and reads 0.001 when the error is a thousandth of the tensor's size. The
    reference's scale has the floor of the relative errors, so an all-zero reference does not divide by 0.
    """
    if rmse == 0.0:
        return 0.0
    return rmse / max(math.sqrt(mean_square_reference), _EPS)


def drift_rank(row: Mapping[str, float | None]) -> float:
    """How much a drift row drifted, for ranking: its relative RMSE, a non-finite one (inf/NaN, or None
    in a payload) counting as infinite, so an op that went inf/NaN only in the emulation ranks first.

    A row written before the relative RMSE existed (a stored payload) ranks by its max relative error.
    """
    value = row.get("rel_rmse" if "rel_rmse" in row else "max_rel")  # a row written before rel_rmse existed
    if value is None or math.isnan(value):
        return math.inf
    return float(value)


def cosine(dot: float, norm_a: float, norm_b: float, identical: bool) -> float:
    """Cosine similarity from a dot product and two norms, exact where it is defined exactly.

    Identical finite tensors have cosine 1 by definition, but ``dot / (|a| |b|)`` rounds to
    1.0000000000000002 or 0.9999999999999998 depending on the BLAS and the CPU's vector width, so the
    identical case returns 1.0 and every other result is clamped to [-1, 1] (NaN stays NaN). Two zero
    tensors count as identical; one zero tensor against a non-zero one has cosine 0. A tensor holding
    inf/NaN has no direction: its cosine is NaN even against a zero tensor (a float16 gradient that
    went NaN where float32 is all 0 read "not finite (inf/NaN), cos 0.0000", as if it were orthogonal).
    """
    if not (math.isfinite(norm_a) and math.isfinite(norm_b)):
        return math.nan
    if identical or (norm_a == 0 and norm_b == 0):
        return 1.0
    if norm_a == 0 or norm_b == 0:
        return 0.0
    with np.errstate(all="ignore"):
        value = float(np.float64(dot) / (np.float64(norm_a) * np.float64(norm_b)))
    return value if math.isnan(value) else min(1.0, max(-1.0, value))


@dataclass
class Row:
    """One compared tensor."""

    step: int | None
    op: str
    slot: str
    shape: tuple[int, ...]
    cosine: float
    max_abs: float
    max_rel: float
    accumulated_rel: float
    rmse: float

    @property
    def identical(self) -> bool:
        """Both tensors hold exactly the same values (every error 0)."""
        return self.max_abs == 0.0


class Comparison:
    """The result of :func:`compare`: rows per op/slot, plus what only one side had.

    Renders inline in a notebook (the display layer's HTML: worst first, identical tensors folded);
    ``to_records()`` gives plain dicts for pandas; ``worst(n)`` the rows with the lowest cosine
    similarity; ``by_error()`` every row, worst first.
    """

    def __init__(self, rows: list[Row], only_a: list[str], only_b: list[str], title: str = "") -> None:
        self.rows = rows
        self.only_a = only_a
        self.only_b = only_b
        self.title = title

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as plain dicts (for pandas or JSON)."""
        return [asdict(r) for r in self.rows]

    def worst(self, n: int = 10) -> list[Row]:
        """Rows ordered by cosine similarity, lowest (NaN first) first."""
        return sorted(self.rows, key=lambda r: (not math.isnan(r.cosine), r.cosine))[:n]

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        worst = self.worst(1)
        tail = f", worst {worst[0].op}:{worst[0].slot} cos={worst[0].cosine:.6g}" if worst else ""
        return f"Comparison({len(self.rows)} tensors{tail})"

    def by_error(self) -> list[Row]:
        """Rows worst first: non-finite, then lowest cosine, then largest accumulated relative error.

        Cosine first because it is the comparison tool's verdict metric; among rows it calls equal
        (cosines of 1.0 to six digits are common), the scale-free accumulated error says which differs
        most. Ties keep the dump's order, so the order is stable.
        """
        return sorted(self.rows, key=_error_rank)

    def _repr_html_(self) -> str | None:
        return render_html(self)


def _error_rank(row: Row) -> tuple[bool, float, float, float]:
    finite = all(math.isfinite(getattr(row, m)) for m in METRICS)
    return (finite, row.cosine if finite else 0.0, -row.accumulated_rel, -row.max_abs)


def compare(a: Source, b: Source, *, step: int | None = None) -> Comparison:
    """Compare two dumps or two RunReports per op and slot (``b`` is the reference).

    Parameters
    ----------
    a, b : str, os.PathLike, Dump or RunReport
        Dump folders (or loaded dumps) are compared tensor by tensor for every step both hold (or
        only ``step``). Steps are per graph (see :func:`~npu_jupyter._runtime.observe.dump.load_dump`): a folder
        is read for its graph with the most dumped steps; pass ``load_dump(path).graph(k)`` for another.
        RunReports are compared by their recorded fetch values (``report.session.values``) and, when both
        ran with a reference, their per-op drift is reported as-is.
    step : int, optional
        Compare only this step of the dumps (default: every step both hold).

    """
    from npu_jupyter._runtime.report import RunReport

    if isinstance(a, RunReport) or isinstance(b, RunReport):
        if not (isinstance(a, RunReport) and isinstance(b, RunReport)):
            raise TypeError("compare() needs two dumps or two RunReports, not one of each")
        return _compare_tables(_report_values(a), _report_values(b), "run reports")
    return _compare_tables(_dump_values(a, step), _dump_values(b, step), "dumps")


def _dump_values(source: object, step: int | None) -> _Table:
    from npu_jupyter._runtime.observe.dump import Dump, load_dump

    if not isinstance(source, (Dump, str, os.PathLike)):
        raise TypeError(
            f"compare() takes dump folders (str or path), loaded dumps (load_dump) or two RunReports; "
            f"got {type(source).__name__} {source!r:.80}"
        )
    dump = source if isinstance(source, Dump) else load_dump(source)
    out: _Table = {}
    for t in dump.tensors():
        if step is None or t.step == step:
            out[(t.step, t.op, f"{t.kind}:{t.slot}")] = t
    return out


def _report_values(report: RunReport) -> _Table:
    values = report.session.values if report.session is not None else None
    if values is None:
        raise ValueError(
            "this RunReport holds no tensor values; run with a dump (enable_dump) and compare the dump "
            "folders, or run with reference=True to get per-op drift in report.drift"
        )
    return {(None, op, slot): v for (op, slot), v in values.items()}


def _compare_tables(a: _Table, b: _Table, what: str) -> Comparison:
    rows: list[Row] = []
    for key in [k for k in a if k in b]:
        va, vb = _value(a[key]), _value(b[key])
        if va.shape != vb.shape:
            continue
        step, op, slot = key
        found = metrics(va, vb)
        rows.append(Row(step, op, slot, tuple(va.shape), **{m: found[m] for m in METRICS}))
    only_a = sorted({f"{k[1]}:{k[2]}" for k in a if k not in b})
    only_b = sorted({f"{k[1]}:{k[2]}" for k in b if k not in a})
    return Comparison(rows, only_a, only_b, title=f"Comparison of two {what}")


def _value(item: object) -> np.ndarray:
    return np.asarray(getattr(item, "value", item))
