"""What ``%npu`` shows: the options set in a config, its problems and warnings.

Kept apart from the report renderers because it describes a config, not a plan. Values and messages
are user data and are escaped; there are no scripts and colours come from the theme.
"""

from __future__ import annotations

from html import escape
from typing import Any

_NOTE = "border-left:3px solid {color};padding:2px 8px;margin:4px 0"
_CELL = "text-align:left;vertical-align:top;padding:1px 6px"


class ConfigView:
    """A rendered snapshot of a config (changed options, ``validate()`` problems, warnings).

    It copies what it shows when created, so a later edit of the config does not change an output
    already in the notebook.
    """

    def __init__(self, config: Any, title: str = "NPU session config") -> None:
        self.title = title
        self.changed = dict(sorted(config.changed().items()))
        self.problems = list(config.problems())
        self.warnings = list(config.warnings())

    def __repr__(self) -> str:
        lines = [f"{self.title}:"]
        if self.changed:
            lines += [f"  {key} = {value!r}" for key, value in self.changed.items()]
        else:
            lines.append("  (no options set: the adapter's defaults apply)")
        lines += [f"problem: {p}" for p in self.problems]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [
            (
                f'<div class="npu-config" style="color:inherit;background:transparent">'
                f'<div style="font-weight:600">{escape(self.title)}</div>'
            )
        ]
        if self.changed:
            rows = "".join(
                f'<tr><td style="{_CELL}"><code>{escape(key)}</code></td>'
                f'<td style="{_CELL}"><code>{escape(repr(value))}</code></td></tr>'
                for key, value in self.changed.items()
            )
            parts.append(f"<table>{rows}</table>")
        else:
            parts.append("<div><em>No options set: the adapter's defaults apply.</em></div>")
        color_error = "var(--jp-error-color1,#d32f2f)"
        color_warn = "var(--jp-warn-color1,#f57c00)"
        parts += [
            f'<div style="{_NOTE.format(color=color_error)}"><strong>Problem:</strong> {escape(p)}</div>'
            for p in self.problems
        ]
        parts += [
            f'<div style="{_NOTE.format(color=color_warn)}"><strong>Warning:</strong> {escape(w)}</div>'
            for w in self.warnings
        ]
        parts.append("</div>")
        return "".join(parts)
