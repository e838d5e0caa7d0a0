"""``%npu`` and ``%%npu``: the notebook's way to configure and run on an (emulated) Ascend NPU.

One class is both IPython ``Magics`` and a traitlets ``Configurable`` (appended to
``shell.configurables``), so display settings are ``%config NpuMagics.detail = "full"`` and can live in
``ipython_config.py``. Loading the extension imports neither TensorFlow nor the planner: both are
imported by the subcommands that need them.

To have ``%npu`` / ``%%npu`` without ``%load_ext``, put one of these in ``ipython_config.py``::

    c.InteractiveShellApp.extensions = ["npu_jupyter"]     # load at kernel start (no TF import)
    c.MagicsManager.lazy_magics = {"npu": "npu_jupyter"}  # load on first use of %npu / %%npu
"""

from __future__ import annotations

import contextlib
from html import escape
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool, Enum, observe
from traitlets.config import Configurable

from npu_jupyter.notebook import arguments, manual
from npu_jupyter.tensorflow_import import require_tensorflow

_SUBCOMMANDS = manual.subcommands()


@magics_class
class NpuMagics(Magics, Configurable):
    """The ``%npu`` / ``%%npu`` magics and their display settings."""

    detail = Enum(
        ["summary", "full"],
        default_value="summary",
        help="Reports show the ops that left the device or changed precision plus a capped, collapsed "
        "rest ('summary'), or every op ('full').",
    ).tag(config=True)
    autodisplay = Bool(
        True, help="Render each session run's report after a %%npu cell (--quiet turns it off per cell)."
    ).tag(config=True)
    verbose = Bool(
        False,
        help="Let TensorFlow's C++ log lines (profiler session, oneDNN, CUDA probes) into %%npu cell "
        "outputs and its start-up lines into the notebook's first TensorFlow cell; --verbose does it for "
        "one %%npu cell.",
    ).tag(config=True)
    legacy_keras = Bool(
        True,
        help="At %load_ext, make tf.keras Keras 2 (tf_keras, TF_USE_LEGACY_KERAS=1) when TensorFlow is not "
        "imported yet, as on the Ascend adapter's TensorFlow, so tf.compat.v1.layers work; False keeps Keras 3.",
    ).tag(config=True)
    backend = Enum(
        ["auto", "emulator", "ascend"],
        default_value="auto",
        help="Backend of the sessions %%npu creates: 'auto' uses the Ascend adapter when npu_bridge "
        "imports, else the CPU emulator.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        # Magics and Configurable both take `config`; Magics.__init__ does not forward it, so load
        # settings from the shell's config (e.g. ipython_config.py) here.
        if shell is not None and getattr(shell, "config", None) is not None:
            self.update_config(shell.config)
        from npu_jupyter.notebook.quiet import QuietStartup

        # Plain cells too are kept free of TensorFlow's C++ start-up lines (registered at %load_ext).
        self.startup = QuietStartup(shell, lambda: bool(self.verbose))

    @observe("legacy_keras")
    def _legacy_keras_changed(self, change: dict[str, Any]) -> None:
        """``%config NpuMagics.legacy_keras = False`` after loading undoes the switch while it still can."""
        from npu_jupyter.notebook import legacy_keras

        note = None if change["new"] else legacy_keras.keep_keras_3()
        if note:
            print(note)

    @observe("detail")
    def _detail_changed(self, change: dict[str, Any]) -> None:
        """Reports rendering themselves (``plan`` at the end of a cell) follow this setting too."""
        from npu_jupyter.display import html

        html.set_default_detail(change["new"])

    @line_cell_magic
    def npu(self, line: str, cell: str | None = None) -> Any:
        """Configure the Ascend NPU session options and run cells on an NPU session (``%npu help``)."""
        if cell is not None:
            return self._run_cell(line, cell)
        return self._line(line)

    # -- line magic --------------------------------------------------------------------------

    def _line(self, line: str) -> Any:
        tokens = arguments.split(line, _LINE_USAGE)
        command, rest = (tokens[0], tokens[1:]) if tokens else ("show", [])
        handler = getattr(self, f"_cmd_{command}", None)
        if command not in _SUBCOMMANDS or handler is None:
            raise UsageError(
                f"unknown %npu subcommand {command!r}{arguments.suggest(command, list(_SUBCOMMANDS))}.\n{_LINE_USAGE}"
            )
        return handler(rest)

    def _cmd_show(self, rest: list[str]) -> Any:
        _no_args("show", rest)
        from npu_jupyter.display.config_view import ConfigView

        return ConfigView(self._config())

    def _cmd_set(self, rest: list[str]) -> None:
        usage = "Usage: %npu set KEY=VALUE [KEY=VALUE ...]   (%npu help options lists the keys)"
        if not rest:
            raise UsageError(f"%npu set needs at least one KEY=VALUE.\n{usage}")
        values = arguments.parse_assignments(rest, usage)
        self._update(values, usage)

    def _cmd_unset(self, rest: list[str]) -> None:
        usage = "Usage: %npu unset KEY [KEY ...]   (%npu help options lists the keys)"
        if not rest:
            raise UsageError(f"%npu unset needs at least one option name.\n{usage}")
        keys = arguments.check_keys(rest, usage)
        self._update(dict.fromkeys(keys), usage)

    def _cmd_reset(self, rest: list[str]) -> None:
        _no_args("reset", rest)
        self._config().reset()

    def _cmd_panel(self, rest: list[str]) -> Any:
        _no_args("panel", rest)
        from npu_jupyter.notebook.panel import panel

        return panel(self._config())

    def _cmd_code(self, rest: list[str]) -> None:
        if rest not in ([], ["--estimator"]):
            raise UsageError("Usage: %npu code [--estimator]")
        api = "estimator" if rest else "session"
        print(self._config().to_code(api=api))

    def _cmd_save(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise UsageError("Usage: %npu save PATH   (quote a path with spaces)")
        try:
            self._config().save(rest[0])
        except (OSError, ValueError) as err:  # unwritable folder, a file where a folder should be, NUL in path
            reason = getattr(err, "strerror", None) or err
            raise UsageError(f"cannot save the NPU config to {rest[0]}: {reason}; nothing was written.") from None
        print(f"saved the NPU config to {rest[0]}")

    def _cmd_load(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise UsageError("Usage: %npu load PATH")
        from npu_jupyter.options.config import NpuConfig
        from npu_jupyter.options.errors import NpuConfigError

        try:
            loaded = NpuConfig.load(rest[0])
        except (OSError, NpuConfigError) as err:
            raise UsageError(f"cannot load {rest[0]}: {err}; the config is unchanged.") from None
        self._config().reset(loaded.changed())
        print(f"loaded the NPU config from {rest[0]}")

    def _cmd_explain(self, rest: list[str]) -> Any:
        if len(rest) != 1:
            raise UsageError("Usage: %npu explain FETCH   (a tensor or op name of the default graph)")
        tf = require_tensorflow("running a %%npu cell")

        from npu_jupyter.plan.planner import plan

        graph = tf.compat.v1.get_default_graph()
        op_name = rest[0].split(":")[0]
        names = [op.name for op in graph.get_operations()]
        if op_name not in names:
            hint = (
                arguments.suggest(op_name, names)
                if names
                else (
                    " (the default graph is empty: build the graph with tf.compat.v1 in graph mode, or call "
                    "npu_jupyter.plan(fn.get_concrete_function(...)) for a tf.function)"
                )
            )
            raise UsageError(f"no op {op_name!r} in the default graph{hint}.")
        try:  # the op exists; a tensor name must also name one of its outputs ('mm:5' for a 1-output op)
            graph.as_graph_element(rest[0], allow_tensor=True, allow_operation=True)
        except (KeyError, ValueError, TypeError) as err:
            raise UsageError(f"%npu explain {rest[0]}: {err}") from None
        result = plan(graph, self._config(), fetches=[rest[0]])
        if not result.fetches:  # the title says what was explained: "Plan of loss (...)"
            result.fetches = [rest[0]]
        return _Rendered(result, self.detail)

    def _cmd_adapter(self, rest: list[str]) -> None:
        """``%npu adapter [emulate | off]``: the emulated npu_bridge surface on or off, or the status."""
        from npu_jupyter import adapter

        if rest not in ([], ["emulate"], ["off"]):
            raise UsageError("Usage: %npu adapter [emulate | off]   (no argument: which adapter is in use)")
        if rest == ["emulate"]:
            try:
                adapter.emulate_adapter()
            except RuntimeError as err:
                raise UsageError(f"%npu adapter emulate: {err}") from None
        elif rest == ["off"]:
            adapter.uninstall()
        print(adapter.status())

    def _cmd_help(self, rest: list[str]) -> Any:
        """The manual (HTML in a notebook, text elsewhere), or every option by group."""
        if rest == ["options"]:
            print(_options_help())
            return None
        if rest:
            raise UsageError("Usage: %npu help [options]")
        return manual.Manual(NpuMagics.class_traits(config=True))

    # -- cell magic --------------------------------------------------------------------------

    def _run_cell(self, line: str, cell: str) -> Any:
        """Parse the flags, then validate and run the cell with TensorFlow's C++ logs kept out."""
        from npu_jupyter.notebook.cell_options import parse_cell_flags
        from npu_jupyter.notebook.quiet import quiet_tensorflow

        snapshot = self._config().snapshot()  # what the cell runs with, whatever changes meanwhile
        flags = parse_cell_flags(line, snapshot)
        # The checks below may import TensorFlow for the first time: its start-up lines are logs too.
        with quiet_tensorflow(enabled=not (flags.verbose or self.verbose)):
            return self._run_checked(line, cell, snapshot, flags)

    def _run_checked(self, line: str, cell: str, snapshot: Any, flags: Any) -> Any:
        """Validate everything, then run the cell on one snapshot of the config with sessions swapped."""
        from npu_jupyter.notebook.cell_functions import CellFunctions, emulated_functions, emulator_backend
        from npu_jupyter.notebook.cell_options import merged
        from npu_jupyter.notebook.run_reports import cell_reports
        from npu_jupyter.notebook.session_swap import CellSessions, swapped_sessions
        from npu_jupyter.notebook.state import set_last_reports
        from npu_jupyter.options.errors import NpuConfigError

        overrides = flags.overrides
        created = None
        try:
            cell_config = merged(snapshot, overrides)
            cell_config.validate()  # the cell's one check: its sessions and functions run on this snapshot
            created = _make_dump_folder(overrides)
            # The run-time checks too (dump_path must be a writable directory, profiling output...), so a
            # typo in --dump fails here rather than halfway through the cell.
            from npu_jupyter.runtime.run_settings import read_run_settings

            read_run_settings(cell_config)
        except (NpuConfigError, ValueError, OSError) as err:
            if created is not None:  # a refused cell leaves no folder behind
                _remove_empty(created)
            raise UsageError(f"%%npu {line.strip()}: {err}\nThe cell was not run.") from None
        from npu_jupyter.notebook.cell_code import CellCode

        code = CellCode(self.shell, line, cell)
        if flags.reference and not emulator_backend(self.backend):
            print(
                "%%npu --reference: drift against float32 is measured by the emulator only; on the ascend "
                "backend the real adapter runs this cell and nothing is compared."
            )
        cell_sessions = CellSessions(
            snapshot, overrides, self.backend, reference=flags.reference, cell_config=cell_config
        )
        functions = CellFunctions()
        failed = True
        try:
            # TF1 sessions are swapped; TF2 code's traced functions are emulated (emulator backend).
            with swapped_sessions(cell_sessions), emulated_functions(
                cell_config, self.backend, reference=flags.reference, layers=(snapshot, overrides)
            ) as functions:
                value = code.run()
            failed = False
        finally:
            # Also when the cell raised: the runs before the error (an overflow, say) often explain it.
            reports = cell_reports(cell_sessions.sessions) + functions.reports
            set_last_reports(reports)
            if self.autodisplay and not flags.quiet:
                self._show_reports(
                    reports, bool(cell_sessions.sessions) or bool(functions.reports), failed, line.strip()
                )
        return value

    def _show_reports(self, reports: list[Any], made_sessions: bool, failed: bool, line: str = "") -> None:
        """One rendered report per distinct run, or a line saying why there is none.

        The runs a person came for come first; variable-initialiser runs follow as one line, and a
        warning repeated by several reports is shown in full once (``run_reports``).
        """
        from IPython.display import display

        from npu_jupyter.display.mime import mimebundle
        from npu_jupyter.notebook.run_reports import arrange, dedupe_warnings, initializer_note

        shown, initializers = arrange(reports)
        for report in dedupe_warnings(shown):
            display(mimebundle(report, detail=self.detail), raw=True)
        if initializers:
            note = initializer_note(initializers)
            display({"text/plain": note, "text/html": f'<div style="opacity:.75">{escape(note)}</div>'}, raw=True)
        if not reports and not failed:
            why = "its sessions ran nothing" if made_sessions else "it created no tf.compat.v1.Session"
            print(no_effect_message(why, line))

    # -- helpers -----------------------------------------------------------------------------

    def _config(self) -> Any:
        from npu_jupyter.notebook.state import current_config

        return current_config()

    def _update(self, values: dict[str, Any], usage: str) -> None:
        """Apply ``values`` atomically; a config error becomes a UsageError and changes nothing."""
        from npu_jupyter.options.errors import NpuConfigError

        config = self._config()
        try:
            config.update(values)
        except NpuConfigError as err:
            raise UsageError(f"{err}\nNothing was changed.\n{usage}") from None
        # A combination can be wrong while a user is half-way through a change, so it is applied, but
        # said at once rather than when a session refuses it later.
        for problem in config.problems():
            print(f"%npu: not valid yet: {problem}")


def no_effect_message(why: str, line: str) -> str:
    """Why a cell has no report, and that its flags changed nothing that ran.

    Eager ops never go through a ``tf.compat.v1`` session nor a traced function, so a cell of eager
    TF2 code under ``--precision force_fp16`` computed in float32: saying only "no report" let a user
    believe otherwise. Traced functions (Keras ``fit``, ``tf.function``) are emulated when the emulator
    is the backend and TensorFlow calls them through ``AtomicFunction`` (2.14+); the message says so.
    """
    flags = f"its flags ({line})" if line else "the NPU config"
    return (
        f"%%npu: no report, {why} and called no traced tf.function. {flags[0].upper()}{flags[1:]} did not "
        "affect this cell's code: eager TensorFlow ops run on the CPU in their own dtypes. Sessions "
        "(tf.compat.v1) and traced functions (tf.function, Keras fit/evaluate/predict, on TensorFlow 2.14+ "
        "and the emulator backend) are what %%npu emulates; npu_jupyter.plan(fn.get_concrete_function(...)) "
        "shows what the adapter would decide for a function."
    )


def _make_dump_folder(overrides: dict[str, Any]) -> Any:
    """Create the cell's dump folder as ``--profile DIR`` creates its own; the created path, or None.

    Only a cell's own ``dump_path`` (``--dump DIR``): the session-wide option keeps the adapter's rule.
    """
    from pathlib import Path

    path = overrides.get("dump_path")
    if not overrides.get("enable_dump") or not path:
        return None
    folder = Path(str(path)).expanduser()
    if folder.exists():
        return None
    folder.mkdir(parents=True)
    return folder


def _remove_empty(folder: Any) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


class _Rendered:
    """A plan shown at the magics' detail level (``%npu explain``)."""

    def __init__(self, obj: Any, detail: str) -> None:
        self.obj = obj
        self.detail = detail

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from npu_jupyter.display.mime import mimebundle

        return mimebundle(self.obj, detail=self.detail)


_LINE_USAGE = manual.line_usage()


def _no_args(command: str, rest: list[str]) -> None:
    if rest:
        raise UsageError(f"%npu {command} takes no arguments, got {' '.join(rest)!r}.\n{_LINE_USAGE}")


def _document() -> None:
    """``%npu?`` shows the same manual as ``%npu help``, as text."""
    NpuMagics.npu.__doc__ = str(manual.Manual(NpuMagics.class_traits(config=True)))


_document()


def _options_help() -> str:
    """Every option by group: key, proto field type, allowed values, one line of doc."""
    from npu_jupyter.options import catalogue

    lines = []
    for group in catalogue.groups():
        lines.append(f"[{group}]")
        for spec in catalogue.specs_in_group(group):
            lines.append(f"  {spec.key} ({spec.allowed_text()}): {spec.doc}")
    return "\n".join(lines)


def load_ipython_extension(ip: Any) -> None:
    """Register ``%npu``/``%%npu`` and make ``%config NpuMagics`` work; idempotent."""
    from npu_jupyter.notebook.legacy_keras import choose_keras_2

    magics = NpuMagics(shell=ip)
    note = choose_keras_2(magics.legacy_keras)  # before anything can import TensorFlow
    if note:
        print(note)
    _stop_quiet_startup(ip)
    magics.startup.register()
    ip.register_magics(magics)
    ip.configurables = [c for c in ip.configurables if not isinstance(c, NpuMagics)] + [magics]


def _stop_quiet_startup(ip: Any) -> None:
    """The quiet start-up of an earlier load (``%reload_ext``) stops; one at a time."""
    for old in ip.configurables:
        if isinstance(old, NpuMagics):
            old.startup.unregister()


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics and the configurable (the session config itself is kept)."""
    for kind in ("line", "cell"):
        ip.magics_manager.magics[kind].pop("npu", None)
    ip.magics_manager.registry.pop("NpuMagics", None)
    _stop_quiet_startup(ip)
    ip.configurables = [c for c in ip.configurables if not isinstance(c, NpuMagics)]
