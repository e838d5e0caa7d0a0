"""The TF2 adapter's device, emulated: ``npu_device.open().as_default()`` makes traced functions emulated.

On an Ascend server ``npu_device.open()`` reads ``global_options()`` once and opens the device with them;
``as_default()`` makes it the default device, so every ``tf.function`` the script calls afterwards runs
on the NPU. Here the NPU is the CPU emulator: ``as_default()`` starts a
:class:`~npu_jupyter._runtime.functions.emulator.FunctionEmulation` under the options read at ``open()``, for the
rest of the process (until ``emulate_adapter(False)``); :func:`device_reports` gives its reports.

Inside a ``%%npu`` cell the cell's own emulation is the device: the cell registers a hook
(:func:`cell_device`), and opening the device hands the options to it, so the cell emulates under
session config < the script's ``global_options()`` < the cell's flags. A device opened before the cell
hands its options to the cell when the cell starts. One device, rank 0 of 1: ``RANK_SIZE`` (or
``CM_WORKER_SIZE``) above 1 is refused at ``open()``.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator

from npu_jupyter.adapter.tf2.options import NpuBaseConfig, new_global_options, new_run_context_options, to_config

if TYPE_CHECKING:
    from typing import Protocol  # novermin - 3.8+; only the type checker reads this block

    from npu_jupyter._options.config import NpuConfig

    class _TracedFunction(Protocol):
        """A ``tf.function`` object: the Python function it traces (TensorFlow ships no types)."""

        _python_function: Callable[..., Any]


NPU = "/job:localhost/replica:0/task:0/device:NPU"
INF_NAN = 1  # set_device_sat_mode: 1 = INF/NaN mode (overflow gives inf/NaN), 0 = saturation mode


class _State:
    """Process-wide state of the emulated device (the adapter keeps the same as module globals)."""

    def __init__(self) -> None:
        self.options: NpuBaseConfig | None = None
        self.handles: dict[int, NpuDeviceHandle] = {}
        self.default: NpuDeviceHandle | None = None
        self.emulation: Any = None  # FunctionEmulation outside %%npu cells
        self.paused: Any = None  # that emulation while a %%npu cell runs (it resumes after the cell)
        self.reports: list[Any] = []  # reports of emulations that ended (a cell suspended the device)
        self.cell_hooks: list[Callable[[Any], None]] = []
        self.loop_size = 1
        self.sat_mode = INF_NAN
        self.function_call: Any = None  # tf.function's own __call__ while nested calls are inlined
        self.function_decorators: Any = None  # (tf.function, def_function.function) while XLA is off


_state = _State()


def global_options() -> NpuBaseConfig:
    """The options object a script sets before ``open()`` (one per process, as in the adapter)."""
    if _state.options is None:
        _state.options = new_global_options()
    return _state.options


def rank_size() -> int:
    """The rank size as the TF2 adapter reads it: ``RANK_SIZE``, else ``CM_WORKER_SIZE``, else 1."""
    if os.getenv("CM_WORKER_SIZE") is not None and os.getenv("RANK_SIZE") is not None:
        raise ValueError("RANK_SIZE and CM_WORK_SIZE cannot be configured at the same time")
    text = os.getenv("RANK_SIZE") or os.getenv("CM_WORKER_SIZE") or "1"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"RANK_SIZE={text!r} is not a whole number") from None


def require_one_rank(what: str) -> None:
    """Refuse more than one rank: the emulator is one device (rank 0 of 1)."""
    size = rank_size()
    if size > 1:
        raise RuntimeError(
            f"{what}: the rank size is {size} (RANK_SIZE / CM_WORKER_SIZE), but npu_jupyter's emulated "
            "npu_device is one device. Unset RANK_SIZE (or set it to 1) to emulate rank 0 of 1; run on "
            "Ascend servers for more ranks."
        )


class NpuDeviceHandle:
    """The opened device: its name, scope, rank, and ``as_default()``."""

    def __init__(self, device_id: int, config: NpuConfig, unread: list[str]) -> None:
        self._device_id = device_id
        self._device_name = f"{NPU}:{device_id}"
        self.config = config  # the NpuConfig read from global_options() at open()
        self.unread = unread  # TF2-only options set that no emulated decision reads
        self.workers_num = 1
        self.worker_id = 0

    def name(self) -> str:
        """The adapter's device name (``/job:localhost/replica:0/task:0/device:NPU:<id>``)."""
        return self._device_name

    def scope(self) -> contextlib.AbstractContextManager[None]:
        """The adapter pins ops to the NPU here; on the emulator every op already runs on the CPU."""
        return contextlib.nullcontext()

    def is_cluster_worker(self) -> bool:
        """False: one device is never a cluster worker."""
        return False

    def as_default(self) -> NpuDeviceHandle:
        """Make this the default device: from now on every traced function runs on the emulator.

        As the adapter does here, a ``tf.function`` called while another one is being traced is inlined
        into it (the device gets one graph per entry function), so the plan is the entry function's, and
        ``tf.function`` becomes ``npu_compat_function`` (no XLA: the device compiles with GE).
        """
        _state.default = self
        _inline_nested_functions()
        _functions_without_xla()
        if _state.cell_hooks:
            _state.cell_hooks[-1](self.config)
        else:
            _start_device_emulation(self.config)
        return self


