"""Builds the emulated adapter modules (``npu_bridge``, CANN's ``hccl``, the TF2 adapter's ``npu_device``).

``surface.json`` holds the TF1 adapter and ``hccl``, ``surface_tf2.json`` the TF2 adapter; the TF2
adapter's ``npu_device.compat.v1`` tree is the emulated ``npu_bridge`` itself (the adapter ships TF1's
``npu_bridge`` there).

Each module gets its emulated names as attributes and, like the real modules (which have no
``__all__`` and export every public name), exports the adapter's other public names too: as
:class:`NotEmulated` stand-ins that raise :class:`NotEmulatedError`, naming themselves and saying what
to do instead, when called or read. So ``from npu_bridge.npu_init import *`` followed by a use of a
name the emulation lacks fails on that use with the reason, not with a bare ``NameError``. A submodule
that is not emulated fails the same way when imported (:class:`NotEmulatedFinder`); a module the
table marks ``on_import`` (``npu_convert_dropout``, imported for its side effect) is built, and runs
its effect, only when a script imports it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import json
import sys
import types
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, cast

MARKER = "__npu_jupyter_emulated__"
ROOT = "npu_bridge"
TF2_ROOT = "npu_device"
#: the adapter's own packages: a real one of either means an Ascend server, where nothing is emulated
ADAPTER_ROOTS = (ROOT, TF2_ROOT)
#: the TF2 adapter ships TF1's npu_bridge as npu_device.compat.v1 (its build renames the imports)
TF1_IN_TF2 = "npu_device.compat.v1"


class NotEmulatedError(ImportError):
    """An adapter name the emulated surface does not provide.

    An ImportError, so ``from npu_bridge.x import name`` of a submodule shows this message rather than
    Python's generic one; raised when a stand-in is called or read too.
    """


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    table: dict[str, Any] = {}
    for file in ("surface.json", "surface_tf2.json"):
        with open(Path(__file__).with_name(file), encoding="utf-8") as handle:
            table.update(cast("dict[str, Any]", json.load(handle)["modules"]))
    return table


def spec_table() -> dict[str, Any]:
    """Module name -> {"emulated": {name: target}, "not_emulated": {name: why and what to do}, "on_import"?}."""
    return _table()


def roots() -> list[str]:
    """The top-level packages the surface emulates (``npu_bridge`` first)."""
    found = sorted({name.split(".")[0] for name in _table()})
    return sorted(found, key=lambda root: root != ROOT)


def reasons(entry: dict[str, Any]) -> dict[str, str]:
    """A module's names not emulated with their reasons (a plain list of names reads as no reason given)."""
    names = entry.get("not_emulated", {})
    return dict(names) if isinstance(names, dict) else dict.fromkeys(names, "")


def not_emulated_message(module: str, name: str, reason: str = "") -> str:
    """What a user reads: which name, why it is not emulated and what to do, and what the module offers."""
    entry = _table().get(module, {})
    offered = ", ".join(sorted(entry.get("emulated", {}))) or "nothing"
    why = f": {reason}" if reason else ""
    return (
        f"{module}.{name} is part of the Ascend adapter but is not emulated by npu_jupyter's emulated "
        f"adapter{why}. {module} emulates: {offered}. See docs/emulated-adapter.md; on an Ascend server "
        "the real adapter provides it."
    )


