"""``%npu`` and ``%%npu``: the notebook's way to configure and run on an (emulated) Ascend NPU.

``%npu`` is a line magic whose subcommands each have an argparse parser (``subcommands.py``);
``%%npu`` is a cell magic whose flags are IPython ``@magic_arguments`` (so ``%%npu?`` shows them). The
magics parse and display: a cell's run is a :class:`~npu_jupyter._notebook.cell_run.CellRun`. IPython's
``Magics`` is a traitlets ``Configurable`` (appended to ``shell.configurables``), so the display settings
are ``%config NpuMagics.detail = "full"`` and can live in ``ipython_config.py``. Loading the extension
imports neither TensorFlow nor the planner: both are imported by the subcommands that need them.

To have ``%npu`` / ``%%npu`` without ``%load_ext``, put one of these in ``ipython_config.py``::

    c.InteractiveShellApp.extensions = ["npu_jupyter"]     # load at kernel start (no TF import)
    c.MagicsManager.lazy_magics = {"npu": "npu_jupyter"}  # load on first use of %npu / %%npu
"""

from __future__ import annotations

import argparse
import sys
from html import escape
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Enum, observe

from npu_jupyter._notebook import arguments, manual, subcommands
from npu_jupyter._notebook.cell_options import CellParser
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.utils.bunch import Bunch

    from npu_jupyter._display.config_view import ConfigView
    from npu_jupyter._notebook.panel import NpuPanel
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.report import RunReport


