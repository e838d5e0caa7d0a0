"""What %npu shows for a config."""

from __future__ import annotations

from npu_jupyter._display.config_view import ConfigView
from npu_jupyter._options.config import NpuConfig


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


def test_each_option_says_which_adapter_side_reads_it():
    # npu_device has no mixed computing (its options tree has no mix_compile_mode) and takes
    # profiling_mode as profiling_config.enable_profiling (tf_adapter_2.x/python/npu_device/configs/).
    config = NpuConfig(mix_compile_mode=True, precision_mode="allow_mix_precision", profiling_mode=True)
    text = repr(ConfigView(config))
    assert "mix_compile_mode = True  [TF1 npu_bridge only; npu_device does not read it]" in text
    assert "precision_mode = 'allow_mix_precision'  [TF1 npu_bridge + TF2 npu_device (precision_mode)]" in text
    assert "TF2 npu_device (profiling_config.enable_profiling)" in text
    page = ConfigView(config)._repr_html_()
    assert "<th" in page and "read by" in page and "npu_device does not read it" in page


def test_an_open_device_shows_the_options_it_opened_with_not_only_the_empty_session_config():
    """Traced functions run under an open npu_device's options: "the adapter's defaults apply" would be false."""
    device = NpuConfig(precision_mode="allow_mix_precision", dump_path="<b>d</b>", enable_dump=True)
    view = ConfigView(NpuConfig(), device=device)
    text = repr(view)
    assert "the adapter's defaults apply" not in text
    assert "no session options set: sessions run with the adapter's defaults" in text
    assert "npu_device opened by your code with" in text and "precision_mode = 'allow_mix_precision'" in text
    page = view._repr_html_()
    assert "&lt;b&gt;d&lt;/b&gt;" in page and "<b>d</b>" not in page
    assert "npu_device opened by your code with" in page and "the adapter&#x27;s defaults apply" not in page
    assert "npu_device" not in repr(ConfigView(NpuConfig()))  # no device open: nothing about it
