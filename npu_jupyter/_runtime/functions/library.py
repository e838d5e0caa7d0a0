"""A traced function's place in TensorFlow's eager function library: its name, the functions it calls, and
putting a definition (rewritten or original) in the library under that name.

The function emulation (:mod:`.emulator`) finds a call's whole tree here and swaps definitions in and out
of the eager context by name: the library, not the Python object, is what TensorFlow runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AtomicFunction, EagerContext, FunctionDef


def function_name(function: AtomicFunction) -> str:
    """The function's library name as text (TensorFlow gives bytes on some versions)."""
    name = function.name
    return name.decode() if isinstance(name, bytes) else str(name)


def call_tree(function: AtomicFunction) -> list[AtomicFunction]:
    """Every function ``function`` calls, transitively, each once."""
    seen: dict[str, Any] = {}
    stack = list(getattr(function, "children", []) or [])
    while stack:
        child = stack.pop()
        if function_name(child) in seen:
            continue
        seen[function_name(child)] = child
        stack.extend(getattr(child, "children", []) or [])
    return list(seen.values())


def register(context: EagerContext | None, name: str, definition: FunctionDef) -> None:
    """Put ``definition`` in ``context``'s library under ``name`` (replacing what is there)."""
    if context is None:
        return
    if context.has_function(name):
        context.remove_function(name)
    context.add_function_def(definition)


__all__ = ["call_tree", "function_name", "register"]
