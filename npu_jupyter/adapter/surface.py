"""Builds the emulated ``npu_bridge`` modules from ``surface.json``.

Each module gets its emulated names as attributes and ``__all__`` (so ``from npu_bridge.npu_init
import *`` brings exactly them). Any other public name fails with :class:`NotEmulatedError`, which
names it, says it is the adapter's and not emulated, and lists what is; a submodule that is not
emulated fails the same way when imported (:class:`NotEmulatedFinder`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import json
import sys
import types
from pathlib import Path
from typing import Any

MARKER = "__npu_jupyter_emulated__"
ROOT = "npu_bridge"
TF2_ROOT = "npu_device"
ROOTS = (ROOT, TF2_ROOT)
#: the TF2 adapter ships TF1's npu_bridge as npu_device.compat.v1 (its build renames the imports)
TF1_IN_TF2 = "npu_device.compat.v1"


class NotEmulatedError(ImportError):
    """An adapter name the emulated surface does not provide.

    An ImportError, so ``from npu_bridge.x import name`` shows this message rather than Python's generic
    one; raised for attribute access too.
    """


def spec_table() -> dict[str, Any]:
    """Module name -> {"emulated": {name: target}, "not_emulated": [names] or {name: why}}.

    ``surface.json`` holds the TF1 adapter (npu_bridge), ``surface_tf2.json`` the TF2 one (npu_device).
    """
    table: dict[str, Any] = {}
    for file in ("surface.json", "surface_tf2.json"):
        with open(Path(__file__).with_name(file), encoding="utf-8") as handle:
            table.update(json.load(handle)["modules"])
    return table


def _not_emulated_message(module: str, name: str, emulated: list[str], why: str | None = None) -> str:
    offered = ", ".join(sorted(emulated)) or "nothing"
    reason = f"({why})" if why else "(it has no one-device CPU equivalent here)"
    return (
        f"{module}.{name} is part of the Ascend adapter but is not emulated by npu_jupyter's emulated "
        f"adapter surface {reason}. {module} emulates: {offered}. "
        "See docs/emulated-adapter.md; on an Ascend server the real adapter provides it."
    )


def _module_getattr(module_name: str, known: Any, emulated: list[str]) -> Any:
    """``known``: the adapter's names not emulated, a list or a mapping name -> why."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - installed as a module's PEP 562 __getattr__
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        if name in known:
            why = known.get(name) if isinstance(known, dict) else None
            raise NotEmulatedError(_not_emulated_message(module_name, name, emulated, why))
        raise AttributeError(
            f"module {module_name!r} (npu_jupyter's emulated adapter) has no attribute "
            f"{name!r}; it emulates: {', '.join(sorted(emulated)) or 'nothing'}"
        )

    return __getattr__


def _resolve(target: str, built: dict[str, types.ModuleType]) -> Any:
    """'pkg.mod:attr' or 'pkg.mod' (an emulated module when it is one of ours)."""
    module_name, _, attr = target.partition(":")
    module = built.get(module_name) or importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def build_modules() -> dict[str, types.ModuleType]:
    """Fresh module objects for every emulated module, keyed by full name (parents before children)."""
    table = spec_table()
    built: dict[str, types.ModuleType] = {}
    for name in sorted(table, key=lambda n: n.count(".")):
        module = types.ModuleType(name, f"npu_jupyter's emulated stand-in for the Ascend adapter's {name}.")
        setattr(module, MARKER, True)
        module.__path__ = []  # every emulated module may have children; the finder guards the rest
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        built[name] = module
    # children as attributes of their parents, as a real import would leave them
    for name, module in built.items():
        parent, _, leaf = name.rpartition(".")
        if parent in built:
            setattr(built[parent], leaf, module)
    for name in sorted(table, key=lambda n: -n.count(".")):  # leaves first: parents may re-export them
        module = built[name]
        emulated = table[name]["emulated"]
        for attr, target in emulated.items():
            setattr(module, attr, _resolve(target, built))
        module.__all__ = sorted(emulated)  # type: ignore[attr-defined]  # a module built at runtime
        # PEP 562 module __getattr__ on a module built at runtime
        module.__getattr__ = _module_getattr(name, table[name]["not_emulated"], list(emulated))  # type: ignore[method-assign]
    _add_tf1_in_tf2(built)
    return built


def _add_tf1_in_tf2(built: dict[str, types.ModuleType]) -> None:
    """``npu_device.compat.v1.<x>`` is the emulated ``npu_bridge.<x>`` (same module objects)."""
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


class NotEmulatedFinder(importlib.abc.MetaPathFinder):
    """Refuses, with a message naming it (and why, where the surface data says), any adapter submodule
    the surface does not emulate.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any | None:
        """Raise NotEmulatedError for an adapter submodule that is not emulated; None for any other."""
        if fullname.split(".", maxsplit=1)[0] not in ROOTS or fullname in sys.modules:
            return None
        parent, _, leaf = fullname.rpartition(".")
        emulated = [n.rpartition(".")[2] for n in sys.modules if n.rpartition(".")[0] == parent]
        known = spec_table().get(parent, {}).get("not_emulated", [])
        why = known.get(leaf) if isinstance(known, dict) else None
        raise NotEmulatedError(_not_emulated_message(parent, leaf, emulated, why))