def open(device_id: int | None = None) -> NpuDeviceHandle:  # noqa: A001 - the adapter's own name
    """Open the (emulated) device with the options ``global_options()`` holds now.

    As in the adapter: the options are read here, once; opening the same device again returns it; a
    second device id is refused. A value the TF2 adapter would accept but npu_jupyter's option checks
    refuse fails here, as the device's own checks do, with nothing opened.
    """
    if device_id is None:
        device_id = int(os.getenv("ASCEND_DEVICE_ID", "0"))
    if device_id in _state.handles:
        return _state.handles[device_id]
    if _state.handles:
        raise RuntimeError(
            f"Failed create npu instance on device {device_id} as existed instance on {list(_state.handles)}"
        )
    require_one_rank("npu_device.open()")
    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._runtime.observe.run_settings import read_run_settings
    from npu_jupyter.adapter.tf2.options import unread

    options = global_options()
    try:
        config = to_config(options)
        config.validate()
        # the device's GEInitialize checks dump_path (and the profiling folder) at open, so a missing
        # folder fails here, with nothing opened, not at as_default() once tf.function is patched
        read_run_settings(config.snapshot())
    except NpuConfigError as err:
        raise RuntimeError(f"Failed open npu device {device_id} : {err}") from None
    handle = NpuDeviceHandle(device_id, config, unread(options))
    if handle.unread:
        warnings.warn(
            "npu_device.open(): these options only the TF2 adapter has are kept but no emulated decision "
            f"reads them: {', '.join(handle.unread)}",
            stacklevel=2,
        )
    _state.handles[device_id] = handle
    return handle


def global_npu_ctx() -> NpuDeviceHandle | None:
    """The device made default by ``as_default()`` (None before)."""
    return _state.default


def effective_config() -> NpuConfig | None:
    """The config the device emulation runs under now (None when no device is open outside a cell)."""
    emulation = _state.emulation
    config: NpuConfig | None = None if emulation is None else emulation.config
    return config


def device_reports() -> list[Any]:
    """Reports of the traced functions run on the emulated device outside ``%%npu`` cells, oldest first."""
    emulation = _state.emulation or _state.paused
    current = list(emulation.reports.values()) if emulation is not None else []
    return [r for r in _state.reports + current if r.plan is not None and r.steps]


def _start_device_emulation(config: NpuConfig) -> None:
    """Emulate every traced function from now on under ``config`` (TF ≥ 2.14; else say nothing is)."""
    from npu_jupyter._runtime.functions import emulator as functions

    if _state.paused is not None:  # a cell paused it: the same emulation goes on, its reports too
        _state.emulation, _state.paused = _state.paused, None
        _state.emulation.resume()
    if _state.emulation is not None:
        if _state.emulation.config != config.snapshot():
            _state.emulation.reconfigure(config)
        return
    if not functions.supported():
        warnings.warn(
            "npu_device.open().as_default(): this TensorFlow has no AtomicFunction call path (TF < 2.14), "
            "so npu_jupyter cannot emulate traced functions here; they run as plain TensorFlow on the CPU. "
            "The options were read (npu_jupyter.adapter.tf2.device.global_npu_ctx().config).",
            stacklevel=3,
        )
        return
    emulation = functions.FunctionEmulation(config)
    emulation.__enter__()
    _state.emulation = emulation


def _pause_device_emulation() -> None:
    """Pause the process-wide emulation for a ``%%npu`` cell: one emulation at a time, one report per function."""
    emulation, _state.emulation = _state.emulation, None
    if emulation is not None:
        emulation.pause()
        _state.paused = emulation


def _stop_device_emulation() -> None:
    """End the process-wide emulation (running or paused), keeping its reports."""
    emulation, _state.emulation = _state.emulation or _state.paused, None
    _state.paused = None
    if emulation is not None:
        emulation.__exit__(None, None, None)
        _state.reports.extend(emulation.reports.values())


@contextlib.contextmanager
def cell_device(apply: Callable[[Any], None]) -> Iterator[None]:
    """While a ``%%npu`` cell runs, the cell's emulation is the device; ``apply(config)`` takes its options.

    A device emulation running outside cells pauses for the cell (one emulation at a time) and resumes
    after it. A device already open hands its options to the cell now. A device the cell made default
    stays the default after it, as on the adapter: later plain cells' traced functions run emulated too.
    """
    _pause_device_emulation()
    _state.cell_hooks.append(apply)
    try:
        if _state.default is not None:
            apply(_state.default.config)
        yield
    finally:
        _state.cell_hooks.remove(apply)
        if _state.default is not None and not _state.cell_hooks:  # an enclosing cell keeps the device
            _start_device_emulation(_state.default.config)


