"""``NPUEstimator``, ``NPUEstimatorSpec`` and ``npu_run_config_init`` where TensorFlow has an Estimator.

TensorFlow ≤ 2.15 ships ``tf.estimator`` (the adapter's own TF 1.15 and TF 2.6.5 do); 2.16+ removed it.
Where it exists, ``NPUEstimator`` is a ``tf.estimator.Estimator`` as on the adapter: it takes an
``NPURunConfig`` (refusing anything else, as the adapter does), builds the Estimator's ``RunConfig``
from its RunConfig arguments with the adapter's defaults (``save_summary_steps=0``, checkpoints every
100 steps when neither interval is given) and the ConfigProto carrying its NPU options, and wraps the
``model_fn`` the way the adapter does (``config`` passed when asked for; with ``iterations_per_loop``
> 1 the train op grouped as ``IterationOp``). Its sessions are made by TensorFlow's
``MonitoredTrainingSession``, which the emulation swaps for emulator sessions
(:mod:`npu_jupyter.adapter.tf1.sessions`), so training runs in the decided precisions. One session run is
one step here: ``train(steps=...)`` and ``global_step`` count steps exactly as on the device.

Where TensorFlow has no Estimator, the three names exist (a script's imports still work) and using
them raises one :class:`NotEmulatedError` saying why and what to do.
"""

from __future__ import annotations

import inspect
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable

from npu_jupyter.adapter.surface import NotEmulated, NotEmulatedError

if TYPE_CHECKING:
    from npu_jupyter.adapter.tf1.run_config import NPURunConfig

_NAMES = ("NPUEstimator", "NPUEstimatorSpec", "npu_run_config_init")
_cache: dict[str, object] = {}

# NPURunConfig's RunConfig defaults that differ from RunConfig's own (npu_config.py)
_RUN_DEFAULTS = {"save_summary_steps": 0, "keep_checkpoint_max": 5, "log_step_count_steps": 100}


def estimator_module() -> types.ModuleType | None:
    """``tf.estimator`` when this TensorFlow has it (≤ 2.15), else None."""
    import tensorflow as tf

    try:
        module: types.ModuleType | None = getattr(tf, "estimator", None)
        return module if module is not None and hasattr(module, "Estimator") else None
    except ImportError:  # a TF whose lazy estimator loader finds no tensorflow_estimator package
        return None


def no_estimator_message(name: str) -> str:
    """The one error for the Estimator names on a TensorFlow without ``tf.estimator``."""
    import tensorflow as tf

    return (
        f"{name} needs TensorFlow's Estimator (tf.estimator), which TensorFlow 2.16 and later no longer have "
        f"(this is TensorFlow {tf.__version__}). The emulated {name} runs where TensorFlow has one (≤ 2.15, e.g. the "
        "adapter's TensorFlow 2.6.5): run the script there, or train the model_fn's graph in a "
        "tf.compat.v1.Session loop, which the emulated adapter runs here."
    )


class _NeedsEstimator(NotEmulated):
    """Stand-in on a TensorFlow without Estimator: importable, raising the clear error when used."""

    __slots__ = ()

    def __init__(self, name: str) -> None:
        super().__init__("npu_bridge.estimator.npu.npu_estimator", name, "")
        self._message = no_estimator_message(name)

    def __repr__(self) -> str:
        return f"<{self._qualname}: needs tf.estimator, which this TensorFlow lacks (using it raises NotEmulatedError)>"


def __getattr__(name: str) -> object:
    """The Estimator names, built on first use (TensorFlow is imported by then)."""
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _cache:
        module = estimator_module()
        _cache.update(_build(module) if module is not None else {n: _NeedsEstimator(n) for n in _NAMES})
    return _cache[name]


def _run_config(npu_run_config: NPURunConfig, estimator: types.ModuleType) -> object:
    """The Estimator's RunConfig: the NPURunConfig's RunConfig arguments and its NPU ConfigProto."""
    accepted = set(inspect.signature(estimator.RunConfig.__init__).parameters) - {"self", "session_config"}
    kwargs = {**_RUN_DEFAULTS, **{k: v for k, v in npu_run_config.kwargs.items() if k in accepted}}
    if kwargs.get("save_checkpoints_steps") is None and kwargs.get("save_checkpoints_secs") is None:
        kwargs["save_checkpoints_steps"] = 100
    if npu_run_config.kwargs.get("distribute") is not None:
        raise ValueError(
            "NPURunConfig(distribute=...) distributes across ranks; the emulated adapter is one device "
            "(rank 0 of 1): leave distribute unset to emulate one rank"
        )
    run_config: object = estimator.RunConfig(session_config=npu_run_config.session_config, **kwargs)
    return run_config


