"""What %npu shows for a config."""

from __future__ import annotations

from npu_jupyter.display.config_view import ConfigView
from npu_jupyter.options.config import NpuConfig


def test_view_lists_set_options_problems_and_escapes_values():
    config = NpuConfig(mix_compile_mode=True, iterations_per_loop=4, dump_path="<script>x</script>")
    view = ConfigView(config)
    text = repr(view)
    assert "iterations_per_loop = 4" in text and "problem:" in text
    page = view._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_view_is_a_snapshot_not_a_live_reference():
    config = NpuConfig(precision_mode="force_fp16")
    view = ConfigView(config)
    config.unset("precision_mode")
    assert "force_fp16" in repr(view)
    assert "no options set" in repr(ConfigView(config))
