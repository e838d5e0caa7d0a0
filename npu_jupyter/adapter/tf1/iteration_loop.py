"""``util.set_iteration_per_loop`` and ``util.IterationPerLoop`` on one emulated device.

On the adapter, the op these return (``IterationOp``, a group of the train op) runs
``iterations_per_loop`` training steps on the device per ``sess.run`` before returning to the host
(the session's ``iterations_per_loop`` option must say the same). Scripts count steps accordingly:
``for step in range(0, steps, iterations_per_loop): sess.run(iteration_op)``. The emulator has no
device loop, so the session runs the step ``iterations_per_loop`` times per ``sess.run`` of that op,
each step reading the next batch as the device does: ``global_step``, the data consumed and
``dump_step`` count as the user counted, and the fetched values are those of the last step, as on the
device. Values fed with ``feed_dict`` are one set per ``sess.run``, so every step of a loop reuses them; a
loop whose op reads no dataset iterator (its data is fed, as word2vec_ID0134 does) is told so once. The
adapter's loop-counter variables (``npu_runconfig/...``) are not created: nothing reads them here. The
first ``sess.run`` that loops an op says so in a warning (not its creation: a script may make the op and
never run it, as DualGAN_ID1001 runs its plain train ops after each call).

The device loops a graph only when it holds a node named exactly ``IterationOp`` (the adapter's GeOp,
``geop_npu.cc``); a second call in one graph makes ``IterationOp_1`` (TensorFlow's unique name), which the
device runs one step per ``sess.run``. So does the emulator, and a warning says so once per session. The
GeOp also loops only when the session's own ``iterations_per_loop`` option is above 1 (the adapter's
documentation asks for the same count in both places); with it unset, each ``sess.run`` of the op runs one
step on the device, and here, and a warning says so once per session.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Operation, Session

_LOOPS = "_npu_jupyter_iteration_loops"  # session attribute: {IterationOp name: steps per run}
_UNLOOPED = "_npu_jupyter_unlooped_said"  # session attribute: the not-looped warning was given
_UNSET = "_npu_jupyter_loop_option_said"  # session attribute: the option-not-set warning was given
DEVICE_LOOP_NODE = "IterationOp"  # the one node name whose graph the adapter's GeOp loops


def _check_train_op(train_op: object) -> None:
    from tensorflow.python.framework import ops

    if not isinstance(train_op, ops.Operation):
        raise ValueError(
            f"The incoming 'train_op' type is '{type(train_op).__name__}', and the need type is 'Operation' "
            "(pass the op, e.g. optimizer.minimize(loss), not a tensor)"
        )


def _check_positive_integer(value: object, name: str) -> None:
    """As the adapter's ``util.check_positive_integer``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be int, got {type(value)}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def set_iteration_per_loop(sess: Session, train_op: Operation, iterations_per_loop: int = 1) -> Operation:
    """The ``IterationOp`` (``train_op`` itself for 1); each ``sess.run`` of it runs ``iterations_per_loop`` steps."""
    _check_train_op(train_op)
    _check_positive_integer(iterations_per_loop, "iterations_per_loop")
    if iterations_per_loop == 1:
        return train_op
    op = _iteration_op(train_op)
    loop_on(sess, op, iterations_per_loop)
    return op


def _iteration_op(train_op: Operation) -> Operation:
    import tensorflow as tf

    with train_op.graph.as_default():
        op: Operation = tf.group(train_op, name="IterationOp")
    return op


class IterationPerLoop:
    """The adapter's two-step form: create the ``IterationOp``, then load the loop count for a session."""

    def __init__(self) -> None:
        self._op: Operation | None = None

    def create_iteration_per_loop_var(self, train_op: Operation) -> Operation:
        """The ``IterationOp`` grouping ``train_op``."""
        _check_train_op(train_op)
        self._op = op = _iteration_op(train_op)
        return op

    def load_iteration_per_loop_var(self, sess: Session, iterations_per_loop: int = 1) -> None:
        """From now on each ``sess.run`` of the ``IterationOp`` runs ``iterations_per_loop`` steps."""
        _check_positive_integer(iterations_per_loop, "iterations_per_loop")
        if self._op is None:
            raise RuntimeError("load_iteration_per_loop_var: call create_iteration_per_loop_var(train_op) first")
        loop_on(sess, self._op, iterations_per_loop)


def loop_on(sess: Session, op: Operation, steps: int) -> None:
    """Make ``sess.run`` of ``op`` run ``steps`` steps (the first loop of a session wraps its ``run``).

    Only an op named ``IterationOp`` loops, as on the device; another name is said once per session.
    """
    if op.name != DEVICE_LOOP_NODE:
        _warn_not_looped(sess, op.name, steps)
        return
    if not _session_loops(sess):
        _warn_option_unset(sess, op.name, steps)
        return
    loops: dict[str, int] | None = getattr(sess, _LOOPS, None)
    if loops is None:
        loops = {}
        fed: set[str] = set()  # IterationOps already warned about feed_dict in this session
        said: dict[str, int] = {}  # IterationOp name: the step count its first looping run announced
        original = sess.run

        def run(
            fetches: object, feed_dict: object = None, options: object = None, run_metadata: object = None, **kw: Any
        ) -> Any:  # noqa: ANN401 - the fetched values, of the fetches' structure, as Session.run returns them
            repeat, name = _steps_for(loops, fetches)
            if repeat > 1 and said.get(name) != repeat:
                said[name] = repeat
                _warn_looped(name, repeat)
            if repeat > 1 and feed_dict and name not in fed:
                fed.add(name)
                if not _reads_an_iterator(sess.graph.get_operation_by_name(name)):
                    _warn_fed(name, repeat)
            for _ in range(repeat - 1):
                original(fetches, feed_dict, options, run_metadata, **kw)
            return original(fetches, feed_dict, options, run_metadata, **kw)

        sess.run = run  # type: ignore[method-assign]  # this session's run now loops the IterationOp
        setattr(sess, _LOOPS, loops)
    loops[op.name] = steps


