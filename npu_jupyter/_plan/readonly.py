"""Read-only lists: the lists a plan's decisions and the graph view they were built from share.

A training graph repeats a few dozen dtype sequences (``["float32", "float32"]``) thousands of
times, and every re-plan of a cached graph reads the same view. Giving each decision copies of its
own lists made a cold plan of ResNet-50's training step create about 50,000 lists, each one an
allocation and, once the plan is built, a garbage-collector scan. Sharing one object is safe only
when nobody can change it through one decision and so change every other one, or a later plan of
the same graph. These lists read like any list (indexing, iteration, ``==``, ``json``, pandas) and
refuse to change, saying how to get a list of one's own.
"""

from __future__ import annotations

from typing import Any, NoReturn


class ReadOnlyList(list):  # type: ignore[type-arg]  # of str: its one use, and list[str] is not a base before Python 3.9
    """A list that refuses every change; ``list(x)`` or ``x[:]`` is a plain copy of one's own."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "a plan's lists are read-only: the same list serves every decision with these values and "
            "later plans of the same graph; change a copy of your own, e.g. list(decision.inputs)"
        )

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[type, tuple[list[Any]]]:
        """Pickled as its values (a plan sent to another process or saved): unpickling must not call ``extend``."""
        return (ReadOnlyList, (list(self),))


#: The empty list every field with nothing to list holds (a node without inputs, an op without a body).
NO_STRINGS = ReadOnlyList()

#: dtype sequence -> its shared list, filled by :func:`dtype_list`; a loop that runs once per node may
#: read it inline (``DTYPE_LISTS.get(key) or dtype_list(key)``) to save the call.
DTYPE_LISTS: dict[tuple[str, ...], ReadOnlyList] = {(): NO_STRINGS}

#: dtype -> its shared one-element list, the same objects keyed without building a tuple.
ONE_DTYPE: dict[str, ReadOnlyList] = {}


def dtype_list(dtypes: tuple[str, ...]) -> ReadOnlyList:
    """The one shared list of this dtype sequence (a graph has a few dozen distinct ones)."""
    hit = DTYPE_LISTS.get(dtypes)
    if hit is None:
        hit = DTYPE_LISTS[dtypes] = ReadOnlyList(dtypes)
        if len(dtypes) == 1:
            ONE_DTYPE[dtypes[0]] = hit
    return hit
