"""The adapter's config helpers: ``npu_config_proto`` & co., and ``NPURunConfig`` with its helper classes.

``npu_config_proto`` does exactly what the adapter's does to a ConfigProto (an ``NpuOptimizer`` custom
optimizer if there is none, with memory optimisation off; soft placement on, device placement logging
off, remapping off, XLA JIT off); the emulator session then reads the NpuOptimizer entry like any other.

``NPURunConfig`` cannot be a ``tf.estimator.RunConfig`` here (TensorFlow 2.16+ has no estimator), so it
is a plain object: it validates its NPU arguments the way ``NpuConfig.from_run_config_kwargs`` reads
them, keeps the RunConfig arguments as attributes, and offers ``npu_config`` and ``session_config``
(the ConfigProto an NPUEstimator would hand the adapter) for a session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._tf_types import ConfigProto


def _with_npu_defaults(proto: ConfigProto) -> ConfigProto:
    """The adapter's edits to a ConfigProto (in place), shared by npu_config_proto and the sessions."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    rewrite = proto.graph_options.rewrite_options
    if not any(c.name == "NpuOptimizer" for c in rewrite.custom_optimizers):
        rewrite.custom_optimizers.add().name = "NpuOptimizer"
        rewrite.memory_optimization = RewriterConfig.OFF
    proto.allow_soft_placement = True
    proto.log_device_placement = False
    rewrite.remapping = RewriterConfig.OFF
    proto.graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return proto


def npu_config_proto(config_proto: ConfigProto | None = None) -> ConfigProto:
    """The ConfigProto (``config_proto`` itself, edited, or a new one) with the adapter's NPU settings."""
    from tensorflow.core.protobuf import config_pb2

    if not isinstance(config_proto, config_pb2.ConfigProto):
        config_proto = cast("ConfigProto", config_pb2.ConfigProto())
    return _with_npu_defaults(config_proto)


def npu_graph_options(graph_options: object = None) -> object:
    """GraphOptions with XLA JIT off, as the adapter's."""
    from tensorflow.core.protobuf import config_pb2

    options: Any = graph_options  # a GraphOptions proto (untyped)
    if not isinstance(options, config_pb2.GraphOptions):
        options = config_pb2.GraphOptions()
    options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return cast("object", options)


def npu_optimizer_options(optimizer_options: object = None) -> object:
    """OptimizerOptions with XLA JIT off, as the adapter's."""
    from tensorflow.core.protobuf import config_pb2

    options: Any = optimizer_options  # an OptimizerOptions proto (untyped)
    if not isinstance(options, config_pb2.OptimizerOptions):
        options = config_pb2.OptimizerOptions()
    options.global_jit_level = config_pb2.OptimizerOptions.OFF
    return cast("object", options)


class _HelperConfig:
    """Base of DumpConfig, ProfilingConfig, ...: keyword arguments kept as given, checked by NPURunConfig."""

    def __init__(self, **kwargs: object) -> None:
        self._kwargs = dict(kwargs)

    def __getattr__(self, name: str) -> object:
        kwargs = self.__dict__.get("_kwargs", {})
        if name in kwargs:
            return kwargs[name]
        raise AttributeError(f"{type(self).__name__} has no argument {name!r}")

    def as_kwargs(self) -> dict[str, Any]:
        """The arguments as the nested dict ``NpuConfig.from_run_config_kwargs`` reads."""
        return {k: _plain(v) for k, v in self._kwargs.items()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"


class DumpConfig(_HelperConfig):
    """``dump_config=DumpConfig(enable_dump=..., dump_path=..., dump_step=..., dump_mode=..., ...)``."""


class ProfilingConfig(_HelperConfig):
    """``profiling_config=ProfilingConfig(enable_profiling=..., profiling_options=...)``."""


class MemoryConfig(_HelperConfig):
    """``memory_config=MemoryConfig(...)``."""


class ExperimentalConfig(_HelperConfig):
    """``experimental_config=ExperimentalConfig(...)``."""


class GraphMemoryOptimizeConfig(_HelperConfig):
    """``graph_memory_optimize_config=GraphMemoryOptimizeConfig(...)`` inside ExperimentalConfig."""


class DynamicInputConfig(_HelperConfig):
    """``dynamic_input_config=DynamicInputConfig(...)``."""


def _plain(value: object) -> object:
    return value.as_kwargs() if isinstance(value, _HelperConfig) else value


class NPURunConfig:
    """The adapter's run config, keyword arguments only; unknown or ill-typed NPU arguments are one error.

    Attributes: ``npu_config`` (the NpuConfig these arguments write, with NPUEstimator's own defaults),
    ``session_config`` (the user's ``session_config`` with that NpuOptimizer entry written in),
    and every RunConfig argument given (``model_dir``, ``save_checkpoints_steps``, ...).
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        if args:
            raise TypeError(
                "NPURunConfig (emulated adapter) takes keyword arguments only, "
                f"got {len(args)} positional argument(s); write e.g. NPURunConfig(model_dir=...)"
            )
        from npu_jupyter._options.config import NpuConfig

        self.kwargs: dict[str, Any] = {k: _plain(v) for k, v in kwargs.items()}
        self.npu_config = NpuConfig.from_run_config_kwargs(self.kwargs, strict=True, estimator_defaults=True)
        for key, value in kwargs.items():
            if key != "session_config" and not isinstance(value, _HelperConfig):
                setattr(self, key, value)
        self._user_session_config = cast("ConfigProto | None", kwargs.get("session_config"))

    @property
    def session_config(self) -> ConfigProto:
        """ConfigProto for a session: these options over the user's own NpuOptimizer entries."""
        from npu_jupyter._options.proto import read_config_proto, without_npu_entries

        base = self._user_session_config
        if base is None:
            return _with_npu_defaults(self.npu_config.to_config_proto())
        layered = read_config_proto(base).layered(self.npu_config.changed())
        return _with_npu_defaults(layered.to_config_proto(without_npu_entries(base)))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"NPURunConfig({args})"