def _warn_looped(op_name: str, steps: int) -> None:
    """Said at the first ``sess.run`` that loops ``op_name`` (stack: caller, the wrapped run, here)."""
    warnings.warn(
        f"util.set_iteration_per_loop (emulated): on the device one sess.run of {op_name!r} runs {steps} training "
        f"steps before returning to the host; the emulator has no device loop, so it runs the step {steps} times "
        "per sess.run (each on the next batch of a dataset iterator; values fed with feed_dict stay the same for "
        "all of them). Steps, global_step and dump_step count as you counted them; the fetched values are the last "
        "step's.",
        stacklevel=3,
    )


def _session_loops(sess: Session) -> bool:
    """Whether the session's own ``iterations_per_loop`` option is above 1, which the GeOp needs to loop
    (``geop_npu.cc``: ``SetNeedIteration`` only when it is). A session without an NPU config (not an
    emulated one) is taken at its word.
    """
    config = getattr(sess, "config", None)
    if config is None or not hasattr(config, "iterations_per_loop"):
        return True
    return int(config.iterations_per_loop or 1) > 1


def _warn_option_unset(sess: Session, op_name: str, steps: int) -> None:
    """Say, once per session, that the session's ``iterations_per_loop`` option is 1, so nothing loops."""
    _say_once(
        sess,
        _UNSET,
        f"util.set_iteration_per_loop (emulated): the session's iterations_per_loop option is 1 (not set), and the "
        f"adapter loops the graph only when it is above 1, so on the device each sess.run of {op_name!r} runs one "
        f"step, not {steps}, and so it does here. To loop, set custom_op.parameter_map['iterations_per_loop'].i = "
        f"{steps} in the session's NpuOptimizer entry, as the adapter's documentation asks. Said once per session.",
    )


def _warn_not_looped(sess: Session, op_name: str, steps: int) -> None:
    """Say, once per session, that an op not named ``IterationOp`` runs one step per ``sess.run`` on the device.

    The GeOp sets its loop only for a node of that exact name; TensorFlow names a second group in one graph
    ``IterationOp_1`` (ModelZoo DualGAN_ID1001 calls set_iteration_per_loop twice on every step).
    """
    _say_once(
        sess,
        _UNLOOPED,
        f"util.set_iteration_per_loop (emulated): {op_name!r} is not named {DEVICE_LOOP_NODE!r} (the graph already "
        f"has one, or a name scope prefixes it); the adapter loops only a graph holding a node named "
        f"{DEVICE_LOOP_NODE!r}, so on the device each sess.run of {op_name!r} runs one step, not {steps}, and so it "
        f"does here. Call set_iteration_per_loop once per graph, before the training loop. Said once per session.",
    )


def _say_once(sess: Session, said: str, message: str) -> None:
    """Warn ``message`` unless this session has said it (``said``: the session attribute that remembers).

    Stack: the user's code, the op's constructor (set_iteration_per_loop), loop_on, the warning's function, here.
    """
    if getattr(sess, said, False):
        return
    setattr(sess, said, True)
    warnings.warn(message, stacklevel=5)


def _steps_for(loops: dict[str, int], fetches: object) -> tuple[int, str]:
    """Steps per run and the ``IterationOp`` asking for them: the loop count of one among ``fetches``, else 1."""
    import tensorflow as tf

    steps, loop_op = 1, ""
    for fetch in tf.nest.flatten(fetches):
        name = fetch if isinstance(fetch, str) else getattr(getattr(fetch, "op", fetch), "name", None)
        if isinstance(name, str):
            op_name = name.lstrip("^").split(":")[0]
            if loops.get(op_name, 1) > steps:
                steps, loop_op = loops[op_name], op_name
    return steps, loop_op


def _reads_an_iterator(op: Operation) -> bool:
    """Whether ``op`` depends on a dataset iterator's GetNext: then each step of the loop reads its next batch,
    and values fed beside it (a learning rate, a keep probability) are not the data.
    """
    seen = {op.name}
    todo = [op]
    while todo:
        current = todo.pop()
        if "GetNext" in current.type:  # IteratorGetNext, IteratorGetNextSync, IteratorGetNextAsOptional
            return True
        for producer in (*(t.op for t in current.inputs), *current.control_inputs):
            if producer.name not in seen:
                seen.add(producer.name)
                todo.append(producer)
    return False


def _warn_fed(op_name: str, steps: int) -> None:
    """Say that a fed loop repeats one batch: a script counting steps expects ``steps`` batches per run.

    A feed is one set of values per ``sess.run``; only a dataset iterator inside the graph gives each step
    of the loop its next batch (the adapter's documentation asks for one with ``iterations_per_loop`` > 1).
    """
    warnings.warn(
        f"util.set_iteration_per_loop (emulated): this sess.run of {op_name!r} runs {steps} steps and feeds values "
        f"with feed_dict: all {steps} steps train on those same fed values, not on {steps} batches. To give each "
        "step its own batch, read the data from a dataset iterator in the graph (make_initializable_iterator, with "
        "enable_data_pre_proc=True), as the adapter's documentation asks for iterations_per_loop > 1.",
        stacklevel=3,
    )
