"""An op's failure in an emulated step, raised as the user's own graph would have raised it.

The emulator runs each step in a private copy of the user's graph (a run graph variant's ops carry a
``npu_emu_run<k>/`` prefix), imported from a GraphDef: TensorFlow's error then names the copy's node
(``Detected at node 'npu_emu_run2/D/concat_1'``) and, the copy having no Python stack traces, leaves
out the lines of the script that defined the op, which is what a user reads such an error for
(ModelZoo DeltaEncoder_ID1273: a batch-size mismatch in ``tf.concat`` named an emulator node and no
script line). The error is rebuilt from TensorFlow's own message against the user's graph, as
``Session._do_call`` builds it: same type, the user's op and node_def, the user's node names.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, cast

from npu_jupyter._runtime.session.run_graph import VARIANT_PREFIX

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph

_VARIANT = re.compile(re.escape(VARIANT_PREFIX) + r"\d+/")
_NODE = re.compile(r"{{node ([^}]+)}}")


def as_user_error(error: Exception, graph: Graph) -> Exception:
    """``error`` (an OpError of the private copy) as the same error of the user's ``graph``.

    ``Session._do_call`` raises its rewritten error while handling TensorFlow's raw one, so the raw
    message (``... [[{{node npu_emu_run2/D/concat_1}}]]``) is the rewritten error's context.
    """
    from tensorflow.python.framework import error_interpolation, errors

    raw = error.__context__ if isinstance(error.__context__, errors.OpError) else error
    if not isinstance(raw, errors.OpError):
        return error
    message = _VARIANT.sub("", str(raw.message))
    op = node_def = None
    found = _NODE.search(message)
    if found is not None:
        try:
            op = graph.get_operation_by_name(found.group(1))
            node_def = op.node_def
        except KeyError:  # an op the emulation added (a rounding cast): no definition of the user's
            op = None
    interpolate = cast(
        "Callable[[str, Graph], str]",
        getattr(error_interpolation, "interpolate_graph", None) or error_interpolation.interpolate,  # TF < 2.10
    )
    rebuilt: Exception = type(raw)(node_def, op, interpolate(message, graph))
    return rebuilt


__all__ = ["as_user_error"]
