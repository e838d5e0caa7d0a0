"""Op names of whatever a ``Session.run`` call would fetch, in every structure it accepts.

``Session.run`` takes a fetch or any nesting of lists, tuples, namedtuples, dicts and attrs classes of
fetches, where a fetch is a tensor or op name, a Tensor, an Operation, a Variable, or a composite
(``SparseTensor``, ``IndexedSlices``) that stands for its component tensors. Training scripts pass
all of these (``sess.run([train_op, {"loss": loss, "acc": acc}])``), so the planner, which prunes a
graph to what one run reaches, reads the same structures. Duck-typed: no TensorFlow import.
"""

from __future__ import annotations

from typing import Mapping

ACCEPTED = (
    "op or tensor names, Tensors, Operations, Variables, SparseTensor/IndexedSlices, or lists, "
    "tuples, namedtuples, dicts and attrs classes of them (what Session.run accepts)"
)


def split_tensor_name(text: str) -> tuple[str, int]:
    """``"op:3"`` -> ("op", 3); a name without a numeric suffix is slot 0."""
    name, sep, slot = text.rpartition(":")
    if sep and slot.isdigit():
        return name, int(slot)
    return text, 0


def fetch_names(fetches: object) -> list[str]:
    """Op names of every leaf of ``fetches`` in order (duplicates kept); [] for None.

    A leaf that is none of the accepted kinds raises one TypeError naming where it sits in the
    structure, what it is, and what is accepted.
    """
    if fetches is None:
        return []
    out: list[str] = []
    _collect(fetches, "fetches", out)
    return out


def _collect(f: object, where: str, out: list[str]) -> None:
    """Append the op names of ``f`` (at path ``where`` in the user's structure) to ``out``."""
    if isinstance(f, (str, bytes)):
        text = f.decode() if isinstance(f, bytes) else f
        if not text.lstrip("^"):
            raise TypeError(f"{where} is an empty name; fetches must be {ACCEPTED}")
        out.append(split_tensor_name(text.lstrip("^"))[0])
        return
    if _is_composite(f):  # SparseTensor / IndexedSlices: fetched as their component tensors
        for part in ("indices", "values", "dense_shape"):
            value = getattr(f, part, None)
            if value is not None:
                _collect(value, f"{where}.{part}", out)
        return
    convert = getattr(f, "_as_graph_element", None)  # Graph.as_graph_element's hook: a variable's value
    element = convert() if callable(convert) else None
    if element is not None and element is not f and isinstance(getattr(element, "name", None), str):
        _collect(element, where, out)
        return
    name = getattr(f, "name", None)
    if isinstance(name, (str, bytes)) and (hasattr(f, "graph") or hasattr(f, "op")):
        _collect(name, where, out)  # Tensor, Operation, ref Variable
        return
    if isinstance(f, Mapping):
        for key, value in f.items():
            _collect(value, f"{where}[{key!r}]", out)
        return
    fields = getattr(type(f), "__attrs_attrs__", None)
    if fields is not None:
        for a in fields:
            _collect(getattr(f, a.name), f"{where}.{a.name}", out)
        return
    if isinstance(f, (list, tuple)):  # namedtuples included
        for k, value in enumerate(f):
            _collect(value, f"{where}[{k}]", out)
        return
    raise TypeError(f"{where} is {f!r} of type {type(f).__name__}; fetches must be {ACCEPTED}")


def _is_composite(f: object) -> bool:
    """SparseTensor and IndexedSlices both carry ``indices``, ``values`` and ``dense_shape``."""
    return all(hasattr(f, part) for part in ("indices", "values", "dense_shape")) and not isinstance(f, Mapping)