def _model_dir(model_dir: str | None, config: NPURunConfig) -> str | None:
    """As the adapter: NPUEstimator's and NPURunConfig's model_dir must agree when both are given."""
    configured: str | None = config.kwargs.get("model_dir")
    if model_dir and configured and model_dir != configured:
        raise ValueError(
            f"model_dir are set both in NPUEstimator ({model_dir!r}) and NPURunConfig ({configured!r}), but with "
            "different values"
        )
    return model_dir or configured


def _wrap_model_fn(
    model_fn: Callable[..., object] | None, config: NPURunConfig, estimator: types.ModuleType
) -> Callable[..., object]:
    """The adapter's ``model_fn`` wrapper: ``config`` passed when asked for, the train op grouped per loop."""
    if model_fn is None:
        raise ValueError(
            "NPUEstimator: model_fn must be provided (a function (features, labels, mode) -> EstimatorSpec)"
        )
    wanted = set(inspect.signature(model_fn).parameters)
    loop = int(config.kwargs.get("iterations_per_loop") or 1)

    def _model_fn(features: object, labels: object, mode: str, params: object) -> object:
        import tensorflow as tf

        kwargs = {k: v for k, v in (("labels", labels), ("mode", mode), ("params", params)) if k in wanted}
        if "config" in wanted:
            kwargs["config"] = config
        spec = model_fn(features=features, **kwargs)
        if mode == estimator.ModeKeys.TRAIN:
            if not isinstance(spec, estimator.EstimatorSpec):
                raise RuntimeError(
                    f"estimator_spec used by NPU train must have type `NPUEstimatorSpec` or `EstimatorSpec`. Got {type(spec)}"
                )
            if loop > 1:
                spec = spec._replace(train_op=tf.group(spec.train_op, name="IterationOp"))
        return spec

    return _model_fn


def _build(estimator: types.ModuleType) -> dict[str, object]:
    """The three names as classes/functions over this TensorFlow's Estimator."""
    from npu_jupyter.adapter.tf1.run_config import NPURunConfig, npu_config_proto

    spec_base: Any = estimator.EstimatorSpec  # TensorFlow's classes (untyped), subclassed below
    estimator_base: Any = estimator.Estimator

    class NPUEstimatorSpec(spec_base):  # type: ignore[misc]  # a class of the runtime TF
        """``EstimatorSpec`` with the adapter's ``host_call`` argument (the device outfeed: refused when given)."""

        def __new__(cls, mode: str, *args: Any, host_call: object = None, **kwargs: Any) -> NPUEstimatorSpec:
            if host_call is not None:
                raise NotEmulatedError(
                    "NPUEstimatorSpec(host_call=...) streams tensors from the device through its outfeed channel, which "
                    "npu_jupyter's emulated adapter does not emulate; log them with training_hooks "
                    "(tf.compat.v1.train.LoggingTensorHook) or tf.compat.v1.summary instead"
                )
            spec: NPUEstimatorSpec = super().__new__(cls, mode, *args, **kwargs)
            return spec

    class NPUEstimator(estimator_base):  # type: ignore[misc]  # a class of the runtime TF
        """The adapter's Estimator: an NPURunConfig, the NPU ConfigProto, sessions on the emulator."""

        def __init__(
            self,
            model_fn: Callable[..., object] | None = None,
            model_dir: str | None = None,
            config: object = None,
            params: dict[str, object] | None = None,
            job_start_file: str = "",
            warm_start_from: object = None,
        ) -> None:
            if not isinstance(config, NPURunConfig):
                raise ValueError("`config` must be provided with type `NPUConfigs`")
            loop = int(config.kwargs.get("iterations_per_loop") or 1)
            if loop > 1:
                warnings.warn(
                    f"NPUEstimator (emulated): iterations_per_loop={loop} runs {loop} steps per session run on the "
                    "device; the emulator runs one step per session run, so train(steps=...) and global_step count "
                    f"the same steps with more host round-trips, and session-run hooks (a logging or FPS hook) are "
                    f"called after every step here, after every {loop} steps on the device.",
                    stacklevel=2,
                )
            run_config = _run_config(config, estimator)
            super().__init__(
                model_fn=_wrap_model_fn(model_fn, config, estimator),
                model_dir=_model_dir(model_dir, config),
                config=run_config,
                params=params or {},
                warm_start_from=warm_start_from,
            )

    def npu_run_config_init(run_config: object = None) -> object:
        """A RunConfig (a new one unless given) whose session config gets the adapter's NPU edits."""
        config: Any = run_config if isinstance(run_config, estimator.RunConfig) else estimator.RunConfig()  # untyped TF
        config.__dict__["_session_config"] = npu_config_proto(config.session_config)
        return config

    return {
        "NPUEstimator": NPUEstimator,
        "NPUEstimatorSpec": NPUEstimatorSpec,
        "npu_run_config_init": npu_run_config_init,
    }