@magics_class
class NpuMagics(Magics):
    """The ``%npu`` / ``%%npu`` magics and their display settings (``Magics`` is a traitlets Configurable)."""

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

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell=shell)  # with the shell as parent: c.NpuMagics.* of ipython_config.py apply
        from npu_jupyter._notebook.quiet import QuietStartup

        # Plain cells too are kept free of TensorFlow's C++ start-up lines (registered at %load_ext).
        self.startup = QuietStartup(shell, lambda: bool(self.verbose))

    @observe("legacy_keras")
    def _legacy_keras_changed(self, change: Bunch) -> None:
        """``%config NpuMagics.legacy_keras = False`` after loading undoes the switch while it still can."""
        from npu_jupyter._notebook import legacy_keras

        note = None if change["new"] else legacy_keras.keep_keras_3()
        if note:
            print(note)

    @observe("detail")
    def _detail_changed(self, change: Bunch) -> None:
        """Reports rendering themselves (``plan`` at the end of a cell) follow this setting too."""
        from npu_jupyter._display import html

        html.set_default_detail(change["new"])

    # -- line magic: one parser per subcommand (subcommands.py) ------------------------------------

    @line_magic
    def npu(self, line: str) -> object:
        """Configure the Ascend NPU session options and run cells on an NPU session (``%npu help``)."""
        tokens = arguments.split(line, subcommands.line_usage())
        name, rest = (tokens[0], tokens[1:]) if tokens else ("show", [])
        if name in subcommands.HELP_WORDS:
            name = "help"
        parser = subcommands.parser(name)
        if any(token in subcommands.HELP_WORDS for token in rest):
            print(parser.format_help(), end="")
            return None
        handler = getattr(self, f"_cmd_{name}")
        return handler(parser.parse(rest))

    def _cmd_show(self, args: argparse.Namespace) -> ConfigView:
        from npu_jupyter._display.config_view import ConfigView

        return ConfigView(self._config(), device=_open_device_config())

    def _cmd_set(self, args: argparse.Namespace) -> None:
        usage = subcommands.parser("set").usage_line()
        self._update(arguments.parse_assignments(args.assignments, usage), usage)

    def _cmd_unset(self, args: argparse.Namespace) -> None:
        usage = subcommands.parser("unset").usage_line()
        self._update(dict.fromkeys(arguments.check_keys(args.keys, usage)), usage)

    def _cmd_reset(self, args: argparse.Namespace) -> None:
        self._config().reset()

    def _cmd_panel(self, args: argparse.Namespace) -> NpuPanel:
        from npu_jupyter._notebook.panel import panel

        return panel(self._config())

    def _cmd_code(self, args: argparse.Namespace) -> None:
        print(self._config().to_code(api="estimator" if args.estimator else "session"))

    def _cmd_save(self, args: argparse.Namespace) -> None:
        try:
            self._config().save(args.path)
        except (OSError, ValueError) as err:  # unwritable folder, a file where a folder should be, NUL in path
            reason = getattr(err, "strerror", None) or err
            raise UsageError(f"cannot save the NPU config to {args.path}: {reason}; nothing was written.") from None
        print(f"saved the NPU config to {args.path}")

    def _cmd_load(self, args: argparse.Namespace) -> None:
        from npu_jupyter._options.config import NpuConfig
        from npu_jupyter._options.errors import NpuConfigError

        try:
            loaded = NpuConfig.load(args.path)
        except (OSError, NpuConfigError) as err:
            raise UsageError(f"cannot load {args.path}: {err}; the config is unchanged.") from None
        self._config().reset(loaded.changed())
        print(f"loaded the NPU config from {args.path}")

    def _cmd_explain(self, args: argparse.Namespace) -> _Rendered:
        tf = require_tensorflow("running a %%npu cell")

        from npu_jupyter._plan.planner import plan

        fetch = str(args.fetch)
        graph = tf.compat.v1.get_default_graph()
        op_name = fetch.split(":", maxsplit=1)[0]
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
            graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except (KeyError, ValueError, TypeError) as err:
            raise UsageError(f"%npu explain {fetch}: {err}") from None
        result = plan(graph, self._config(), fetches=[fetch])
        if not result.fetches:  # the title says what was explained: "Plan of loss (...)"
            result.fetches = [fetch]
        return _Rendered(result, self.detail)

    def _cmd_adapter(self, args: argparse.Namespace) -> None:
        """``%npu adapter [emulate | off]``: the emulated npu_bridge surface on or off, or the status."""
        from npu_jupyter import adapter

        if args.action == "emulate":
            try:
                adapter.emulate_adapter()
            except RuntimeError as err:
                raise UsageError(f"%npu adapter emulate: {err}") from None
        elif args.action == "off":
            adapter.uninstall()
        print(adapter.status())

    def _cmd_help(self, args: argparse.Namespace) -> manual.Manual | None:
        """The manual (HTML in a notebook, text elsewhere), every option by group, or one subcommand's help."""
        if args.topic == "options":
            print(manual.options_help())
            return None
        if args.topic:
            print(subcommands.parser(args.topic).format_help(), end="")
            return None
        return the_manual()

    # -- cell magic: IPython's magic_arguments ---------------------------------------------------

    @cell_magic("npu")
    @magic_arguments(name="%npu")  # IPython's usage line adds a "%": `%%npu [--mix] ...`
    @argument("--mix", action="store_true", help="mixed computing on for this cell (mix_compile_mode=True)")
    @argument("--no-mix", action="store_true", help="mixed computing off for this cell (mix_compile_mode=False)")
    @argument(
        "--precision",
        metavar="MODE",
        help="precision_mode (or a precision_mode_v2 value such as mixed_float16) for this cell",
    )
    @argument("--dump", metavar="DIR", help="enable_dump=True, dump_path=DIR (the folder is created when missing)")
    @argument("--dump-step", metavar="STEPS", help="dump_step, e.g. '0|5|10' or '0|3-5|10'")
    @argument("--dump-mode", metavar="MODE", help="dump_mode: input, output or all")
    @argument(
        "--profile",
        metavar="DIR",
        nargs="?",
        const="",
        help="profiling_mode=True; profiling_options output=DIR when given",
    )
    @argument(
        "--set",
        metavar="KEY=VALUE",
        nargs="+",
        action="append",
        default=[],
        help="any other option, typed by the option catalogue (repeatable)",
    )
    @argument(
        "--reference",
        action="store_true",
        help="measure drift: compare every op with a float32 reference (sessions and traced functions)",
    )
    @argument("--quiet", action="store_true", help="do not render the run reports after the cell")
    @argument(
        "--verbose",
        action="store_true",
        help="let TensorFlow's own C++ log lines (profiler, oneDNN, CUDA probes) into the cell's output",
    )
    def npu_cell(self, line: str, cell: str) -> object:
        """Run this cell on NPU sessions with these options for this cell only (`%npu help`: the manual).

        The session config is not changed. One report per distinct run shows after the cell.
        """
        from npu_jupyter._notebook.cell_run import CellRun
        from npu_jupyter._notebook.quiet import quiet_tensorflow
        from npu_jupyter._notebook.state import set_last_reports

        snapshot = self._config().snapshot()  # what the cell runs with, whatever changes meanwhile
        flags = CELL_PARSER.parse(line, snapshot)
        # The checks may import TensorFlow for the first time: its start-up lines are logs too.
        with quiet_tensorflow(enabled=not (flags.verbose or self.verbose)):
            run = CellRun(self._shell(), line, cell, snapshot, flags, self.backend)
            for note in run.notes:
                print(note)
            shown_before = getattr(sys, "last_value", None)
            result = run.run()
            set_last_reports(result.reports)
            # `%run script.py` in the cell shows the script's error itself (IPython's showtraceback sets
            # sys.last_value) and does not raise it: the cell failed all the same
            failed = result.error is not None or getattr(sys, "last_value", None) is not shown_before
            if self.autodisplay and not flags.quiet:
                self._show_reports(result.reports, result.made_sessions, failed, line.strip())
        if result.error is not None:  # raised after its reports: the runs before an error often explain it
            raise result.error
        return result.value

    def _show_reports(self, reports: list[RunReport], made_sessions: bool, failed: bool, line: str = "") -> None:
        """One rendered report per distinct run, or a line saying why there is none.

        The runs a person came for come first; variable-initialiser runs follow as one line, and a
        warning repeated by several reports is shown in full once (``run_reports``).
        """
        from IPython.display import display

        from npu_jupyter._display.mime import mimebundle
        from npu_jupyter._notebook.run_reports import arrange, dedupe_warnings, initializer_note

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

    def _config(self) -> NpuConfig:
        from npu_jupyter._notebook.state import current_config

        return current_config()

    def _shell(self) -> InteractiveShell:
        """The shell the magics were registered with (IPython always gives one)."""
        if self.shell is None:
            raise UsageError("%%npu runs in an IPython shell; these magics were made without one.")
        return self.shell

    def _update(self, values: dict[str, object], usage: str) -> None:
        """Apply ``values`` atomically; a config error becomes a UsageError and changes nothing."""
        from npu_jupyter._options.errors import NpuConfigError

        config = self._config()
        try:
            config.update(values)
        except NpuConfigError as err:
            raise UsageError(f"{err}\nNothing was changed.\n{usage}") from None
        # A combination can be wrong while a user is half-way through a change, so it is applied, but
        # said at once rather than when a session refuses it later.
        for problem in config.problems():
            print(f"%npu: not valid yet: {problem}")


