"""The options an emulated function call runs with: the context's own, without grappler's meta-optimizer.

TensorFlow optimizes a function with grappler the first time it runs it, under the ``config_proto`` of
the call (the eager context's function call options). The emulator's rewritten bodies are run without
it, for the reasons its sessions' inner session is (:meth:`EmulatorSession._proto
<npu_jupyter._runtime.session.emulator.EmulatorSession._proto>`): grappler's CPU passes stand for nothing
GE does to the ops the plan lowers, may treat the rounded body and its float32 shadow differently, and
cost most of an emulated function's first call: a Keras fit of four attention blocks, four steps under
``--reference``, took 29-33 s with grappler and 8-10 s without, with the same loss. TensorFlow's own
graph optimizer still runs.

Only the call the emulator makes changes: the options are put back when it returns, so the user's code
around it, and a later plain call, run under the context's settings. A function called from inside the
body through its own call op keeps the ``config_proto`` it was traced with.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

#: The options object made for each context setting seen (serialized ConfigProto -> options): one per call
#: would serialize a ConfigProto on every emulated step.
_MADE: dict[bytes, Any] = {}


@contextlib.contextmanager
def without_grappler() -> Iterator[None]:
    """Run the body with the thread's function call options, grappler's meta-optimizer turned off."""
    from tensorflow.python.eager import context

    ctx = context.context()
    saved = ctx.function_call_options
    ctx.function_call_options = _options_for(saved)
    try:
        yield
    finally:
        ctx.function_call_options = saved


def _options_for(saved: Any) -> Any:  # noqa: ANN401 - TensorFlow's FunctionCallOptions (untyped)
    """``saved`` with ``disable_meta_optimizer`` set, made once per distinct setting."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.eager import context

    key = saved.config_proto_serialized
    made = _MADE.get(key)
    if made is None:
        config = config_pb2.ConfigProto()
        config.ParseFromString(key)
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        made = context.FunctionCallOptions(executor_type=saved.executor_type, config_proto=config)
        _MADE[key] = made
    return made


__all__ = ["without_grappler"]
