"""``%npu help``: the magics' manual for a reader, as HTML in a notebook and as aligned text elsewhere.

It used to be the magic's docstring printed raw (RST double backticks, the first flag indented and the
rest at column 0). The manual is now read from the parsers, through their public API: a row per
``%npu`` subcommand from its parser's usage and description (``subcommands.py``), a row per ``%%npu``
flag from the cell magic's ``@argument`` declarations (``cell_options.CellParser``), and the display
settings from the ``NpuMagics`` traits. Prose uses single backticks for code: ``<code>`` in HTML, kept
in text.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from IPython.lib.pretty import RepresentationPrinter
    from traitlets import TraitType

    from npu_jupyter._notebook.cell_options import CellParser
    from npu_jupyter._notebook.subcommands import CommandParser

    Rows = list[tuple[str, str]]  # (usage, what it does)
    Section = tuple[str, Rows, tuple[str, ...]]  # (title, rows, paragraphs)

WIDTH = 100

_KEYS = (
    "KEY is a `custom_op.parameter_map` key (`precision_mode`, `mix_compile_mode`, `dump_path`, ...). "
    "VALUE is typed by the option: true/false (also 1/0, yes/no, on/off) for switches, integers for counts, "
    'text otherwise; quote text with spaces: `%npu set dump_path="/tmp/my dumps" enable_dump=true`.'
)
_SESSIONS = (
    "Every `tf.compat.v1.Session` / `InteractiveSession` the cell creates becomes an NPU session "
    "(`npu_jupyter.session`). Its options are, highest first: the cell's flags, the `NpuOptimizer` entries "
    "of a `ConfigProto` the cell passes to the session, then the session config. After the cell, one "
    "report per distinct run renders (repeated runs of the same fetches collapse into one report with a "
    "step count). A bad flag or value is reported before the cell runs, and then nothing runs and "
    "nothing changes."
)
_FUNCTIONS = (
    "Traced functions the cell calls (Keras `fit`/`evaluate`/`predict`, `tf.function` loops) run in the "
    "decided precisions on the emulator with TensorFlow 2.14 or later, one report per function. Eager ops "
    "are not affected by the flags, and the cell says so."
)
_FOLDERS = (
    "`--dump DIR` and `--profile DIR` create their folders when missing (`%npu set dump_path=...` keeps "
    "the adapter's rule: the folder must exist). TensorFlow's C++ log lines stay out of the cell's output "
    "unless `--verbose`."
)
_CELL = (_SESSIONS, _FUNCTIONS, _FOLDERS)
_LINE_HELP = "`%npu SUBCOMMAND --help` (or `%npu help SUBCOMMAND`) shows a subcommand's arguments; `%%npu?` the flags."


class Manual:
    """The manual, rendered by the frontend: HTML in a notebook, text in a terminal or ``print``.

    Parameters
    ----------
    commands : sequence of CommandParser
        The ``%npu`` subcommands' parsers, in the order to list them.
    cell : CellParser
        The ``%%npu`` line's parser.
    settings : dict
        The magics' configurable traits by name.

    """

    def __init__(
        self, commands: Sequence[CommandParser], cell: CellParser, settings: Mapping[str, TraitType[object, object]]
    ) -> None:
        self.sections: list[Section] = _sections(commands, cell, settings)

    def _repr_html_(self) -> str:
        parts = ['<div class="npu-help" style="max-width:100%;overflow-wrap:anywhere">']
        for title, rows, paragraphs in self.sections:
            parts.append(f'<h4 style="margin:.8em 0 .3em">{_code(title)}</h4>')
            if rows:
                parts.append('<table style="border-collapse:collapse;table-layout:auto">')
                parts.extend(
                    f'<tr><td style="text-align:left;white-space:nowrap;vertical-align:top;padding:1px 12px 1px 0">'
                    f"<code>{escape(left)}</code></td>"
                    f'<td style="text-align:left;vertical-align:top;padding:1px 0">{_code(right)}</td></tr>'
                    for left, right in rows
                )
                parts.append("</table>")
            parts.extend(f'<p style="margin:.4em 0">{_code(p)}</p>' for p in paragraphs)
        parts.append("</div>")
        return "".join(parts)

    def __str__(self) -> str:
        out: list[str] = []
        for title, rows, paragraphs in self.sections:
            out.extend(["", title] if out else [title])
            column = min(max((len(left) for left, _ in rows), default=0) + 4, 40)
            for left, right in rows:
                out.extend(_row(left, right, column))
            for paragraph in paragraphs:
                out.append("")
                out.extend(textwrap.wrap(paragraph, WIDTH, initial_indent="  ", subsequent_indent="  "))
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: RepresentationPrinter, cycle: bool) -> None:
        printer.text(str(self))


def _sections(
    commands: Sequence[CommandParser], cell: CellParser, settings: Mapping[str, TraitType[object, object]]
) -> list[Section]:
    """(title, rows of (usage, text), paragraphs) for the line magic, the cell magic and the settings."""
    lines = [(parser.usage_text(), parser.description or "") for parser in commands]
    flags = [(cell.flag_usage(name), cell.flag_help(name)) for name in cell.names()]
    shown = [(f"{name} = {trait.default_value!r}", str(trait.help)) for name, trait in sorted(settings.items())]
    return [
        ("Line magic `%npu`: the session-wide config, shared with `npu_jupyter.panel()`", lines, (_KEYS, _LINE_HELP)),
        ("Cell magic `%%npu`: this cell only; the session config is not changed", [(cell.usage, "")], ()),
        ("Flags", flags, _CELL),
        (
            "Display settings: `%config NpuMagics.<name> = value` (or `c.NpuMagics.<name>` in ipython_config.py)",
            shown,
            (),
        ),
    ]


def options_help() -> str:
    """``%npu help options``: every option by group: key, proto field type, allowed values, one line of doc."""
    from npu_jupyter._options import catalogue

    lines = []
    for group in catalogue.groups():
        lines.append(f"[{group}]")
        for spec in catalogue.specs_in_group(group):
            lines.append(f"  {spec.key} ({spec.allowed_text()}): {spec.doc}")
    return "\n".join(lines)


def _row(left: str, right: str, column: int) -> list[str]:
    """``  usage    text`` with the text wrapped under itself; a long usage gets the text on the next line."""
    if not right:
        return textwrap.wrap(left, WIDTH, initial_indent="  ", subsequent_indent="      ")
    head = f"  {left}".ljust(column)
    if len(head) > column:
        return [
            head.rstrip(),
            *textwrap.wrap(right, WIDTH, initial_indent=" " * column, subsequent_indent=" " * column),
        ]
    return textwrap.wrap(right, WIDTH, initial_indent=head, subsequent_indent=" " * column)


def _code(text: str) -> str:
    """Escaped text with `single backticks` as ``<code>``."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))
