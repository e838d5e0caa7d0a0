"""What ``%npu`` shows: the options set in a config, which adapter reads each, its problems and warnings.

Each option says which side of the Ascend adapter reads it: the TF1 adapter (``npu_bridge``, session
config or NPURunConfig), the TF2 adapter (``npu_device.global_options()``, under the attribute path it
has there), or both. An option only one side reads does nothing on the other, which is what a user
moving a script between TF1 and TF2 needs to see.

Kept apart from the report renderers because it describes a config, not a plan. Values and messages
are user data and are escaped; there are no scripts and colours come from the theme.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from npu_jupyter._options.tf2 import sides, tf2_path

if TYPE_CHECKING:
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._options.snapshot import ConfigSnapshot

_NOTE = "border-left:3px solid {color};padding:2px 8px;margin:4px 0"
_CELL = "text-align:left;vertical-align:top;padding:1px 6px"
DEVICE_TITLE = (
    "npu_device opened by your code with (traced functions run under these; in a %%npu cell over the "
    "session config, the cell's flags winning)"
)


class ConfigView:
    """A rendered snapshot of a config (changed options, ``validate()`` problems, warnings).

    It copies what it shows when created, so a later edit of the config does not change an output
    already in the notebook.
    """

    def __init__(
        self,
        config: NpuConfig | ConfigSnapshot,
        title: str = "NPU session config",
        *,
        device: NpuConfig | None = None,
    ) -> None:
        self.title = title
        self.changed = dict(sorted(config.changed().items()))
        self.read_by = {key: read_by(key) for key in self.changed}
        self.problems = list(config.problems())
        self.warnings = list(config.warnings())
        # the options an open (emulated) npu_device read at open(): traced functions run under them too
        self.device = None if device is None else dict(sorted(device.changed().items()))

    def __repr__(self) -> str:
        lines = [f"{self.title}:"]
        if self.changed:
            lines += [f"  {key} = {value!r}  [{self.read_by[key]}]" for key, value in self.changed.items()]
        else:
            lines.append(f"  ({self._none_set()})")
        if self.device is not None:
            lines.append(f"{DEVICE_TITLE}:")
            lines += [f"  {key} = {value!r}" for key, value in self.device.items()] or ["  (no options set)"]
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
                f'<td style="{_CELL}"><code>{escape(repr(value))}</code></td>'
                f'<td style="{_CELL}">{escape(self.read_by[key])}</td></tr>'
                for key, value in self.changed.items()
            )
            head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("option", "value", "read by"))
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        else:
            parts.append(f"<div><em>{escape(self._none_set().capitalize())}.</em></div>")
        if self.device is not None:
            items = "".join(
                f"<li><code>{escape(key)} = {escape(repr(value))}</code></li>" for key, value in self.device.items()
            )
            shown = f"<ul>{items}</ul>" if items else "<div><em>No options set.</em></div>"
            parts.append(f'<div style="font-weight:600">{escape(DEVICE_TITLE)}</div>{shown}')
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

    def _none_set(self) -> str:
        """What an empty session config means: with a device open, its options still reach traced functions."""
        if self.device:
            return "no session options set: sessions run with the adapter's defaults"
        return "no options set: the adapter's defaults apply"


def read_by(key: str) -> str:
    """Which adapter side reads option ``key``, e.g. "TF1 npu_bridge + TF2 npu_device (precision_mode)"."""
    side = sides(key)
    tf1 = "TF1 npu_bridge" if side["tf1"] else ""
    tf2 = f"TF2 npu_device ({tf2_path(key)})" if side["tf2"] else ""
    if tf1 and tf2:
        return f"{tf1} + {tf2}"
    if tf1:
        return f"{tf1} only; npu_device does not read it"
    if tf2:
        return f"{tf2} only; npu_bridge does not read it"
    return "neither adapter reads it (recorded by this package only)"
