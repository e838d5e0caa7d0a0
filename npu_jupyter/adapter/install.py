"""Turning the emulated adapter surface on and off, never over a real adapter.

``emulate_adapter()`` installs the modules of :mod:`npu_jupyter.adapter.surface` into ``sys.modules``
(``npu_bridge``, and CANN's ``hccl`` Python API unless a real one is installed), a finder that names
un-emulated submodules, and the session swap of :mod:`npu_jupyter.adapter.tf1.sessions`; and the TF2
adapter's ``npu_device``, whose device (``npu_device.open().as_default()``) lives in
:mod:`npu_jupyter.adapter.tf2.device` and closes when the emulation is turned off. It refuses when a real
``npu_bridge`` or ``npu_device`` is importable: on an Ascend server the adapter itself must run.
"""

from __future__ import annotations

import importlib.machinery
import sys

from npu_jupyter.adapter.surface import ADAPTER_ROOTS, MARKER, ROOT, NotEmulatedFinder, roots

_finder = NotEmulatedFinder()


def is_emulated() -> bool:
    """Whether the emulated ``npu_bridge`` is the one in ``sys.modules`` now."""
    return bool(getattr(sys.modules.get(ROOT), MARKER, False))


def real_adapter_location() -> str | None:
    """Where a real ``npu_bridge`` or ``npu_device`` is (imported already, or findable on sys.path), else None."""
    for root in ADAPTER_ROOTS:
        loaded = sys.modules.get(root)
        if loaded is not None and not getattr(loaded, MARKER, False):
            return str(getattr(loaded, "__file__", None) or getattr(loaded, "__path__", None) or root)
        spec = importlib.machinery.PathFinder.find_spec(root)  # sys.path only, ignoring our modules
        if spec is not None:
            return str(spec.origin or list(spec.submodule_search_locations or []) or root)
    return None


def emulate_adapter(enable: bool = True) -> list[str]:
    """Install (or with ``enable=False`` remove) the emulated Ascend adapter surface; returns its modules.

    Afterwards real Ascend scripts' imports work (``from npu_bridge.npu_init import *``,
    ``from npu_bridge.estimator import npu_ops``, ``import npu_device``, ...), every
    ``tf.compat.v1.Session`` they create runs on the CPU emulator with the NpuOptimizer options of its
    ConfigProto, and after ``npu_device.open().as_default()`` every traced function runs there with the
    options of ``npu_device.global_options()``. Names the surface does not
    emulate fail with a message naming them (docs/emulated-adapter.md lists both). Idempotent.

    Raises RuntimeError, changing nothing, when a real ``npu_bridge`` or ``npu_device`` is installed: the
    emulation never shadows the real adapter.
    """
    if not enable:
        uninstall()
        return []
    location = real_adapter_location()
    if location is not None:
        raise RuntimeError(
            f"the Ascend adapter (npu_bridge / npu_device) is installed here ({location}); npu_jupyter never "
            "shadows a real adapter with its emulated one. Use it as it is (backend 'auto' or 'ascend'), or run "
            "in an environment without npu_bridge and npu_device to emulate it."
        )
    if is_emulated():
        return _emulated_module_names()
    _require_tensorflow()
    from npu_jupyter.adapter.surface import build_modules
    from npu_jupyter.adapter.tf1 import sessions

    real = tuple(root for root in roots() if root != ROOT and _findable(root))
    modules = build_modules(skip_roots=real)  # may import TensorFlow; nothing is installed if that fails
    try:
        sys.modules.update(modules)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
        sessions.patch()
    except BaseException:
        uninstall()  # all or nothing
        raise
    return sorted(modules)


def _findable(root: str) -> bool:
    """Whether a real package ``root`` is importable (a real ``hccl`` is used as it is, never shadowed)."""
    loaded = sys.modules.get(root)
    if loaded is not None:
        return not getattr(loaded, MARKER, False)
    return importlib.machinery.PathFinder.find_spec(root) is not None


def _emulated_module_names() -> list[str]:
    """The emulated modules now in ``sys.modules``."""
    return sorted(n for n, m in list(sys.modules.items()) if n.split(".")[0] in roots() and getattr(m, MARKER, False))


def _require_tensorflow() -> None:
    """The emulated adapter runs scripts on the CPU emulator, which is TensorFlow: say what to install."""
    try:
        import tensorflow  # noqa: F401, ICN001 - only whether it imports
    except ImportError as err:
        raise RuntimeError(
            f"the emulated adapter runs scripts on npu_jupyter's CPU emulator, which needs TensorFlow ({err}). "
            "Install it into this kernel's environment, e.g. pip install 'npu_jupyter[emulator]' or "
            "pip install tensorflow-cpu; nothing was changed."
        ) from None


def uninstall() -> None:
    """Remove the emulated modules, the finder, the session and dropout swaps and the TF2 device (never a real adapter)."""
    for name in _emulated_module_names():
        del sys.modules[name]
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    from npu_jupyter.adapter.tf1 import dropout_swap, sessions
    from npu_jupyter.adapter.tf2 import device as tf2_device

    sessions.restore()
    dropout_swap.restore()
    tf2_device.reset()


def status() -> str:
    """One line for ``%npu adapter``: real, emulated, or none."""
    if is_emulated():
        return (
            "adapter: emulated (npu_jupyter's emulated npu_bridge and npu_device; sessions and, after "
            "npu_device.open().as_default(), traced functions run on the CPU emulator)"
        )
    location = real_adapter_location()
    if location is not None:
        return f"adapter: real Ascend adapter at {location} (backend 'auto' uses it)"
    return "adapter: none installed (backend 'auto' uses the CPU emulator; '%npu adapter emulate' emulates npu_bridge and npu_device)"
