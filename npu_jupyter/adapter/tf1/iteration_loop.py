"""``util.set_iteration_per_loop`` and ``util.IterationPerLoop`` on one emulated device.

On the adapter, the op these return (``IterationOp``, a group of the train op) runs
``iterations_per_loop`` training steps on the device per ``sess.run`` before returning to the host
(the session's ``iterations_per_loop`` option must say the same). Scripts count steps accordingly:
``for step in range(0, steps, iterations_per_loop): sess.run(iteration_op)``. The emulator has no
device loop, so the session runs the step ``iterations_per_loop`` times per ``sess.run`` of that op,
each step reading the next batch as the device does: ``global_step``, the data consumed and
``dump_step`` count as the user counted, and the fetched values are those of the last step, as on the
device. The adapter's loop-counter variables (``npu_runconfig/...``) are not created: nothing reads them
here. The first loop of a session says so in a warning.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Operation, Session

_LOOPS = "_npu_jupyter_iteration_loops"  # session attribute: {IterationOp name: steps per run}


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
    """Make ``sess.run`` of ``op`` run ``steps`` steps (the first loop of a session wraps its ``run``)."""
    loops: dict[str, int] | None = getattr(sess, _LOOPS, None)
    if loops is None:
        loops = {}
        original = sess.run

        def run(
            fetches: object, feed_dict: object = None, options: object = None, run_metadata: object = None, **kw: Any
        ) -> Any:  # noqa: ANN401 - the fetched values, of the fetches' structure, as Session.run returns them
            repeat = _steps_for(loops, fetches)
            for _ in range(repeat - 1):
                original(fetches, feed_dict, options, run_metadata, **kw)
            return original(fetches, feed_dict, options, run_metadata, **kw)

        sess.run = run  # type: ignore[method-assign]  # this session's run now loops the IterationOp
        setattr(sess, _LOOPS, loops)
    if loops.get(op.name) != steps:
        warnings.warn(
            f"util.set_iteration_per_loop (emulated): on the device one sess.run of {op.name!r} runs {steps} training "
            f"steps before returning to the host; the emulator has no device loop, so it runs the step {steps} times "
            "per sess.run (each on the next batch). Steps, global_step and dump_step count as you counted them; the "
            "fetched values are the last step's.",
            stacklevel=3,
        )
    loops[op.name] = steps


def _steps_for(loops: dict[str, int], fetches: object) -> int:
    """Steps per run: the loop count of an ``IterationOp`` among ``fetches``, else 1."""
    import tensorflow as tf

    steps = 1
    for fetch in tf.nest.flatten(fetches):
        name = fetch if isinstance(fetch, str) else getattr(getattr(fetch, "op", fetch), "name", None)
        if isinstance(name, str):
            steps = max(steps, loops.get(name.lstrip("^").split(":")[0], 1))
    return steps
