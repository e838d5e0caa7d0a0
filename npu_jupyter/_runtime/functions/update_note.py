"""An optimizer's update computed in half precision: a note on why the device's update differs.

TensorFlow >= 2.11's Keras optimizers (Keras 3, and tf_keras on TensorFlow >= 2.16) update each variable with
element-wise ops under the optimizer's name scope (``m.assign_add((g - m) * (1 - beta_1))``, ``var.assign_sub(
lr * m_hat / (sqrt(v_hat) + eps))``), which the plan lowers like any gray or white op under a mixed precision
mode, so the emulation rounds that arithmetic to float16. The adapter's TensorFlow 2.6.5 runs Keras 2, whose
``tf.keras`` optimizers apply each variable's update as one fused op (``ResourceApplyAdam``,
``ResourceApplyGradientDescent`` ...): on the device an optimizer's update is not these ops. Unsaid, a loss that
drifts under ``allow_mix_precision`` here reads as the device's behaviour (ModelZoo's vae_ID2593 with tf_keras'
Adam: about 20 ``Adam/sub``/``mul``/``Square`` ops in float16, final losses 0.97-6.09 against 0.70-0.75 under
must_keep_origin_dtype).

The optimizer's ops are found by the scope of its variable updates: a scope ending in a Keras optimizer's
default name (``adam``, ``Adam``, ``sgd_1`` ...). A renamed optimizer, or a user's own update outside such a
scope (which TensorFlow 2.6.5 builds the same way), gets no note. Copies (``Identity`` of a gradient) are not
arithmetic and do not count.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npu_jupyter._runtime.observe.drift_ranking import COPY_TYPES

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan

#: Resource variable updates: an optimizer writes its variables and slots with these.
UPDATE_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})
_HALF = frozenset({"float16", "bfloat16"})
#: The default names of Keras' optimizers (Keras 3 lower-case, tf_keras CamelCase), numbered when repeated.
_OPTIMIZER_SCOPE = re.compile(
    r"(?:^|/)(adam|adamw|adamax|nadam|sgd|rmsprop|adagrad|adadelta|adafactor|ftrl|lion|lamb)(?:_\d+)?$",
    re.IGNORECASE,
)


def half_precision_optimizer_ops(plan: Plan) -> list[str]:
    """Ops of a Keras optimizer's update scope that the plan computes in half precision, in plan order."""
    scopes = set()
    for name, decision in plan.ops.items():
        scope = name.rpartition("/")[0]
        if decision.op_type in UPDATE_OPS and scope and _OPTIMIZER_SCOPE.search(scope):
            scopes.add(scope + "/")
    if not scopes:
        return []
    inside = tuple(scopes)
    return [
        name
        for name, decision in plan.ops.items()
        if name.startswith(inside)
        and decision.op_type not in COPY_TYPES
        and decision.precision_changed
        and decision.dtype_after in _HALF
    ]


def update_note(plan: Plan | None) -> str | None:
    """The report's note on an optimizer update computed in half precision (None when there is none)."""
    found = half_precision_optimizer_ops(plan) if plan is not None else []
    if not found:
        return None
    ops = "1 op" if len(found) == 1 else f"{len(found)} ops"
    return (
        f"The optimizer's update here is element-wise arithmetic, and the plan computes {ops} of it in half "
        f"precision (e.g. {found[0]}): TensorFlow >= 2.11's Keras builds optimizer updates that way. The "
        "adapter's TensorFlow 2.6.5 with Keras 2 applies a tf.keras optimizer as one fused op per variable "
        "(ResourceApplyAdam, ResourceApplyGradientDescent, ...), so the device does not run these ops: the "
        "half-precision rounding emulated in them, and any loss difference it causes, may not occur there"
    )


__all__ = ["UPDATE_OPS", "half_precision_optimizer_ops", "update_note"]
