"""The nodes a run-graph variant gets so a step can be observed without breaking it.

* **Liveness guard** for a tensor that may be dead (see :mod:`.liveness`): ``Merge(x, fallback)``
  where ``fallback`` is a constant behind a ``ControlTrigger`` on ``x``'s op. A ControlTrigger is live
  even when its input is dead, so the Merge always has a value: ``x`` when ``x`` is live (it arrives
  first and has the lower index), the fallback otherwise; the Merge's ``value_index`` (0 or 1) says
  which. Fetching the guard never fails with ``Retval[N] does not have value``.
* **Per-iteration capture** for a tensor inside a ``tf.while_loop`` frame: a ``PyFunc`` in the same
  frame hands each live iteration's value to Python; a ControlTrigger on it gates one of the frame's
  ``NextIteration`` ops so the capture runs every iteration (and stays out of the loop's liveness).
  Iterations are recorded in completion order.
* **All-finite flags**: ``IsFinite(Sum(x))`` for each float output, packed into one bool vector the
  emulator fetches with every step whose plan lowers precision, so the first op whose output became
  inf/NaN is known without the user turning anything on. The flags matter only when a fetched value is
  inf/NaN (that is when the report names the first op), so they are computed only then: one check of
  the step's float fetches is the predicate of a ``Switch`` on every flagged tensor. A step whose fetches
  are finite runs the check and the Switches only; the per-tensor sums are dead (skipped), and the
  fetched flags are an all-true fallback. A step with a non-finite fetch computes every sum from the
  same tensors in the same step, so the first op found is exactly what checking every step finds.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from npu_jupyter.runtime.node_defs import add_node
from npu_jupyter.runtime.rewrite import half_of_round_trip

WATCH_SCOPE = "npu_emu_watch"


def add_observers(sub: Any, run: Any, tensor_map: dict[str, str], observe: Any, user_graph: Any, liveness: Any) -> None:
    """Append guards, captures and flags for ``observe`` to ``sub`` (names before the variant prefix)."""
    if not observe:
        return
    builder = _Builder(sub, run, tensor_map, user_graph)
    for key in observe.guarded:
        builder.guard(key)
    for op, kind, slot, frame in observe.captured:
        next_iteration = liveness.next_iterations.get(tuple(frame)) if liveness is not None else None
        if next_iteration is not None:
            builder.capture((op, kind, slot), next_iteration)
    if observe.flagged and observe.checked:
        builder.flags(list(observe.flagged), set(observe.guarded), list(observe.checked))


class _Builder:
    """Adds nodes to one variant's GraphDef and records their (prefixed) names on the RunGraph."""

    def __init__(self, sub: Any, run: Any, tensor_map: dict[str, str], user_graph: Any) -> None:
        self.sub, self.run, self.tensor_map, self.user = sub, run, tensor_map, user_graph
        self.nodes = {node.name: node for node in sub.node}
        self.count = 0
        self._shared: dict[int, str] = {}  # rank -> reduction axes Const (-1: the flattening shape)

    def _name(self, what: str) -> str:
        self.count += 1
        return f"{WATCH_SCOPE}/{self.count}/{what}"

    def _ref(self, key: tuple[Any, ...]) -> tuple[str, Any]:
        """(GraphDef input reference, user tensor) of watch ``(op, kind, slot)``."""
        op, kind, slot = key
        user_op = self.user.get_operation_by_name(op)
        if kind == "output":
            tensor = user_op.outputs[slot]
            name = self.tensor_map.get(tensor.name, tensor.name)
            return _input_ref(name), tensor
        node = self.nodes[op]
        data = [ref for ref in node.input if not ref.startswith("^")]
        return data[slot], user_op.inputs[slot]

    def _add(self, name: str, op: str, inputs: list[str], **attrs: Any) -> Any:
        return add_node(self.sub.node, name, op, inputs, **attrs)

    def guard(self, key: tuple[Any, ...]) -> str:
        """Merge(x, fallback-behind-ControlTrigger); records (value, index) names; returns the value ref."""
        ref, tensor = self._ref(key)
        import tensorflow as tf

        enum = tensor.dtype.base_dtype.as_datatype_enum
        trigger = self._add(self._name("trigger"), "ControlTrigger", ["^" + ref.split(":")[0]])
        fallback = self._add(
            self._name("fallback"),
            "Const",
            ["^" + trigger.name],
            dtype=("type", enum),
            value=tf.compat.v1.make_tensor_proto(np.zeros((), tensor.dtype.base_dtype.as_numpy_dtype)),
        )
        merge = self._add(self._name("guard"), "Merge", [ref, fallback.name], T=("type", enum), N=2)
        prefix = self.run.prefix
        self.run.guards[key] = (f"{prefix}{merge.name}:0", f"{prefix}{merge.name}:1")
        return cast("str", merge.name)

    def capture(self, key: tuple[Any, ...], next_iteration: str) -> None:
        """PyFunc(x) in x's frame, gating ``next_iteration`` through a ControlTrigger."""
        from tensorflow.python.ops import script_ops

        ref, tensor = self._ref(key)
        values: list[Any] = []
        self.run.captures[key] = values

        def record(value: Any) -> Any:
            values.append(np.array(value, copy=True))
            return np.bool_(True)

        self.run.keepalive.append(record)
        token = script_ops._py_funcs.insert(record)
        import tensorflow as tf

        func = self._add(
            self._name("capture"),
            "PyFunc",
            [ref],
            token=token,
            Tin=("types", [tensor.dtype.base_dtype.as_datatype_enum]),
            Tout=("types", [tf.bool.as_datatype_enum]),
        )
        trigger = self._add(self._name("trigger"), "ControlTrigger", ["^" + func.name])
        self.nodes[next_iteration].input.append("^" + trigger.name)

    def flags(self, tensors: list[str], guarded: set[Any], checked: list[str]) -> None:
        """One bool vector: is each listed output all finite (a dead output counts as finite).

        A rounded output is checked on its half-precision value (``IsFinite`` then ``All``): that buffer
        feeds only the cast back, so the check never stops a user op from reusing a buffer in place,
        and a half value is inf/NaN exactly when its float32 round trip is. Any other output is checked
        through its float32 sum, which is inf/NaN exactly when a value is (or, for finite values, when
        the sum leaves the float32 range, ~3.4e38). The checks run only when a ``checked`` tensor (a
        float fetch) is non-finite: each has a control input from a pivot that is dead unless that
        predicate holds (how ``tf.cond`` gates a branch), so in a step whose fetches are finite they are
        skipped and the fetched flags are the all-true fallback of a Merge; in a step with a non-finite
        fetch they see the same tensors of the same step, so the first op found is the same as checking
        every step finds. A tensor that may alias a ref variable's buffer (an op with a ref input, e.g.
        ``v/read``) is checked at once instead, because the step's own update could change that buffer
        before the fetches are checked.
        """
        import tensorflow as tf

        b = ("type", tf.bool.as_datatype_enum)
        pred = self._any_non_finite(checked, guarded)
        switch = self._add(self._name("switch"), "Switch", [pred, pred], T=b)
        pivot = self._add(self._name("pivot"), "Identity", [f"{switch.name}:1"], T=b)
        oks = []
        for name in tensors:
            ref, tensor, dead = self._flag_input(name, guarded)
            aliases = any(t.dtype._is_ref_dtype for t in tensor.op.inputs)
            oks.append(self._all_finite(ref, tensor, dead, () if aliases else ("^" + pivot.name,)))
            if aliases:
                self._before_writes(tensor.op, oks[-1])
        packed = self._add(self._name("flags"), "Pack", oks, T=b, N=len(oks), axis=0)
        trigger = self._add(self._name("trigger"), "ControlTrigger", ["^" + packed.name])
        fallback = self._const(np.ones(len(oks), np.bool_), "^" + trigger.name)
        merge = self._add(self._name("checked_flags"), "Merge", [packed.name, fallback], T=b, N=2)
        self.run.flags = (f"{self.run.prefix}{merge.name}:0", list(tensors))

    def _before_writes(self, read: Any, check: str) -> None:
        """Make the ops that write the ref variables ``read`` reads wait for ``check`` of its value.

        ``read`` (e.g. ``v/read``) aliases the variable's buffer, and an update in the same step writes
        that buffer in place; ordered first, the check sees the value the step read. An op the read
        itself waits for is left alone (the check comes after it anyway; an edge would be a cycle).
        """
        before = _ancestors(read)
        for source in read.inputs:
            if not source.dtype._is_ref_dtype:
                continue
            for writer in source.consumers():
                node = self.nodes.get(writer.name)
                if writer is read or writer.type in _VARIABLE_READS or node is None or writer in before:
                    continue
                node.input.append("^" + check)

    def _all_finite(self, ref: str, tensor: Any, guarded: bool, control: tuple[str, ...]) -> str:
        """A bool scalar: are all values of ``ref`` (``tensor``'s value in this run) finite."""
        import tensorflow as tf

        half = None if guarded or tensor.shape.rank is None else half_of_round_trip(ref)
        if half is not None:
            finite = self._add(
                self._name("finite"), "IsFinite", [half, *control], T=("type", tf.float16.as_datatype_enum)
            )
            node = self._add(
                self._name("all"),
                "All",
                [finite.name, self._axes(tensor.shape.rank)],
                Tidx=("type", tf.int32.as_datatype_enum),
                keep_dims=False,
            )
        else:
            total = self._sum(ref, tensor, guarded, control)
            node = self._add(self._name("finite"), "IsFinite", [total], T=("type", tf.float32.as_datatype_enum))
        return cast("str", node.name)

    def _const(self, value: Any, *control: str) -> str:
        """A Const node holding ``value``; returns its name."""
        import tensorflow as tf

        dtype = tf.as_dtype(value.dtype).as_datatype_enum
        node = self._add(
            self._name("const"),
            "Const",
            list(control),
            dtype=("type", dtype),
            value=tf.compat.v1.make_tensor_proto(value),
        )
        return cast("str", node.name)

    def _flag_input(self, name: str, guarded: set[Any]) -> tuple[str, Any, bool]:
        """(GraphDef input reference, user tensor) of a flagged or checked output: its guard when it may be dead."""
        op, _, slot = name.rpartition(":")
        key = (op, "output", int(slot))
        tensor = self.user.get_tensor_by_name(name)
        ref = _input_ref(self.run.guards[key][0][len(self.run.prefix) :]) if key in guarded else self._ref(key)[0]
        return ref, tensor, key in guarded

    def _sum(self, ref: str, tensor: Any, guarded: bool, control: tuple[str, ...]) -> str:
        """The float32 sum of all values of ``ref`` (``tensor``'s value): inf/NaN when any value is.

        ``control`` goes on the first node, so a dead control input skips the whole chain. A static rank
        gives the reduction axes (as ``tf.reduce_sum`` takes them); a guarded tensor may be its scalar
        fallback, so it and a tensor of unknown rank are flattened first.
        """
        import tensorflow as tf

        int32 = ("type", tf.int32.as_datatype_enum)
        f32 = tf.float32.as_datatype_enum
        enum = tensor.dtype.base_dtype.as_datatype_enum
        if enum != f32:
            ref = self._add(
                self._name("to_f32"), "Cast", [ref, *control], SrcT=("type", enum), DstT=("type", f32), Truncate=False
            ).name
            control = ()
        rank = None if guarded else tensor.shape.rank
        if rank is None:
            ref = self._add(
                self._name("flat"), "Reshape", [ref, self._axes(-1), *control], T=("type", f32), Tshape=int32
            ).name
            control, rank = (), 1
        node = self._add(
            self._name("sum"), "Sum", [ref, self._axes(rank), *control], T=("type", f32), Tidx=int32, keep_dims=False
        )
        return cast("str", node.name)

    def _axes(self, rank: int) -> str:
        """A shared int32 Const: the axes ``0..rank-1`` to reduce (``[-1]``, a flattening shape, for -1)."""
        name = self._shared.get(rank)
        if name is None:
            value = np.array([-1], np.int32) if rank < 0 else np.arange(rank, dtype=np.int32)
            name = self._shared[rank] = self._const(value)
        return name

    def _any_non_finite(self, checked: list[str], guarded: set[Any]) -> str:
        """A bool scalar: is any value of the ``checked`` tensors (the float fetches) inf/NaN."""
        import tensorflow as tf

        f32 = ("type", tf.float32.as_datatype_enum)
        inputs = [self._flag_input(name, guarded) for name in checked]
        if any(tensor.dtype._is_ref_dtype for _, tensor, _ in inputs):
            # a fetched variable is read when the session hands it back, maybe after this step's update:
            # no check of it here is certain to see that value, so every step computes the flags
            return self._const(np.array(True))
        sums = [self._sum(ref, tensor, dead, ()) for ref, tensor, dead in inputs]
        packed = self._add(self._name("fetch_sums"), "Pack", sums, T=f32, N=len(sums), axis=0)
        finite = self._add(self._name("fetches_finite"), "IsFinite", [packed.name], T=f32)
        every = self._add(
            self._name("all_finite"),
            "All",
            [finite.name, self._axes(1)],
            Tidx=("type", tf.int32.as_datatype_enum),
            keep_dims=False,
        )
        return cast("str", self._add(self._name("any_non_finite"), "LogicalNot", [every.name]).name)


_VARIABLE_READS = frozenset({"Identity", "RefIdentity", "IsVariableInitialized"})


def _ancestors(op: Any) -> set[Any]:
    """Every op ``op`` waits for (data and control inputs, transitively)."""
    seen: set[Any] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _input_ref(tensor_name: str) -> str:
    """GraphDef input spelling of a tensor name: ``op`` for slot 0, ``op:1`` otherwise."""
    op, _, slot = tensor_name.rpartition(":")
    return op if slot == "0" else tensor_name
