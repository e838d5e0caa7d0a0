"""Double of ``npu_bridge.npu_init``: like the real module, importing it wraps ``Session.__init__``.

The real wrapper adds the NpuOptimizer defaults to every session's ConfigProto; the double records the
proto exactly as it was handed in (deterministically serialised) and then lets plain TF run it.
"""

from __future__ import annotations

from typing import Any

from tensorflow.core.protobuf import config_pb2
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig
from tensorflow.python.client import session as _session

from npu_bridge import recorded
from npu_bridge.estimator import npu_ops  # noqa: F401 - public name
from npu_bridge.estimator.npu import npu_scope  # noqa: F401 - public name
from npu_bridge.estimator.npu.npu_config import DumpConfig, NPURunConfig, ProfilingConfig  # noqa: F401


def npu_config_proto(config_proto: Any = None) -> Any:
    """As the real one: add an NpuOptimizer entry if missing and the adapter's session defaults."""
    if not isinstance(config_proto, config_pb2.ConfigProto):
        config_proto = config_pb2.ConfigProto()
    names = [c.name for c in config_proto.graph_options.rewrite_options.custom_optimizers]
    if "NpuOptimizer" not in names:
        config_proto.graph_options.rewrite_options.custom_optimizers.add().name = "NpuOptimizer"
        config_proto.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
    config_proto.allow_soft_placement = True
    config_proto.log_device_placement = False
    config_proto.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    config_proto.graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return config_proto


def _recording_init(original: Any) -> Any:
    def init(self: Any, target: str = "", graph: Any = None, config: Any = None) -> None:
        if config is not None:
            recorded.session_configs.append(config.SerializeToString(deterministic=True))
        original(self, target, graph, config)

    return init


if recorded.original_session_init is None:
    recorded.original_session_init = _session.Session.__init__
    _session.Session.__init__ = _recording_init(recorded.original_session_init)
