"""An HTML table that fits the notebook cell: fixed layout, full width, text that wraps instead of clipping.

JupyterLab's rendered-HTML styles right-align every cell and let a wide table run past the cell's
right edge, where its last columns are cut off. Every table npu_jupyter writes as HTML (the comparison,
the sweep, the report's op tables) goes through :func:`fit_table`: the table takes the cell's width
(``table-layout:fixed``), names are left-aligned and wrap at any character (the full text is also the
cell's ``title``), numbers are right-aligned in columns sized for them. Inline styles only, colours
from the theme, so it reads the same in JupyterLab, VS Code, nbconvert and both themes.
"""

from __future__ import annotations

from html import escape
from typing import List, NamedTuple, Tuple

TABLE = (
    "table-layout:fixed;width:100%;border-collapse:collapse;margin:4px 0;font-size:inherit;"
    "color:inherit;background:transparent"
)
_PAD = "padding:1px 6px;vertical-align:top"
# Names break at any character (op names have no spaces); nothing spills into the next column.
_TEXT = f"{_PAD};text-align:left;white-space:normal;overflow-wrap:anywhere;overflow:hidden"
_NUMBER = f"{_PAD};text-align:right;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-variant-numeric:tabular-nums"
# Headers wrap onto a second line rather than being cut ("est. NPU ms/step" in a narrow column).
_HEAD = "border-bottom:1px solid var(--jp-border-color1,currentColor);font-weight:600;white-space:normal;overflow-wrap:normal;word-break:normal"
# Lab styles <code> with white-space:pre; inside a table cell it must wrap like the cell.
MONO = "font-family:var(--jp-code-font-family,monospace);white-space:normal;overflow-wrap:anywhere;word-break:break-all"
#: A problem row's background: a translucent red that reads on light and dark themes.
ALERT_ROW = "background:rgba(211,47,47,.14)"


class Column(NamedTuple):
    """One column: its header, CSS width (None: shares what the others leave), alignment, header tooltip."""

    label: str
    width: str | None = None
    numeric: bool = False
    title: str = ""


class Cell(NamedTuple):
    """One cell's HTML (already escaped) and the full text shown on hover ("" for none)."""

    html: str
    title: str = ""


def text_cell(text: str, *, mono: bool = False) -> Cell:
    """A cell holding user text (op name, reason), escaped; the full text is its tooltip too."""
    body = escape(text)
    if mono:
        body = f'<code style="{MONO};background:transparent">{body}</code>'
    return Cell(body, text)


class Note(NamedTuple):
    """A line across the whole table under a row (why the adapter refuses a mode), already escaped."""

    html: str
    style: str = ""


Row = Tuple[List[Cell], str]  # the cells and an extra row style ("" for none); typing names: runs on 3.7


def fit_table(columns: list[Column], rows: list[Row | Note]) -> str:
    """``<table>`` of ``rows`` under ``columns``, fitted to the cell width."""
    group = "".join(f'<col style="width:{c.width}">' if c.width else "<col>" for c in columns)
    head = "".join(
        f"<th{_style(_NUMBER if c.numeric else _TEXT, _HEAD)}{_title(c.title)}>{escape(c.label)}</th>" for c in columns
    )
    body = []
    for row in rows:
        if isinstance(row, Note):
            body.append(f'<tr{_style(row.style)}><td colspan="{len(columns)}"{_style(_TEXT)}>{row.html}</td></tr>')
            continue
        cells, style = row
        tds = "".join(
            f"<td{_style(_NUMBER if col.numeric else _TEXT)}{_title(cell.title)}>{cell.html}</td>"
            for col, cell in zip(columns, cells)
        )
        body.append(f"<tr{_style(style)}>{tds}</tr>")
    return (
        f'<table style="{TABLE}"><colgroup>{group}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _style(*parts: str) -> str:
    joined = ";".join(p for p in parts if p)
    return f' style="{joined}"' if joined else ""


def _title(text: str) -> str:
    return f' title="{escape(text, quote=True)}"' if text else ""
