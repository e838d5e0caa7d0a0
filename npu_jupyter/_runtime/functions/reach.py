"""Whether a call's emulated inf/NaN stayed inside it: no returned value and no checked variable write held one.

A session's non-finite finding looks at what the step fetched and at the values its variable writes read
(:func:`~npu_jupyter._runtime.observe.run_notes.written_non_finite`); an overflow elsewhere in the step
that the program masks or discards (a Transformer's ``-1e9`` attention mask is ``-inf`` in float16 and
the softmax reads both as 0) is no finding, and with ``--reference`` the report says it did not reach the
results (:func:`~npu_jupyter._runtime.observe.drift_ranking.discarded_overflow_note`). A traced function
is judged the same way when this module can tell: every value the call returned is a plain tensor that
stayed finite (a Keras 3 function returns an iterator's ``Optional``, whose values cannot be read:
undecided), and in every observed body of the call tree no value a variable write reads, and none passed
to a call, loop or branch, is among the non-finite ones, each such value having a finite flag of its own
(:func:`~npu_jupyter._runtime.functions.needed_flags.needed_flags` keeps them) or being computed exactly
from finite constants. When any of this cannot be told, the inside value stays a finding, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from npu_jupyter._runtime.functions.observe_nodes import FunctionObserver, Observation
    from npu_jupyter._runtime.observe.by_design import Provenance


def stayed_inside(
    outputs: Iterable[object], observations: Iterable[Observation], observers: dict[str, FunctionObserver]
) -> bool:
    """True when the call's inf/NaN provably reached neither a returned value nor a variable write."""
    values = list(outputs)
    if not values or not all(_readable(value) for value in values):
        return False
    if not observers or any(not _results_flagged(observer) for observer in observers.values()):
        return False
    for obs in observations:
        observer = observers.get(obs.function)
        provenance = getattr(observer, "provenance", None)
        if observer is None or provenance is None:
            return False
        bad = {(w.op, w.slot) for w in obs.bad}
        if bad & result_tensors(provenance, observer.callees):
            return False
    return True


def result_tensors(provenance: Provenance, calls: Iterable[str]) -> set[tuple[str, int]]:
    """The float tensors of a body that leave it for good: read by a variable write or passed to a call."""
    passed = {src for call in calls for src in provenance.float_inputs.get(call, [])}
    return set(provenance.sinks) | passed


def _results_flagged(observer: FunctionObserver) -> bool:
    """Every result tensor of the body has a finite flag, or is computed exactly from finite constants."""
    provenance = getattr(observer, "provenance", None)
    if provenance is None:
        return False
    flagged = {(w.op, w.slot) for w in observer.flagged}
    exact = provenance.exact_constants - provenance.nonfinite_constants
    return all(key in flagged or key[0] in exact for key in result_tensors(provenance, observer.callees))


def _readable(value: object) -> bool:
    """A returned value whose elements were checked for inf/NaN (not an ``Optional``, resource or variant)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return isinstance(value, (int, float))
    return bool(getattr(dtype, "is_numpy_compatible", True))


__all__ = ["result_tensors", "stayed_inside"]