class NotEmulated:
    """Stand-in for an adapter name that is not emulated: exported, but using it raises.

    Calling it, reading a public attribute of it or subclassing it raises :class:`NotEmulatedError`
    with the reason; private and dunder lookups (IPython's display probes, ``hasattr(x, "_repr_html_")``)
    stay ordinary AttributeErrors so tools that inspect a namespace are not tripped.
    """

    __slots__ = ("_message", "_qualname")

    def __init__(self, module: str, name: str, reason: str) -> None:
        self._qualname = f"{module}.{name}"
        self._message = not_emulated_message(module, name, reason)

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Using the name: one clear error."""
        raise NotEmulatedError(self._message)

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotEmulatedError(self._message)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        """``class Mine(NotEmulatedName)``: the same error as a call."""
        raise NotEmulatedError(self._message)

    def __repr__(self) -> str:
        return f"<{self._qualname}: not emulated by npu_jupyter (using it raises NotEmulatedError)>"


def _module_getattr(module_name: str, emulated: list[str]) -> Callable[[str], NoReturn]:
    def __getattr__(name: str) -> NoReturn:  # noqa: N807 - installed as a module's PEP 562 __getattr__
        raise AttributeError(
            f"module {module_name!r} (npu_jupyter's emulated adapter) has no attribute "
            f"{name!r}; it emulates: {', '.join(sorted(emulated)) or 'nothing'}"
        )

    return __getattr__


def _resolve(target: str, built: dict[str, types.ModuleType]) -> Any:  # noqa: ANN401 - any name the surface table lists (class, function, module, value)
    """'pkg.mod:attr' or 'pkg.mod' (an emulated module when it is one of ours)."""
    module_name, _, attr = target.partition(":")
    module = built.get(module_name) or sys.modules.get(module_name) or importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _empty_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"npu_jupyter's emulated stand-in for the Ascend adapter's {name}.")
    setattr(module, MARKER, True)
    module.__path__ = []  # every emulated module may have children; the finder guards the rest
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    return module


def _fill(module: types.ModuleType, built: dict[str, types.ModuleType]) -> None:
    """The module's emulated names, its stand-ins, ``__all__`` and the unknown-name error."""
    entry = _table()[module.__name__]
    emulated = entry["emulated"]
    for attr, target in emulated.items():
        try:
            value = _resolve(target, built)
        except ImportError as err:  # a TensorFlow module this TensorFlow lacks: the name fails on use, saying so
            value = NotEmulated(module.__name__, attr, f"it re-exports {target}, which this TensorFlow lacks ({err})")
        setattr(module, attr, value)
    for attr, reason in reasons(entry).items():
        setattr(module, attr, NotEmulated(module.__name__, attr, reason))
    module.__all__ = sorted([*emulated, *reasons(entry)])  # type: ignore[attr-defined]  # a module built at runtime
    # PEP 562 module __getattr__ on a module built at runtime
    module.__getattr__ = _module_getattr(module.__name__, list(emulated))  # type: ignore[method-assign]


def build_modules(skip_roots: tuple[str, ...] = ()) -> dict[str, types.ModuleType]:
    """Fresh module objects for every emulated module but the import-time ones, keyed by full name.

    ``skip_roots``: top-level packages not to emulate (a real ``hccl`` is installed).
    """
    table = _table()
    names = [n for n in table if n.split(".")[0] not in skip_roots and "on_import" not in table[n]]
    built = {name: _empty_module(name) for name in sorted(names, key=lambda n: n.count("."))}
    # children as attributes of their parents, as a real import would leave them
    for name, module in built.items():
        parent, _, leaf = name.rpartition(".")
        if parent in built:
            setattr(built[parent], leaf, module)
    for name in sorted(built, key=lambda n: -n.count(".")):  # leaves first: parents may re-export them
        _fill(built[name], built)
    _add_tf1_in_tf2(built)
    return built


def _add_tf1_in_tf2(built: dict[str, types.ModuleType]) -> None:
    """``npu_device.compat.v1.<x>`` is the emulated ``npu_bridge.<x>`` (the same module objects)."""
    home = built.get(TF1_IN_TF2)
    if home is None:
        return
    for name, module in list(built.items()):
        if name.split(".")[0] != ROOT or name == ROOT:
            continue
        alias = TF1_IN_TF2 + name[len(ROOT) :]
        built[alias] = module
        parent, _, leaf = alias.rpartition(".")
        if parent == TF1_IN_TF2:
            setattr(home, leaf, module)
            home.__all__ = sorted({*home.__all__, leaf})  # type: ignore[attr-defined]  # a module built at runtime


class _OnImportLoader(importlib.abc.Loader):
    """Builds a module the table marks ``on_import`` and runs its effect, when a script imports it."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _empty_module(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        _fill(module, {})
        _resolve(_table()[module.__name__]["on_import"], {})()


class NotEmulatedFinder(importlib.abc.MetaPathFinder):
    """Refuses, with a message naming it, any submodule of an emulated package the surface does not emulate."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an ``on_import`` module; NotEmulatedError for another unknown one; None outside ours."""
        root = fullname.split(".", maxsplit=1)[0]
        if fullname in sys.modules or not getattr(sys.modules.get(root), MARKER, False):
            return None
        entry = _table().get(fullname)
        if entry is not None and "on_import" in entry:
            return importlib.machinery.ModuleSpec(fullname, _OnImportLoader(), is_package=True)
        parent, _, leaf = fullname.rpartition(".")
        reason = reasons(_table().get(parent, {})).get(leaf, "")
        raise NotEmulatedError(not_emulated_message(parent, leaf, reason))
