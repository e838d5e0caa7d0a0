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
* **All-finite flags**: one float32 scalar per float output that is inf/NaN when a value is (with the
  rounding kernel, exactly then: the check an ``NpuEmuRound`` made in its own pass, or one
  ``NpuEmuCheck``; without it ``Sum(x)``, which a finite float32 sum beyond ~3.4e38 overflows too, or
  ``L2Loss(x)`` for a float16-held one), packed into one vector and passed through IsFinite. The
  emulator fetches it with every step whose plan lowers precision and that fetches a float tensor or
  writes a variable, so the first op whose output became inf/NaN is known without the user turning
  anything on. Flags that can never be the first false one (an op passing on values already checked, a
  finite constant) are not computed, and a kept value an op hands on unchanged from one checked input
  (a gradient's ``tuple/control_dependency``) shares that input's flag: the first false flag, and so
  the finding, is the same. Kept always: the flags of the values a variable write reads (whether the
  step wrote inf/NaN into a variable) and of the ops the by-design rule judges
  (:func:`~npu_jupyter._runtime.observe.by_design.may_be_by_design`), so a value the float32 program
  makes non-finite too is told apart (:mod:`.npu_jupyter._runtime.observe.run_notes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection

import numpy as np

from npu_jupyter._runtime import round_kernel
from npu_jupyter._runtime.observe.by_design import Provenance, may_be_by_design
from npu_jupyter._runtime.observe.node_defs import add_node
from npu_jupyter._runtime.value_ops import SAME_VALUES, passes_on_values

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.session.liveness import Liveness
    from npu_jupyter._runtime.session.run_graph import GraphDefProto, Observe, RunGraph, WatchKey
    from npu_jupyter._tf_types import Graph, NodeDef, Operation, Tensor

WATCH_SCOPE = "npu_emu_watch"


def add_observers(
    sub: GraphDefProto,
    run: RunGraph,
    tensor_map: dict[str, str],
    observe: Observe,
    user_graph: Graph,
    liveness: Liveness | None,
    plan: Plan | None = None,
) -> None:
    """Append guards, captures and flags for ``observe`` to ``sub`` (names before the variant prefix)."""
    if not observe:
        return
    builder = _Builder(sub, run, tensor_map, user_graph)
    for key in observe.guarded:
        builder.guard(key)
    for key in observe.snapped:
        builder.snapshot(key)
    for op, kind, slot, frame in observe.captured:
        next_iteration = liveness.next_iterations.get(tuple(frame)) if liveness is not None else None
        if next_iteration is not None:
            builder.capture((op, kind, slot), next_iteration)
    if observe.captured:
        _one_iteration_at_a_time(sub)
    if observe.flagged:
        from npu_jupyter._runtime.rewrite import held_values

        guarded = set(observe.guarded)
        held = held_values(user_graph, run.roundings)[0]
        judged: set[str] = set()
        keep: set[str] = set()
        if plan is not None:
            run.provenance = provenance = Provenance(user_graph, plan, [(r.op, r.kind, r.slot) for r in run.roundings])
            judged = may_be_by_design(user_graph, provenance)
            read = provenance.sinks | {src for op in judged for src in provenance.float_inputs.get(op, [])}
            keep = {f"{op}:{slot}" for op, slot in read}
        needed = builder.needed_flags(list(observe.flagged), guarded, held, judged, keep)
        builder.flags(needed, guarded, held, builder.copied_flags(needed, list(observe.flagged), guarded))


def _one_iteration_at_a_time(sub: GraphDefProto) -> None:
    """Let every while loop of a variant that captures values run one iteration at a time.

    A capture appends each iteration's value as its PyFunc runs, and a loop running iterations in
    parallel (``parallel_iterations``, 10 by default, 32 in ``dynamic_rnn``) may run iteration k+1's
    capture before iteration k's: the emulated run and its float32 reference then list a loop value's
    iterations in different orders, and comparing them k by k shows drift where there is none (the
    zoo check named lstm_sentiment's loop Merge as the worst op, rel. RMSE 0.82, with nothing lowered).
    One iteration at a time changes no value, only the order in which iterations run.
    """
    for node in sub.node:
        if node.op in ("Enter", "RefEnter"):
            node.attr["parallel_iterations"].i = 1


class _Builder:
    """Adds nodes to one variant's GraphDef and records their (prefixed) names on the RunGraph."""

    def __init__(self, sub: GraphDefProto, run: RunGraph, tensor_map: dict[str, str], user_graph: Graph) -> None:
        self.sub, self.run, self.tensor_map, self.user = sub, run, tensor_map, user_graph
        self.nodes = {node.name: node for node in sub.node}
        self.count = 0
        self.copies: dict[str, str] = {}  # input reference -> its Snapshot node (one copy per tensor)
        self.flatten: tuple[str, str] | None = None  # the sums' shared constants, once made
        self.readers: dict[str, str] | None = None  # what each NpuEmuRound node reads, once looked up

    def _name(self, what: str) -> str:
        self.count += 1
        return f"{WATCH_SCOPE}/{self.count}/{what}"

    def _ref(self, key: WatchKey) -> tuple[str, Tensor]:
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

    def _add(self, name: str, op: str, inputs: list[str], **attrs: Any) -> NodeDef:
        node: NodeDef = add_node(self.sub.node, name, op, inputs, **attrs)
        return node

    def guard(self, key: WatchKey) -> str:
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
        return merge.name

    def snapshot(self, key: WatchKey) -> None:
        """Fetch a ref variable's read through a copy taken before the step writes the variable.

        The read (``v/read``) hands on the variable's buffer, which an update later in the step writes
        in place: fetched after the step, it shows the updated variable, not what the step read. A
        ``Snapshot`` copies a buffer it shares, and the variable's writers wait for it. A read that may
        be dead is copied behind its liveness guard, which is always live: a writer waiting for a dead
        node would not run.
        """
        guard = self.run.guards.get(key)
        ref, tensor = self._ref(key)
        if guard is not None:
            ref = _input_ref(guard[0][len(self.run.prefix) :])
        copy = self.copies.get(ref)
        if copy is None:
            enum = tensor.dtype.base_dtype.as_datatype_enum
            copy = self.copies[ref] = self._add(self._name("snapshot"), "Snapshot", [ref], T=("type", enum)).name
            self._before_writes(tensor.op, copy)
        name = f"{self.run.prefix}{copy}:0"
        if guard is not None:
            self.run.guards[key] = (name, guard[1])
        else:
            self.run.snapshots[key] = name

    def capture(self, key: WatchKey, next_iteration: str) -> None:
        """PyFunc(x) in x's frame, gating ``next_iteration`` through a ControlTrigger."""
        from tensorflow.python.ops import script_ops

        ref, tensor = self._ref(key)
        values: list[np.ndarray] = []
        self.run.captures[key] = values

        def record(value: np.ndarray) -> np.bool_:
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

    def flags(
        self, tensors: list[str], guarded: set[WatchKey], held: dict[str, str], copies: dict[str, str] | None = None
    ) -> None:
        """One bool vector: is each listed output all finite (a dead output counts as finite).

        A tensor in ``copies`` (:meth:`copied_flags`) gets no nodes: it is listed in ``run.flags`` in its
        place, and ``RunGraph.flag_take`` picks the flag it shares, so readers see one flag per listed
        tensor in the same (topological) order. Each computed tensor gives one float32 scalar that is
        inf/NaN when a value of the tensor is (:meth:`_finite_value`); one IsFinite over all of them.
        """
        import tensorflow as tf

        f32 = tf.float32.as_datatype_enum
        copies = copies or {}
        computed = [name for name in tensors if name not in copies]
        checker = round_kernel.in_use()
        sums = []
        for name in computed:
            op, _, slot = name.rpartition(":")
            key = (op, "output", int(slot))
            tensor = self.user.get_tensor_by_name(name)
            ref = _input_ref(self.run.guards[key][0][len(self.run.prefix) :]) if key in guarded else self._ref(key)[0]
            sums.append(self._finite_value(ref, tensor, held.get(name) == "float16", checker))
        packed = self._add(self._name("sums"), "Pack", sums, T=("type", f32), N=len(sums), axis=0)
        finite = self._add(self._name("flags"), "IsFinite", [packed.name], T=("type", f32))
        self.run.flags = (f"{self.run.prefix}{finite.name}:0", list(tensors))
        if copies:
            position = {name: k for k, name in enumerate(computed)}
            self.run.flag_take = np.array([position[copies.get(name, name)] for name in tensors], np.intp)

    def _finite_value(self, ref: str, tensor: Tensor, half_held: bool, checker: bool) -> str:
        """A float32 scalar that is inf/NaN exactly when a value ``ref`` holds is (for ``tensor``'s flag).

        * ``ref`` is an ``NpuEmuRound``'s output, or an ``NpuEmuRound`` reads it: the check that node
          made of what it wrote, or of what it read, in its own pass (no node at all). Either is 0 or
          NaN (:mod:`npu_jupyter._runtime.round_kernel`).
        * With the rounding kernel: ``NpuEmuCheck``, one read-only pass, exact for any values.
        * Without it, the float32 sum of the flattened values (after a Cast for another dtype), which is
          inf/NaN when a value is, or, for finite values, when the sum leaves the float32 range (~3.4e38).
          Static shapes are not trusted (the flattening shape is -1). A tensor held in float16
          (|value| <= 65504) takes one node, ``L2Loss`` (half the sum of squares, no shape input): it
          cannot overflow, so it too is inf/NaN exactly when a value is.

        A read of a ref variable (``v/read``) aliases the variable's buffer: the variable's writers wait
        for the check, so it sees the value the step read.
        """
        import tensorflow as tf

        node = self.nodes.get(ref)
        if node is not None and node.op == round_kernel.OP_TYPE:
            return f"{ref}:1"  # the rounding's check of what it wrote
        enum = tensor.dtype.base_dtype.as_datatype_enum
        f32 = tf.float32.as_datatype_enum
        rounding = self._roundings_of().get(ref)
        if rounding is not None:
            check, output = rounding, f"{rounding}:2"  # the check of what a rounding read
        elif checker:
            check = output = self._add(self._name("check"), round_kernel.CHECK_OP_TYPE, [ref], T=("type", enum)).name
        else:
            if enum != f32:
                ref = self._add(
                    self._name("to_f32"), "Cast", [ref], SrcT=("type", enum), DstT=("type", f32), Truncate=False
                ).name
            if half_held:
                return self._add(self._name("sum"), "L2Loss", [ref], T=("type", f32)).name
            int32 = ("type", tf.int32.as_datatype_enum)
            minus_one, zero = self._flatten_constants()
            flat = self._add(self._name("flat"), "Reshape", [ref, minus_one], T=("type", f32), Tshape=int32)
            check = output = self._add(
                self._name("sum"), "Sum", [flat.name, zero], T=("type", f32), Tidx=int32, keep_dims=False
            ).name
        if any(t.dtype._is_ref_dtype for t in tensor.op.inputs):  # e.g. v/read: aliases the variable
            self._before_writes(tensor.op, check)
        return output

    def _roundings_of(self) -> dict[str, str]:
        """Input reference -> the ``NpuEmuRound`` node that reads it (one per tensor and dtype; any one)."""
        if self.readers is None:
            self.readers = {}
            for node in self.sub.node:
                if node.op == round_kernel.OP_TYPE:
                    self.readers.setdefault(node.input[0], node.name)
        return self.readers

    def _flatten_constants(self) -> tuple[str, str]:
        """The ``[-1]`` shape and ``0`` axis the sums share (made once per variant, when first needed)."""
        if self.flatten is None:
            import tensorflow as tf

            int32 = ("type", tf.int32.as_datatype_enum)
            minus_one = self._add(
                self._name("minus_one"),
                "Const",
                [],
                dtype=int32,
                value=tf.compat.v1.make_tensor_proto(np.array([-1], np.int32)),
            )
            zero = self._add(
                self._name("zero"),
                "Const",
                [],
                dtype=int32,
                value=tf.compat.v1.make_tensor_proto(np.array(0, np.int32)),
            )
            self.flatten = (minus_one.name, zero.name)
        return self.flatten

    def needed_flags(
        self,
        tensors: list[str],
        guarded: set[WatchKey],
        held: dict[str, str],
        judged: Collection[str] = (),
        keep: Collection[str] = (),
    ) -> list[str]:
        """``tensors`` without those whose flag can never be the first false one (same answer, less work).

        A flag is false when its tensor holds inf/NaN (or, for finite values, when their float32 sum
        overflows). It is left out when the op passes on values it reads, exactly as they are checked,
        from tensors checked earlier in the list: the same values in the same order
        (:data:`~npu_jupyter._runtime.value_ops.SAME_VALUES`: the same sum, the same flag), or, when every input holds float16 values,
        values picked among them (or negated) or 0 (:data:`~npu_jupyter._runtime.value_ops.PICKED_VALUES`: their sum cannot overflow, so the
        flag is false only when an input holds inf/NaN). Either way a false flag of it comes after a false
        flag of an input, so the first false flag, the finding, is the same. Tensors that may be dead are
        kept, and so are the outputs of the ops in ``judged`` (those the by-design rule may excuse) and
        the tensors in ``keep`` (what a variable write or a ``judged`` op reads): the rule judges an op by
        its inputs' flags, and whether a step wrote inf/NaN into a variable is read off the written value's.
        A constant whose values are finite (and whose sum is far from overflow) has a true flag in every
        step, so it never is the first false one either.
        """
        order = {name: i for i, name in enumerate(tensors)}
        kept = []
        for name in tensors:
            op = self.user.get_tensor_by_name(name).op
            if op.type == "Const" and self.tensor_map.get(name, name) == name and _always_finite(op):
                continue  # its flag is true in every step
            if (
                op.name in judged
                or name in keep
                or not (passes_on_values(op.type) and self._implied(name, op, order, guarded, held))
            ):
                kept.append(name)
        return kept or tensors[:1]  # one flag at least: "none went non-finite" stays a checked answer

    def copied_flags(self, needed: list[str], tensors: list[str], guarded: set[WatchKey]) -> dict[str, str]:
        """Tensors of ``needed`` whose flag is another needed tensor's: tensor -> that tensor.

        :meth:`needed_flags` keeps every value a variable write or a judged op reads, even one an
        ``Identity`` (or another :data:`~npu_jupyter._runtime.value_ops.SAME_VALUES` op) hands on from
        a single float input checked as it is read: the same values, so the same sum and the same flag
        in every step. Such a tensor shares its source's flag instead of summing the values again: a
        gradient Keras or ``minimize`` passes through ``tuple/control_dependency`` to its apply, and the
        gradient itself, were both summed (ResNet-50's training step: 192 of 1,084 flags). The list order,
        and so the first false flag, stays as it was.
        """
        order = {name: i for i, name in enumerate(tensors)}
        source: dict[str, str] = {}  # needed tensor -> the computed tensor whose flag it is
        copies: dict[str, str] = {}
        for name in needed:
            op = self.user.get_tensor_by_name(name).op
            floats = [t for t in op.inputs if t.dtype.is_floating]
            if (
                op.type in SAME_VALUES
                and len(floats) == 1
                and floats[0].name in source
                and self._implied(name, op, order, guarded, {})
            ):
                source[name] = copies[name] = source[floats[0].name]
            else:
                source[name] = name
        return copies

    def _implied(
        self, name: str, op: Operation, order: dict[str, int], guarded: set[WatchKey], held: dict[str, str]
    ) -> bool:
        """True when ``name``'s flag follows from its op's inputs' flags (see :meth:`needed_flags`)."""
        if self.tensor_map.get(name, name) != name or (op.name, "output", int(name.rpartition(":")[2])) in guarded:
            return False  # its checked value is a rounding of it, or it may be dead
        node = self.nodes.get(op.name)
        floats = [(slot, t) for slot, t in enumerate(op.inputs) if t.dtype.is_floating]
        if node is None or not floats:
            return False
        data = [ref for ref in node.input if not ref.startswith("^")]
        for slot, t in floats:
            checked = self.tensor_map.get(t.name, t.name)
            if (
                order.get(t.name, len(order)) >= order[name]
                or (t.op.name, "output", t.value_index) in guarded
                or data[slot] != _input_ref(checked)
                or (op.type not in SAME_VALUES and held.get(t.name) != "float16")
            ):
                return False
        return True

    def _before_writes(self, read: Operation, check: str) -> None:
        """Make the ops that write the ref variables ``read`` reads wait for ``check`` of its value.

        ``read`` (e.g. ``v/read``) aliases the variable's buffer, and an update in the same step writes
        that buffer in place; ordered first, the check sees the value the step read, not the update's.
        An op the read itself waits for is left alone (the check comes after it anyway; an edge would
        be a cycle).
        """
        before = _ancestors(read)
        for writer in _writers_of(read):
            node = self.nodes.get(writer.name)
            if node is None or writer in before:
                continue
            node.input.append("^" + check)


_VARIABLE_READS = frozenset({"Identity", "RefIdentity", "IsVariableInitialized"})
# Ops that hand a ref on as a ref within one frame (tf.cond, RefIdentity): a write through their output
# writes the variable. Not RefEnter/RefExit: a writer inside a while loop is in another frame, and an
# edge into it from the read's frame is one TensorFlow refuses to run.
_REF_FORWARDS = frozenset({"RefSwitch", "RefMerge", "RefIdentity", "RefSelect"})


def _writers_of(read: Operation) -> list[Operation]:
    """The ops that may write the variables ``read`` reads, through any chain of ref-forwarding ops.

    Inside a tf.cond a ref variable reaches the read and the writes through separate ``RefSwitch``
    ops (Adam's ``beta1_power`` in NPULossScaleOptimizer's cond): the walk goes up to the variables
    and down again, so writes beside the read's own branch are found too.
    """
    roots: list[Tensor] = []
    stack = [t for t in read.inputs if t.dtype._is_ref_dtype]
    while stack:
        tensor = stack.pop()
        if tensor.op.type in _REF_FORWARDS:
            stack.extend(t for t in tensor.op.inputs if t.dtype._is_ref_dtype)
        else:
            roots.append(tensor)
    writers: list[Operation] = []
    seen: set[Operation] = set()
    while roots:
        for consumer in roots.pop().consumers():
            if consumer in seen or consumer is read:
                continue
            seen.add(consumer)
            if consumer.type in _REF_FORWARDS:
                roots.extend(t for t in consumer.outputs if t.dtype._is_ref_dtype)
            elif consumer.type not in _VARIABLE_READS:
                writers.append(consumer)
    return writers


def _always_finite(const: Operation) -> bool:
    """True when a Const's float32 sum is finite for sure: every value finite, the sum far from overflow."""
    import tensorflow as tf

    try:
        value = np.asarray(tf.make_ndarray(const.get_attr("value")), np.float64)
    except (TypeError, ValueError):  # a value numpy cannot read as float64: keep its flag
        return False
    return bool(np.isfinite(value).all()) and float(np.abs(value).sum()) < 1e38


def _ancestors(op: Operation) -> set[Operation]:
    """Every op ``op`` waits for (data and control inputs, transitively)."""
    seen: set[Operation] = set()
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