#: The ``%%npu`` line's parser, read from the cell magic's decorators.
CELL_PARSER = CellParser(NpuMagics.npu_cell)


def _open_device_config() -> NpuConfig | None:
    """The options an emulated ``npu_device`` was opened with, if one is open (they reach traced functions)."""
    from npu_jupyter import adapter

    if not adapter.is_emulated():
        return None
    from npu_jupyter.adapter.tf2 import device as tf2_device

    handle = tf2_device.global_npu_ctx()
    return None if handle is None else handle.config


def the_manual() -> manual.Manual:
    """``%npu help``: read from the subcommands' parsers, the cell magic's parser and the settings."""
    return manual.Manual(subcommands.SUBCOMMANDS, CELL_PARSER, NpuMagics.class_traits(config=True))


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


class _Rendered:
    """A plan shown at the magics' detail level (``%npu explain``)."""

    def __init__(self, obj: Plan, detail: str) -> None:
        self.obj = obj
        self.detail = detail

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, object]:
        from npu_jupyter._display.mime import mimebundle

        return mimebundle(self.obj, detail=self.detail)


def _document() -> None:
    """``%npu?`` shows the same manual as ``%npu help``, as text (``%%npu?`` shows the cell's parser)."""
    NpuMagics.npu.__doc__ = str(the_manual())


_document()


def load_ipython_extension(ip: InteractiveShell) -> None:
    """Register ``%npu``/``%%npu`` and make ``%config NpuMagics`` work; idempotent."""
    from npu_jupyter._notebook.legacy_keras import choose_keras_2

    magics = NpuMagics(shell=ip)
    note = choose_keras_2(magics.legacy_keras)  # before anything can import TensorFlow
    if note:
        print(note)
    _stop_quiet_startup(ip)
    magics.startup.register()
    ip.register_magics(magics)
    # Magics.__init__ appended the new instance to the configurables; an earlier load's goes.
    for old in [c for c in ip.configurables if isinstance(c, NpuMagics) and c is not magics]:
        ip.configurables.remove(old)


def _stop_quiet_startup(ip: InteractiveShell) -> None:
    """The quiet start-up of an earlier load (``%reload_ext``) stops; one at a time."""
    for old in ip.configurables:
        if isinstance(old, NpuMagics):
            old.startup.unregister()


def unload_ipython_extension(ip: InteractiveShell) -> None:
    """Remove the magics and the configurable (the session config itself is kept)."""
    for kind in ("line", "cell"):
        ip.magics_manager.magics[kind].pop("npu", None)
    ip.magics_manager.registry.pop("NpuMagics", None)
    _stop_quiet_startup(ip)
    ip.configurables = [c for c in ip.configurables if not isinstance(c, NpuMagics)]
