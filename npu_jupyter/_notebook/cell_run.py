"""One ``%%npu`` cell's run: checked whole before it starts, then run, its reports returned.

The magic parses the line and shows what comes back; this object does what lies between, and displays
nothing, so the run can be tested (and reused) without a frontend. Everything that can be refused is
checked when the object is built (the merged options, the run-time settings such as a writable
``dump_path``, the cell's syntax): a refused cell runs nothing and leaves no folder behind.
:meth:`CellRun.run` then runs the body with the cell's ``tf.compat.v1`` sessions swapped
(``session_swap``) and its traced functions emulated (``cell_functions``), and returns the reports of
every run, also when the body raised: the runs before an error (an overflow, say) often explain it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell

    from npu_jupyter._notebook.cell_options import CellFlags
    from npu_jupyter._options.snapshot import ConfigSnapshot
    from npu_jupyter._runtime.report import RunReport


@dataclass
class CellResult:
    """What a cell's run produced: its value, one report per distinct run, and whether it raised."""

    value: object = None
    reports: list[RunReport] = field(default_factory=list)
    made_sessions: bool = False  # it created sessions (that may have run nothing)
    error: BaseException | None = None  # what the body raised; the magic raises it after the reports


class CellRun:
    """A ``%%npu`` cell, checked: ``CellRun(...)`` raises UsageError or is ready to :meth:`run`.

    Parameters
    ----------
    shell : InteractiveShell
        The shell whose user namespace the body runs in.
    line, cell : str
        The ``%%npu`` line (quoted by refusals and tracebacks) and the cell's body.
    snapshot : ConfigSnapshot
        The session config when the cell started (the panel may change the shared config while the
        cell runs; the cell does not see that).
    flags : CellFlags
        The parsed line.
    backend : str
        ``"auto"``, ``"emulator"`` or ``"ascend"``.

    """

    def __init__(
        self, shell: InteractiveShell, line: str, cell: str, snapshot: ConfigSnapshot, flags: CellFlags, backend: str
    ) -> None:
        from npu_jupyter._notebook.cell_code import CellCode
        from npu_jupyter._notebook.cell_functions import emulator_backend

        self.snapshot = snapshot
        self.flags = flags
        self.backend = backend
        self.config = _checked_config(line, snapshot, flags.overrides)
        self.code = CellCode(shell, line, cell)
        #: What the caller should say before the run (the magic prints them).
        self.notes: list[str] = []
        if flags.reference and not emulator_backend(backend):
            self.notes.append(
                "%%npu --reference: drift against float32 is measured by the emulator only; on the ascend "
                "backend the real adapter runs this cell and nothing is compared."
            )

    def run(self) -> CellResult:
        """Run the body with sessions swapped and traced functions emulated; every report is returned.

        An exception of the body (a KeyboardInterrupt too) is returned in :attr:`CellResult.error`
        with the reports of the runs before it, for the caller to show them and then raise it.
        """
        from npu_jupyter._notebook.cell_functions import CellFunctions, emulated_functions
        from npu_jupyter._notebook.run_reports import cell_reports
        from npu_jupyter._notebook.session_swap import CellSessions, swapped_sessions

        cell_sessions = CellSessions(
            self.snapshot, self.flags.overrides, self.backend, reference=self.flags.reference, cell_config=self.config
        )
        functions = CellFunctions()
        result = CellResult()
        try:
            # TF1 sessions are swapped; TF2 code's traced functions are emulated (emulator backend).
            with swapped_sessions(cell_sessions), emulated_functions(
                self.config, self.backend, reference=self.flags.reference, layers=(self.snapshot, self.flags.overrides)
            ) as functions:
                result.value = self.code.run()
        except BaseException as err:  # noqa: BLE001 - handed back whole, re-raised by the caller
            result.error = err
        result.reports = cell_reports(cell_sessions.sessions) + functions.reports
        result.made_sessions = bool(cell_sessions.sessions)
        return result


def _checked_config(line: str, snapshot: ConfigSnapshot, overrides: dict[str, object]) -> ConfigSnapshot:
    """The cell's config, validated with the run-time checks; a refusal is one UsageError.

    The run-time checks too (``dump_path`` must be a writable directory, profiling output...), so a
    typo in ``--dump`` fails here rather than halfway through the cell. A refused cell leaves no
    folder behind.
    """
    from npu_jupyter._notebook.cell_options import merged
    from npu_jupyter._options.errors import NpuConfigError
    from npu_jupyter._runtime.observe.run_settings import read_run_settings

    created = None
    try:
        cell_config = merged(snapshot, overrides)
        cell_config.validate()  # the cell's one check: its sessions and functions run on this snapshot
        created = _make_dump_folder(overrides)
        read_run_settings(cell_config)
    except (NpuConfigError, ValueError, OSError) as err:
        if created is not None:
            with contextlib.suppress(OSError):
                created.rmdir()
        raise UsageError(f"%%npu {line.strip()}: {err}\nThe cell was not run.") from None
    return cell_config


def _make_dump_folder(overrides: dict[str, object]) -> Path | None:
    """Create the cell's dump folder as ``--profile DIR`` creates its own; the created path, or None.

    Only a cell's own ``dump_path`` (``--dump DIR``): the session-wide option keeps the adapter's rule.
    """
    path = overrides.get("dump_path")
    if not overrides.get("enable_dump") or not path:
        return None
    folder = Path(str(path)).expanduser()
    if folder.exists():
        return None
    folder.mkdir(parents=True)
    return folder
