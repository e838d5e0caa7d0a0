"""Every place a script finds ``Session`` / ``InteractiveSession``, so a swap reaches all of them.

``tf.compat.v1`` is a module wrapper distinct from the module ``import tensorflow.compat.v1 as tf``
returns (TF 2.x), and on TF 1.15 scripts write ``tf.Session`` on the top-level module. A swap that
patches one namespace misses scripts that use another, so both the %%npu cell swap and the emulated
adapter patch them all and restore exactly what they replaced.

TensorFlow's own session machinery (``MonitoredTrainingSession``, ``MonitoredSession`` and so the
Estimator) uses none of those names: its ``SessionManager`` calls
``tensorflow.python.client.session.Session`` directly. A swap of ``Session`` therefore also gives
``session_manager`` a view of that module whose ``Session`` is whatever ``tf.compat.v1.Session`` is at
the time (the innermost swap), so monitored sessions are swapped too. Where that module cannot be
reached (a TensorFlow laid out otherwise), a warning says such sessions stay plain TensorFlow.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any, Callable

_V1_SUFFIX = "compat.v1"
_SESSION_MANAGER = "tensorflow.python.training.session_manager"


def namespaces() -> list[Any]:
    """Distinct module objects exposing the TF1 session names (tf, tf.compat.v1 and its aliases)."""
    import tensorflow as tf

    try:  # the object `import tensorflow.compat.v1 as tf` binds, made now so a later import finds it patched
        import tensorflow.compat.v1 as imported_v1
    except ImportError:  # pragma: no cover - TF builds without the compat package
        imported_v1 = tf.compat.v1
    candidates: list[Any] = [tf, tf.compat.v1, imported_v1]
    for name, module in list(sys.modules.items()):
        if name.startswith("tensorflow") and name.endswith(_V1_SUFFIX) and module is not None:
            candidates.append(module)
    found: list[Any] = []
    for module in candidates:
        if any(module is seen for seen in found):
            continue
        if _has(module, "Session"):
            found.append(module)
    return found


def _has(module: object, name: str) -> bool:
    """Whether the namespace offers ``name`` (TF's module wrappers forward attributes, so ask, not vars())."""
    try:
        return getattr(module, name, None) is not None
    except Exception:  # noqa: BLE001 - a lazy loader failing to load means the name is not usable here
        return False


def patch(names: tuple[str, ...], make: Callable[[str, Any], Any]) -> list[tuple[Any, str, Any]]:
    """Set ``module.name = make(name, original)`` everywhere; returns what to restore."""
    replaced: list[tuple[Any, str, Any]] = []
    originals: dict[str, Any] = {}
    for module in namespaces():
        for name in names:
            if not _has(module, name):
                continue
            original = getattr(module, name)
            if name not in originals:
                originals[name] = (original, make(name, original))
            replaced.append((module, name, original))
            setattr(module, name, originals[name][1])
    if "Session" in names:
        replaced.extend(_patch_session_manager())
    return replaced


class _SessionModuleView(types.ModuleType):
    """``tensorflow.python.client.session`` as ``session_manager`` sees it: ``Session`` is ``tf.compat.v1.Session`` now."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self.__dict__["_real"] = real

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - forwards any attribute of the real module
        if name == "Session":
            import tensorflow as tf

            return tf.compat.v1.Session
        return getattr(self.__dict__["_real"], name)


def _patch_session_manager() -> list[tuple[Any, str, Any]]:
    """Monitored sessions follow the swap (what to restore), or a warning says they do not."""
    try:
        manager: Any = importlib.import_module(_SESSION_MANAGER)
        real = manager.session
    except (ImportError, AttributeError) as err:
        real, manager = err, None
    if isinstance(real, _SessionModuleView):  # an outer swap installed it; it follows this one already
        return []
    if not isinstance(real, types.ModuleType) or not hasattr(real, "Session"):
        warnings.warn(
            f"npu_jupyter could not reach TensorFlow's SessionManager ({real}): sessions made by "
            "MonitoredTrainingSession, MonitoredSession and the Estimator stay plain TensorFlow sessions and are NOT "
            "swapped; create a tf.compat.v1.Session yourself",
            stacklevel=4,
        )
        return []
    manager.session = _SessionModuleView(real)
    return [(manager, "session", real)]


def restore(replaced: list[tuple[Any, str, Any]]) -> None:
    """Undo :func:`patch`, last first."""
    for module, name, original in reversed(replaced):
        setattr(module, name, original)