def _inline_nested_functions() -> None:
    """The adapter's ``_never_nested_function_call``: a nested ``tf.function`` call runs its Python body.

    Falls back to the ordinary call when the body cannot run inlined, as the adapter does.
    """
    if _state.function_call is not None:
        return
    import threading

    from tensorflow.python.eager import def_function

    original = def_function.Function.__call__
    local = threading.local()

    def never_nested(self: _TracedFunction, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - whatever the user's tf.function returns
        if getattr(local, "entrance", None) is not None:
            try:
                return self._python_function(*args, **kwargs)
            except Exception:  # noqa: BLE001 - the adapter falls back to the real call on any error
                return original(self, *args, **kwargs)
        local.entrance = self._python_function.__name__
        try:
            return original(self, *args, **kwargs)
        finally:
            local.entrance = None

    def_function.Function.__call__ = never_nested
    _state.function_call = original


def _functions_without_xla() -> None:
    """``tf.function`` (and TensorFlow's own ``def_function.function``) become ``npu_compat_function``."""
    if _state.function_decorators is not None:
        return
    import tensorflow as tf
    from tensorflow.python.eager import def_function

    _state.function_decorators = (tf.function, def_function.function)
    tf.function = npu_compat_function
    def_function.function = npu_compat_function


def _restore_function_call() -> None:
    """``tf.function`` and its calls as TensorFlow makes them again (nothing to do: no TF import)."""
    if _state.function_call is None and _state.function_decorators is None:
        return
    import tensorflow as tf
    from tensorflow.python.eager import def_function

    if _state.function_call is not None:
        def_function.Function.__call__ = _state.function_call
        _state.function_call = None
    if _state.function_decorators is not None:
        tf.function, def_function.function = _state.function_decorators
        _state.function_decorators = None


def reset() -> None:
    """Forget the device, its options and reports (``emulate_adapter(False)``)."""
    _stop_device_emulation()
    _restore_function_call()
    _state.__init__()  # type: ignore[misc]  # back to a fresh process's state


def _positive_int(value: object) -> bool:
    """An int > 0, checked at run time (callers pass anything); a bool is refused, True is no count."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def set_npu_loop_size(loop_size: int) -> None:
    """The adapter runs ``loop_size`` iterations per device call; one CPU call here runs one."""
    if not _positive_int(loop_size):
        raise ValueError(f"set_npu_loop_size: loop_size must be a positive int, got {loop_size!r}")
    _state.loop_size = loop_size


def npu_loop_size() -> int:
    """The loop size the script set (the emulator counts each call as one step whatever it is)."""
    return _state.loop_size


def set_device_sat_mode(mode: int) -> None:
    """0 = saturation, 1 = INF/NaN: how the device reports float overflow. The CPU always gives inf/NaN."""
    if mode not in (0, 1):
        raise ValueError(f"set_device_sat_mode: mode must be 0 (saturation) or 1 (INF/NaN), got {mode!r}")
    _state.sat_mode = int(mode)


def is_inf_nan_enabled() -> bool:
    """Whether the device is in INF/NaN mode (the default here, as on the CPU)."""
    return _state.sat_mode == INF_NAN


def run_context_options() -> NpuBaseConfig:
    """``npu_device.configs.run_context_options()``: options for one ``npu_run_context``."""
    return new_run_context_options()


@contextlib.contextmanager
def npu_run_context(options: object = None) -> Iterator[None]:
    """The adapter's per-run options (``experimental.graph_memory_optimize_config.recompute``).

    Recomputation changes device memory, not values; the emulator has nothing to recompute, so the block
    runs as it is. The options are checked as the adapter checks them.
    """
    if options is not None and getattr(options, "_class_name", None) != "NpuRunContextOptions":
        raise ValueError("options type must be NpuRunContextOptions")
    yield


def npu_compat_function(func: Callable[..., object] | None = None, *args: Any, **kwargs: Any) -> Callable[..., object]:
    """``tf.function`` with XLA off, as the adapter's: the device compiles graphs with GE, not XLA."""
    from tensorflow.python.eager import def_function

    for key in ("experimental_compile", "jit_compile"):
        if kwargs.get(key):
            kwargs[key] = False
    original = _state.function_decorators[1] if _state.function_decorators is not None else def_function.function

    def decorate(function: Callable[..., object]) -> Callable[..., object]:
        traced: Callable[..., object] = original(*args, **kwargs)(function)
        return traced

    return decorate(func) if func is not None else decorate


def enable_v1() -> None:
    """TF1 code on the TF2 adapter: v2 behaviour off, the TF1 adapter (here: its emulation) loaded."""
    import tensorflow as tf

    if _state.handles:
        os.environ["ASCEND_DEVICE_ID"] = str(next(iter(_state.handles)))
    tf.compat.v1.disable_v2_behavior()
