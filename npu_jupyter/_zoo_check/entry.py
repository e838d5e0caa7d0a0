"""The entry contract of the zoo check, and how an entry reference becomes a function to call.

An **entry** is a function ``entry(npu, steps) -> loss`` in a Python file or an importable module:

* it builds its graph (TF1) or model (TF2),
* runs ``steps`` training steps in a session from ``npu.session(graph, config)`` (TF1), or inside
  ``with npu.functions(config):`` (TF2 ``tf.function`` / Keras code),
* and returns the loss of the last step (a number).

``config`` is the script's own NPU configuration (an ``NpuConfig``, a ``tf.compat.v1.ConfigProto`` as
the script builds it, or None); the zoo lays the task's option set (a precision mode, other options)
over it, so each task runs the script's config with only those options changed. The ``npu`` object
(:class:`ZooRun`) keeps every session and function emulation it hands out; the task reads their
reports after the entry returns.

A reference names an entry: ``path/to/train.py`` (its function ``zoo_entry``), ``path/to/train.py:fn``,
``package.module`` or ``package.module:fn``. A file is loaded as ``python path/to/train.py`` would load
it: its folder goes first on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import time
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from npu_jupyter._options.config import NpuConfig, _NpuConfigBase
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.backends import SessionConfigInput
    from npu_jupyter._runtime.functions.emulator import FunctionEmulation
    from npu_jupyter._runtime.session.emulator import EmulatorSession
    from npu_jupyter._tf_types import Graph

DEFAULT_FUNCTION = "zoo_entry"


class EntryError(ValueError):
    """An entry reference that names no callable entry: what was asked for and what is allowed."""


def normalise(reference: object) -> str:
    """The reference as the zoo stores it: files made absolute, functions as ``module:qualname``.

    Why: tasks run in other processes (and on other machines with Ray), so a reference must be text
    that resolves the same there; a function object defined in a notebook (``__main__``) cannot be.
    """
    if callable(reference):
        module = getattr(reference, "__module__", None)
        name = getattr(reference, "__qualname__", "")
        if module in (None, "__main__", "__mp_main__") or "<" in name:
            raise EntryError(
                f"zoo entry {getattr(reference, '__name__', reference)!r} is defined in the notebook or script "
                f"itself ({module}); each task runs in its own process, so put the entry in a .py file and pass "
                f"'path/to/file.py:function' (or an importable 'module:function')"
            )
        return f"{module}:{name}"
    if not isinstance(reference, (str, os.PathLike)):
        raise EntryError(f"a zoo entry is a 'file.py[:function]', 'module[:function]' or a function, not {reference!r}")
    text = os.fspath(reference)
    drive = text[:2] if _is_drive(text) else ""
    target, _, function = text[len(drive) :].partition(":")
    target = drive + target
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise EntryError(f"zoo entry {text!r}: no such file {str(path)!r}")
        target = str(path)
    elif not target or not all(part.isidentifier() for part in target.split(".")):
        raise EntryError(f"zoo entry {text!r}: expected 'file.py[:function]' or 'module[:function]'")
    if function and not all(part.isidentifier() for part in function.split(".")):
        raise EntryError(f"zoo entry {text!r}: {function!r} is not a function name")
    return f"{target}:{function or DEFAULT_FUNCTION}"


def _is_drive(text: str) -> bool:
    r"""``C:\\...`` on Windows: the colon is a drive, not the function separator."""
    return len(text) > 2 and text[1] == ":" and text[0].isalpha() and text[2] in "\\/"


def resolve(reference: str) -> Callable[..., Any]:
    """The callable a normalised reference names (imports the file or module)."""
    target, _, function = reference.rpartition(":")
    if target.endswith(".py"):
        module = _load_file(Path(target))
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise EntryError(f"zoo entry {reference!r}: cannot import {target!r}: {exc}") from exc
    found: Any = module
    for part in function.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise EntryError(
            f"zoo entry {reference!r}: {target} has no function {function!r} "
            f"(the contract: def {function}(npu, steps) -> loss)"
        )
    return found  # type: ignore[no-any-return]


def _load_file(path: Path) -> types.ModuleType:
    """Import a script by path, as ``python path`` would see its own folder first on ``sys.path``."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"npu_jupyter_zoo_entry_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EntryError(f"zoo entry file {str(path)!r} cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class ZooRun:
    """What an entry is handed as ``npu``: sessions and function emulations under the task's options.

    ``options`` are laid over the script's own config by :meth:`config`; ``reference`` runs a float32
    reference beside every emulated step (the drift columns). Everything handed out is kept, so the
    task can read the reports after the entry returns.
    """

    def __init__(self, options: dict[str, Any], steps: int, reference: bool = True) -> None:
        self.options = dict(options)
        self.steps = steps
        self.reference = reference
        self.sessions: list[EmulatorSession] = []
        self.emulations: list[FunctionEmulation] = []
        self.plan_ms = 0.0  # total planner time of the task, measured on this CPU
        self.plans = 0
        self.graphs: dict[int, Graph] = {}  # id(plan) -> the graph it plans (cost model, lowered ops)

    def config(self, config: SessionConfigInput = None) -> _NpuConfigBase:
        """The script's config (NpuConfig, ConfigProto, mapping or None) with the task's options laid over."""
        from npu_jupyter._runtime.backends import resolve_config

        base, _ = resolve_config(config)
        overrides = dict(self.options)
        if "precision_mode" in overrides and "precision_mode_v2" not in overrides:
            overrides["precision_mode_v2"] = None  # the mode under test, not the script's v2 setting
        from npu_jupyter._options.config import NpuConfig

        return NpuConfig.from_snapshot(base.layered(overrides))

    def session(self, graph: Graph | None = None, config: SessionConfigInput = None) -> EmulatorSession:
        """An emulator session on ``graph`` under :meth:`config` (a ``tf.compat.v1.Session`` look-alike)."""
        from npu_jupyter._runtime.backends import resolve_config
        from npu_jupyter._runtime.session.emulator import EmulatorSession

        _, base_proto = resolve_config(config)
        session = EmulatorSession(
            self.config(config), graph, reference=self.reference, base_proto=base_proto, plan_fn=self._planner("tf1")
        )
        self.sessions.append(session)
        return session

    @contextlib.contextmanager
    def functions(self, config: SessionConfigInput = None) -> Iterator[FunctionEmulation]:
        """Emulate every traced function (Keras fit, tf.function loops) called inside the ``with`` block."""
        from npu_jupyter._runtime.functions.emulator import FunctionEmulation, supported

        if not supported():
            raise EntryError("npu.functions() needs TensorFlow >= 2.14 (traced functions run through AtomicFunction)")
        emulation = FunctionEmulation(self.config(config), reference=self.reference, plan_fn=self._planner("tf2"))
        self.emulations.append(emulation)
        with emulation:
            yield emulation

    def _planner(self, adapter: str) -> Callable[..., Plan]:
        """``npu_jupyter.plan`` timed, remembering each plan's graph (the emulator calls it per run graph)."""
        from npu_jupyter._plan.planner import plan

        def timed(graph: Graph, config: NpuConfig, **kwargs: Any) -> Plan:
            if adapter == "tf2":
                kwargs["adapter"] = "tf2"
            start = time.perf_counter()
            made = plan(graph, config, **kwargs)
            self.plan_ms += (time.perf_counter() - start) * 1000.0
            self.plans += 1
            self.graphs[id(made)] = graph
            return made

        return timed
