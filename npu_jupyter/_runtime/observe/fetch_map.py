"""The user's fetches and feeds, mapped to the private graph one run executes.

A run's fetches may be any structure ``tf.compat.v1.Session.run`` accepts (nested lists, tuples,
namedtuples, dicts, SparseTensors, variables); every leaf is replaced by the private graph's name for it
(:class:`~npu_jupyter._runtime.session.run_graph.RunGraph` decides: the copy's own node, a variant's copy, or its
rounding). The flat list of user-side names is the run's signature.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

if TYPE_CHECKING:  # typing.Protocol is Python 3.8+: the class exists for the type checker only
    from typing import Protocol  # novermin

    from npu_jupyter._tf_types import Graph

    class PrivateNames(Protocol):
        """The private graph a run executes, as the mapping reads it (a ``RunGraph`` or ``PrivateGraph``)."""

        def feed_name(self, name: str) -> str:
            """The tensor to feed for the user's tensor ``name``."""
            ...

        @property
        def graph(self) -> Graph:
            """The private ``tf.Graph``."""
            ...

        def op_name(self, name: str) -> str:
            """The private op for the user's op ``name``."""
            ...

        def tensor_name(self, name: str) -> str:
            """The private tensor holding what the device would produce for the user's ``name``."""
            ...


#: ``Session.run``'s ``feed_dict``: keys are tensors, their names or composite tensors; values any data.
FeedDict = Mapping[Any, Any]


def map_fetches(fetches: object, private: PrivateNames, names: list[str]) -> object:
    """The user's fetch structure with every leaf replaced by the private graph's name for it.

    ``names`` collects the user-side names (tensor ``op:slot`` or op name) in flattening order.
    """
    if isinstance(fetches, (list, tuple)):
        mapped = [map_fetches(f, private, names) for f in fetches]
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
            namedtuple: Callable[..., object] = type(fetches)  # its fields, positionally
            return namedtuple(*mapped)
        return type(fetches)(mapped) if isinstance(fetches, tuple) else mapped
    if isinstance(fetches, dict):
        return type(fetches)((k, map_fetches(v, private, names)) for k, v in fetches.items())
    return map_leaf(fetches, private, names)


def map_leaf(leaf: object, private: PrivateNames, names: list[str]) -> object:
    """One fetch leaf in the private graph's spelling; its user name is appended to ``names``."""
    if isinstance(leaf, str):
        names.append(leaf)
        return private.tensor_name(leaf) if ":" in leaf else private.op_name(leaf.lstrip("^"))
    if hasattr(leaf, "indices") and hasattr(leaf, "dense_shape") and hasattr(leaf, "values"):
        import tensorflow as tf  # SparseTensor / IndexedSlices: map their components

        parts = [
            private.graph.get_tensor_by_name(private.tensor_name(t.name))
            for t in (leaf.indices, leaf.values, leaf.dense_shape)
        ]
        names.extend(t.name for t in (leaf.indices, leaf.values, leaf.dense_shape))
        if isinstance(leaf, tf.SparseTensor):
            return tf.SparseTensor(parts[0], parts[1], parts[2])
        return tf.IndexedSlices(parts[1], parts[0], parts[2])
    convert = getattr(leaf, "_as_graph_element", None)  # variables fetch as their value tensor
    element = convert() if callable(convert) else leaf
    element = leaf if element is None else element
    name = getattr(element, "name", None)
    if name is None or not hasattr(element, "graph"):
        raise TypeError(
            f"Fetch argument {leaf!r} has invalid type {type(leaf)}, must be a string or Tensor/Operation "
            "(or a nested list/tuple/dict of them)"
        )
    names.append(name)
    return private.tensor_name(name) if ":" in name else private.op_name(name)


def map_feeds(feed_dict: FeedDict | None, private: PrivateNames) -> dict[str, object] | None:
    """Feed keys by private name: the tensor the run reads (feeding it also feeds its rounding)."""
    if not feed_dict:
        return None
    out: dict[str, object] = {}
    for key, value in feed_dict.items():
        if hasattr(key, "indices") and hasattr(key, "dense_shape") and hasattr(key, "values"):
            parts = (key.indices, key.values, key.dense_shape)
            vals = (value.indices, value.values, value.dense_shape) if hasattr(value, "indices") else value
            for p, v in zip(parts, vals):
                out[private.feed_name(p.name)] = v
            continue
        name = key if isinstance(key, str) else key.name
        out[private.feed_name(name if ":" in name else f"{name}:0")] = value
    return out


def feed_names(feed_dict: FeedDict | None) -> list[str]:
    """The fed tensors' names, for the report."""
    if not feed_dict:
        return []
    return [k if isinstance(k, str) else getattr(k, "name", str(k)) for k in feed_dict]


def feed_shapes(feed_dict: FeedDict | None) -> dict[str, list[int]]:
    """``{"x:0": [64, 784]}``: the shape of each fed value, by tensor name (what the cost model needs)."""
    out: dict[str, list[int]] = {}
    for key, value in (feed_dict or {}).items():
        name = key if isinstance(key, str) else getattr(key, "name", None)
        if not isinstance(name, str):
            continue  # a structured feed (SparseTensor, tuple of tensors): no one shape
        try:
            shape = [int(d) for d in np.shape(value)]
        except (TypeError, ValueError):
            continue  # ragged nested lists
        out[name if ":" in name else f"{name}:0"] = shape
    return out


def fetch_values(names: list[str], results: object) -> dict[tuple[str, str], object]:
    """(fetch name, "output:0") -> value for array-valued leaves, for compare() over two reports."""
    values = [results] if len(names) == 1 and not isinstance(results, (list, tuple, dict)) else leaves(results)
    if len(values) != len(names):
        return {}
    return {(n, "output:0"): v for n, v in zip(names, values) if isinstance(v, (np.ndarray, np.generic, float, int))}


def leaves(value: object) -> list[object]:
    """The values of a ``Session.run`` result in fetch order (nested lists, tuples and dicts flattened)."""
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    return [value]
