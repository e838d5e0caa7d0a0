"""The widget panel: generated from the catalogue, bound both ways to the config, live problems and code."""

from __future__ import annotations

from npu_jupyter._notebook.panel import panel
from npu_jupyter._options import catalogue
from npu_jupyter._options.config import NpuConfig


def test_panel_has_the_four_named_tabs_then_all_other_options():
    p = panel(NpuConfig())
    assert p.tabs.titles == ("Mixed computing", "Precision", "Dump", "Profiling", "All other options")
    p.close()


def test_tabs_are_built_on_first_selection_and_together_cover_every_option():
    p = panel(NpuConfig())
    assert set(p.controls) == {s.key for s in catalogue.specs_in_group("mixed computing")}
    p.tabs.selected_index = 1
    assert "precision_mode" in p.controls
    for key in catalogue.keys():
        p.control(key)
    assert set(p.controls) == set(catalogue.keys())
    p.close()


def test_widget_edits_update_the_config():
    config = NpuConfig()
    p = panel(config)
    p.control("mix_compile_mode").index = 1  # "True"
    assert config.mix_compile_mode is True
    p.control("iterations_per_loop").value = "1"
    assert config.iterations_per_loop == 1
    p.control("precision_mode").value = "force_fp16"
    assert config.precision_mode == "force_fp16"
    p.control("precision_mode").index = 0  # "(unset)"
    assert config.precision_mode is None
    p.close()


def test_config_changes_show_in_the_panel():
    config = NpuConfig()
    p = panel(config)
    config.update(precision_mode="allow_mix_precision", dump_path="/tmp/d", mix_compile_mode=False)
    assert p.control("precision_mode").value == "allow_mix_precision"
    assert p.control("dump_path").value == "/tmp/d"
    assert p.control("mix_compile_mode").value == "False"
    config.unset("dump_path")
    assert p.control("dump_path").value == ""
    p.close()


def test_invalid_widget_input_shows_the_error_and_leaves_the_config_unchanged():
    config = NpuConfig(iterations_per_loop=5)
    p = panel(config)
    box = p.control("iterations_per_loop")
    box.value = "many"
    assert config.iterations_per_loop == 5
    assert "iterations_per_loop" in p.error_text("iterations_per_loop")
    box.value = "0"
    assert config.iterations_per_loop == 5 and ">= 1" in p.error_text("iterations_per_loop")
    box.value = "2"
    assert config.iterations_per_loop == 2 and p.error_text("iterations_per_loop") == ""
    p.close()


def test_cross_option_problems_and_code_refresh_live_and_are_escaped():
    config = NpuConfig()
    p = panel(config)
    assert "no problems" in p.status.value
    config.update(mix_compile_mode=True, iterations_per_loop=10)
    assert "iterations_per_loop" in p.status.value
    assert "no code while the config has problems" in p.code.value
    config.update(iterations_per_loop=1, dump_path="/tmp/<b>x</b>")
    assert "no problems" in p.status.value
    assert "mix_compile_mode" in p.code.value
    assert "<b>x" not in p.code.value and "&lt;b&gt;x" in p.code.value
    p.close()


def test_closed_panel_stops_following_the_config():
    config = NpuConfig()
    p = panel(config)
    p.close()
    p.close()
    config.update(precision_mode="force_fp16")
    assert p.controls["mix_compile_mode"].widget.index == 0


def test_two_panels_on_one_config_stay_in_step():
    config = NpuConfig()
    a, b = panel(config), panel(config)
    a.control("precision_mode").value = "force_fp32"
    assert b.control("precision_mode").value == "force_fp32"
    a.close()
    b.close()


def test_labels_are_bare_keys_that_fit_the_label_width_and_status_moves_to_the_note():
    from npu_jupyter._notebook import panel as panel_module

    p = panel(NpuConfig())
    for key in catalogue.keys():
        p.control(key)
    longest = max(len(key) for key in catalogue.keys())
    # ~7px a character at JupyterLab's 13px UI font
    assert int(panel_module._DESCRIPTION_WIDTH.removesuffix("px")) >= 7 * longest
    assert all(c.widget.description == key for key, c in p.controls.items())
    note = p.controls["optypelist_for_implmode"].note
    assert note is not None and "Deprecated: use op_precision_mode." in note.value
    assert "Ignored" in p.controls["enable_reduce_precision"].note.value
    assert p.controls["mix_compile_mode"].note is None  # nothing to say, no widget
    p.close()


def test_note_under_precision_controls_describes_the_selected_value_and_follows_changes():
    config = NpuConfig()
    p = panel(config)
    p.control("precision_mode")
    note = p.controls["precision_mode"].note
    assert "unset: GE picks allow_fp32_to_fp16 for training" in note.value
    config.update({"precision_mode": "must_keep_origin_dtype"})
    assert "must_keep_origin_dtype: Never lower precision" in note.value
    p.control("precision_mode_v2").index = 1 + list(catalogue.spec("precision_mode_v2").choices).index("origin")
    assert "origin: Same as precision_mode=must_keep_origin_dtype" in p.controls["precision_mode_v2"].note.value
    p.control("op_select_implmode")
    config.update({"op_select_implmode": "high_precision_for_all"})
    implmode = p.controls["op_select_implmode"].note.value
    assert "Deprecated: use op_precision_mode." in implmode and "high_precision_for_all: Every op" in implmode
    p.close()


def test_every_value_of_the_described_options_has_a_note():
    described = [spec for spec in catalogue.specs() if spec.choice_notes is not None]
    assert {"precision_mode", "precision_mode_v2", "op_select_implmode"} <= {spec.key for spec in described}
    for spec in described:
        assert set(spec.choice_notes) == {""} | {str(c) for c in spec.choices}, spec.key


def test_a_note_is_never_wider_than_what_is_left_of_the_cell_after_the_label():
    """The note wraps within the output area (the browser test measures it: tests/ui, note_wraps)."""
    from npu_jupyter._notebook import panel as panel_module

    p = panel(NpuConfig())
    p.control("precision_mode")
    layout = p.controls["precision_mode"].note.layout
    assert layout.max_width == panel_module._CONTROL_WIDTH
    assert layout.width == f"calc(100% - {panel_module._DESCRIPTION_WIDTH})"  # not a fixed 680px past the label
    assert p.controls["precision_mode"].row.layout.width == "100%"  # what that 100% refers to
    p.close()


def test_every_control_hovers_its_options_doc_and_allowed_values_with_ipywidgets_8_styles():
    from ipywidgets.widgets.widget_string import HTMLStyle, TextStyle

    p = panel(NpuConfig())
    for key in ("precision_mode", "iterations_per_loop", "dump_path"):
        spec = catalogue.spec(key)
        tooltip = p.control(key).tooltip  # ipywidgets 8's name (7 called it description_tooltip)
        assert spec.doc in tooltip and f"Allowed: {spec.allowed_text()}." in tooltip
    assert isinstance(p.control("dump_path").style, TextStyle)
    assert isinstance(p._looks["html_style"], HTMLStyle)
    p.close()
