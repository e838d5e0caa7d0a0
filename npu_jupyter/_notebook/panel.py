"""``npu_jupyter.panel()``: an ipywidgets panel bound two-way to an NpuConfig.

Every control is generated from the option catalogue (one entry per ``parameter_map`` key), so the
panel can never offer a value the config would refuse or miss an option the config has. A switch or an
option with a fixed list of values is a drop-down whose first entry is "unset" (the adapter default
applies); counts and text are text boxes where an empty box means unset.

Binding: the widget writes to the config through ``config.update`` (checked, atomic); a value the config
refuses is shown next to the control and the config keeps its value. The config notifies the panel of
every change (from ``%npu set``, another panel, code), so the panel always shows the real state. The
cross-option problems of ``validate()``, the warnings and the equivalent code are refreshed on every
change.

With ~110 options, building every control up front costs more than the user waits for, so only the
first tab is built at once; the others are built the first time they are selected.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Callable

import ipywidgets as widgets
from ipywidgets.widgets.widget_description import DescriptionStyle
from ipywidgets.widgets.widget_string import HTMLStyle, TextStyle

from npu_jupyter._options import catalogue
from npu_jupyter._options.catalogue import OptionSpec

if TYPE_CHECKING:  # pragma: no cover
    from traitlets.utils.bunch import Bunch

    from npu_jupyter._notebook.profiling_form import ProfilingForm
    from npu_jupyter._options.config import NpuConfig

# (tab title, catalogue groups shown in it); the last tab collects every group not named before it.
_TABS = (
    ("Mixed computing", ("mixed computing",)),
    ("Precision", ("precision",)),
    ("Dump", ("dump",)),
    ("Profiling", ("profiling",)),
)
_OTHER = "All other options"
_UNSET_LABEL = "(unset)"
_ERROR_STYLE = "color:var(--jp-error-color1,#d32f2f)"
# Wide enough for the longest key (47 characters, experimental_logical_device_cluster_deploy_mode) at
# JupyterLab's 13px UI font; "(deprecated)"/"(ignored)" go to the note under the control, not the label.
_DESCRIPTION_WIDTH = "340px"
_CONTROL_WIDTH = "680px"
_NOTE_STYLE = "opacity:.75;font-size:.92em;line-height:1.3"


def panel(config: NpuConfig | None = None) -> NpuPanel:
    """A widget panel editing ``config`` (default: the notebook's shared ``current_config()``)."""
    if config is None:
        from npu_jupyter._notebook.state import current_config

        config = current_config()
    return NpuPanel(config)


class NpuPanel(widgets.VBox):
    """Tabs of option controls, a live list of problems and warnings, and the equivalent code.

    Parameters
    ----------
    config : NpuConfig
        The config to edit. The panel observes it; ``close()`` stops that.

    """

    def __init__(self, config: NpuConfig) -> None:
        self.config = config
        self.controls: dict[str, _Control] = {}
        self.profiling_form: ProfilingForm | None = None  # built with the Profiling tab
        # One style and one layout shared by every control: each is a widget of its own, and ~110 of
        # each would double the panel's build time for nothing.
        self._looks = {
            "choice_style": DescriptionStyle(description_width=_DESCRIPTION_WIDTH),
            "text_style": TextStyle(description_width=_DESCRIPTION_WIDTH),
            "layout": widgets.Layout(width=_CONTROL_WIDTH),
            "plain": widgets.Layout(),
            # Under the value, at most the control's width and never past the output area's right edge:
            # a fixed 680px after the 340px indent ran out of a 1400px window with the file browser open
            # and cut precision_mode's notes off mid-sentence; they wrap now.
            "note": widgets.Layout(
                margin=f"0 0 4px {_DESCRIPTION_WIDTH}",
                width=f"calc(100% - {_DESCRIPTION_WIDTH})",
                max_width=_CONTROL_WIDTH,
            ),
            "row": widgets.Layout(width="100%"),
            "html_style": HTMLStyle(),
        }
        self._pages = _pages()
        self._built: set[int] = set()
        self.tabs = widgets.Tab(children=[widgets.VBox() for _ in self._pages])
        self.tabs.titles = tuple(title for title, _ in self._pages)
        self.status = widgets.HTML()
        self.code = widgets.HTML()
        code_box = widgets.Accordion(children=[self.code], titles=("Equivalent code",))
        super().__init__(children=[self.tabs, self.status, code_box])
        self.tabs.observe(self._on_tab, names="selected_index")
        self._build_page(0)
        config.observe(self._on_config, names=catalogue.keys())
        self._observing = True
        self._refresh()

    def control(self, key: str) -> widgets.Widget:
        """The widget of option ``key``, building its tab if it was not shown yet."""
        if key not in self.controls:
            group = catalogue.spec(key).group
            for index, (_, groups) in enumerate(self._pages):
                if group in groups:
                    self._build_page(index)
                    content = self.tabs.children[index].children[0]
                    if isinstance(content, _LazyAccordion):
                        content.open_group(group)
        return self.controls[key].widget

    def error_text(self, key: str) -> str:
        """The refusal shown next to option ``key`` ("" when its last input was accepted)."""
        self.control(key)
        return self.controls[key].error

    def close(self) -> None:
        """Stop following the config and close the widgets (safe to call twice)."""
        if getattr(self, "_observing", False):
            self._observing = False
            self.config.unobserve(self._on_config, names=catalogue.keys())
        super().close()

    # -- building ----------------------------------------------------------------------------

    def _on_tab(self, change: Bunch) -> None:
        if change["new"] is not None:
            self._build_page(change["new"])

    def _build_page(self, index: int) -> None:
        if index in self._built:
            return
        self._built.add(index)
        _title, groups = self._pages[index]
        if len(groups) == 1:
            content: widgets.Widget = self._group_box(groups[0])
        else:  # the last tab: one lazily built section per remaining group
            content = _LazyAccordion(groups, self._group_box)
        self.tabs.children[index].children = [content]

    def _group_box(self, group: str) -> widgets.VBox:
        rows = []
        for spec in catalogue.specs_in_group(group):
            control = _Control(spec, self.config, self._looks)
            self.controls[spec.key] = control
            rows.append(control.row)
        if group == "profiling":
            from npu_jupyter._notebook.profiling_form import ProfilingForm

            self.profiling_form = ProfilingForm(self.config)
            rows.append(self.profiling_form)
        return widgets.VBox(rows)

    # -- config -> panel ---------------------------------------------------------------------

    def _on_config(self, change: Bunch) -> None:
        control = self.controls.get(change["name"])
        if control is not None:
            control.show(change["new"])
        if change["name"] == "profiling_options" and self.profiling_form is not None:
            self.profiling_form.show(change["new"])
        self._refresh()

    def _refresh(self) -> None:
        """Problems, warnings and code for the config as it is now."""
        problems = self.config.problems()
        warnings = self.config.warnings()
        lines = [f'<div style="{_ERROR_STYLE}">✖ {escape(p)}</div>' for p in problems]
        lines += [f'<div style="color:var(--jp-warn-color1,#f57c00)">⚠ {escape(w)}</div>' for w in warnings]
        if not lines:
            count = len(self.config.changed())
            lines = [f"<div>✔ {count} option{'s' if count != 1 else ''} set, no problems.</div>"]
        self.status.value = "".join(lines)
        try:
            code = self.config.to_code()
        except Exception as err:  # noqa: BLE001 - the panel must stay usable; show why there is no code
            code = f"# no code while the config has problems: {err}"
        self.code.value = f'<pre style="margin:0">{escape(code)}</pre>'


class _LazyAccordion(widgets.Accordion):
    """One section per group; a section's controls are built when it is first opened."""

    def __init__(self, groups: tuple[str, ...], build: Callable[[str], widgets.Widget]) -> None:
        super().__init__(children=[widgets.VBox() for _ in groups])
        self.titles = tuple(g.capitalize() for g in groups)
        self._groups = groups
        self._build = build
        self._done: set[int] = set()
        self.observe(self._on_open, names="selected_index")

    def open_group(self, group: str) -> None:
        """Build the section of ``group`` (without changing which section is shown)."""
        self._open(self._groups.index(group))

    def _on_open(self, change: Bunch) -> None:
        if change["new"] is not None:
            self._open(change["new"])

    def _open(self, index: int) -> None:
        if index not in self._done:
            self._done.add(index)
            self.children[index].children = [self._build(self._groups[index])]


class _Control:
    """The widget of one option and its binding to the config."""

    def __init__(self, spec: OptionSpec, config: NpuConfig, looks: dict[str, widgets.Widget]) -> None:
        self.spec = spec
        self.config = config
        self.error = ""
        self._syncing = False
        label = spec.key  # the whole key fits; its status is said in the note below the control
        layout = looks["layout"]
        tooltip = _tooltip(spec)
        self._choices = _choices(spec)
        if self._choices is not None:
            default = "" if spec.default is None else f" — default {spec.default!r}"
            options = [_UNSET_LABEL + default] + [str(c) for c in self._choices]
            self.widget: widgets.Widget = widgets.Dropdown(
                options=options, description=label, style=looks["choice_style"], layout=layout, tooltip=tooltip
            )
            self.widget.observe(self._on_widget, names="index")
        else:
            placeholder = "unset" + ("" if spec.default in (None, "") else f" (default {spec.default})")
            self.widget = widgets.Text(
                description=label,
                placeholder=placeholder,
                continuous_update=False,
                style=looks["text_style"],
                layout=layout,
                tooltip=tooltip,
            )
            self.widget.observe(self._on_widget, names="value")
        self._message = widgets.HTML(layout=looks["plain"], style=looks["html_style"])
        self.row: widgets.Widget = widgets.HBox([self.widget, self._message], layout=looks["plain"])
        self._status = _status_text(spec)
        self._notes = spec.choice_notes
        # Only options with something to say get a note widget: ~110 empty ones would slow the build.
        self.note: widgets.HTML | None = None
        if self._status or self._notes:
            self.note = widgets.HTML(layout=looks["note"], style=looks["html_style"])
            self.row = widgets.VBox([self.row, self.note], layout=looks["row"])
        self.show(getattr(config, spec.key))

    def show(self, value: object) -> None:
        """Put the config's value in the widget (without writing it back) and clear any refusal."""
        error = ""
        self._syncing = True
        try:
            if self._choices is None:
                self.widget.value = "" if value is None else str(value)
            elif value is None or value in self._choices:
                self.widget.index = 0 if value is None else 1 + self._choices.index(value)
            else:  # imported from a proto as the adapter reads it, though not an allowed value
                self.widget.index = 0
                error = f"current value {value!r} is not allowed; choose {self.spec.allowed_text()}"
        finally:
            self._syncing = False
        self._set_error(error)
        self._show_note(value)

    def _show_note(self, value: object) -> None:
        """Deprecation/ignored status and what the selected value does, one line each."""
        if self.note is None:
            return
        lines = [self._status] if self._status else []
        if self._notes:
            text = self._notes.get("" if value is None else str(value))
            if text:
                lines.append(f"{'unset' if value is None else value}: {text}")
        self.note.value = "".join(f'<div style="{_NOTE_STYLE}">{escape(line)}</div>' for line in lines)

    def _on_widget(self, change: Bunch) -> None:
        if self._syncing:
            return
        from npu_jupyter._options.errors import NpuConfigError

        try:
            value = self._value_from_widget()
            self.config.update({self.spec.key: value})
        except NpuConfigError as err:
            self._set_error(str(err))
            return
        self._set_error("")

    def _value_from_widget(self) -> object:
        if self._choices is not None:
            index = self.widget.index
            return None if not index else self._choices[index - 1]
        text = self.widget.value
        if text.strip() == "":
            return None
        return catalogue.parse_text(self.spec.key, text)

    def _set_error(self, text: str) -> None:
        self.error = text
        self._message.value = f'<span style="{_ERROR_STYLE}">{escape(text)}</span>' if text else ""


def _choices(spec: OptionSpec) -> list[object] | None:
    """Values a drop-down offers: the option's choices, or True/False for a switch."""
    if spec.choices is not None:
        return list(spec.choices)
    if spec.field == "b":
        return [True, False]
    return None


def _status_text(spec: OptionSpec) -> str:
    """The note line for a deprecated or ignored option ("Deprecated: use op_precision_mode."), else ""."""
    if spec.deprecated:
        return "Deprecated" + (f": use {spec.deprecated_by}." if spec.deprecated_by else ".")
    if spec.ignored:
        return "Ignored: today's adapter does not read this option (kept so old configs load)."
    return ""


def _tooltip(spec: OptionSpec) -> str:
    parts = [spec.doc, f"Allowed: {spec.allowed_text()}."]
    if spec.deprecated_by:
        parts.append(f"Deprecated; use {spec.deprecated_by}.")
    if spec.adapter_note:
        parts.append(spec.adapter_note)
    return " ".join(p for p in parts if p)


def _pages() -> list[tuple[str, tuple[str, ...]]]:
    named = {group for _, groups in _TABS for group in groups}
    rest = tuple(g for g in catalogue.groups() if g not in named)
    return [*_TABS, (_OTHER, rest)]
