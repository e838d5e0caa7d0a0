"""The Profiling tab's form: the switches inside the ``profiling_options`` JSON as controls.

``profiling_options`` is one string option holding a JSON object; typing JSON into a text box is where
people make mistakes. This form edits the fields the emulator and most users touch (the list in
``_FIELDS``), reading what each accepts from the catalogue's ``profiling_option_keys`` table, and
writes the whole JSON back through ``config.update`` (so the config's own check still applies). Fields
not on the form are kept as they are.
"""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING

import ipywidgets as widgets

from npu_jupyter._options import catalogue

if TYPE_CHECKING:  # pragma: no cover
    from traitlets.utils.bunch import Bunch

    from npu_jupyter._options.config import NpuConfig

_FIELDS = ("output", "task_trace", "training_trace", "aicpu", "fp_point", "bp_point", "aic_metrics")
_UNSET = "(unset)"
_ERROR_STYLE = "color:var(--jp-error-color1,#d32f2f)"


class ProfilingForm(widgets.VBox):
    """Controls for the main ``profiling_options`` fields, bound to ``config.profiling_options``."""

    def __init__(self, config: NpuConfig) -> None:
        self.config = config
        self.fields: dict[str, widgets.Widget] = {}
        self._syncing = False
        table = catalogue.profiling_option_keys()
        style = {"description_width": "230px"}
        layout = widgets.Layout(width="560px")
        for name in _FIELDS:
            info = table.get(name, {})
            if info.get("values"):
                control: widgets.Widget = widgets.Dropdown(
                    options=[_UNSET, *info["values"]],
                    description=f"  {name}",
                    style=style,
                    layout=layout,
                    tooltip=info.get("doc", ""),
                )
            else:
                control = widgets.Text(
                    description=f"  {name}",
                    placeholder=info.get("doc", "unset"),
                    continuous_update=False,
                    style=style,
                    layout=layout,
                )
            control.observe(self._on_field, names="value")
            self.fields[name] = control
        self.message = widgets.HTML()
        title = widgets.HTML("<em>profiling_options fields (written to the JSON above)</em>")
        super().__init__([title, *self.fields.values(), self.message])
        self.show(getattr(config, "profiling_options", None))

    def show(self, text: str | None) -> None:
        """Fill the fields from the option's JSON text (called when the config changes)."""
        from npu_jupyter._options.profiling import ProfilingOptionsError, profiling_fields

        try:
            values = profiling_fields(text)
        except ProfilingOptionsError as err:
            self.message.value = (
                f'<span style="{_ERROR_STYLE}">profiling_options is not a JSON object: {escape(str(err))}</span>'
            )
            return
        self._syncing = True
        try:
            for name, control in self.fields.items():
                value = values.get(name)
                if isinstance(control, widgets.Dropdown):
                    control.value = value if value in control.options else _UNSET
                else:
                    control.value = "" if value is None else str(value)
        finally:
            self._syncing = False
        self.message.value = ""

    def _on_field(self, change: Bunch) -> None:
        if self._syncing:
            return
        from npu_jupyter._options.errors import NpuConfigError
        from npu_jupyter._options.profiling import lenient_profiling_fields

        values = lenient_profiling_fields(getattr(self.config, "profiling_options", None))
        for name, control in self.fields.items():
            value = control.value
            if value in ("", _UNSET):
                values.pop(name, None)
            else:
                values[name] = value
        text = json.dumps(values, sort_keys=True) if values else None
        try:
            self.config.update({"profiling_options": text})
        except NpuConfigError as err:
            self.message.value = f'<span style="{_ERROR_STYLE}">{escape(str(err))}</span>'
            return
        self.message.value = ""
