"""The Profiling tab's form over the profiling_options JSON."""

from __future__ import annotations

import json

from npu_jupyter._notebook.panel import panel
from npu_jupyter._options.config import NpuConfig


def test_profiling_switches_edit_the_profiling_options_json_and_follow_it():
    config = NpuConfig(profiling_options=json.dumps({"output": "/tmp/p", "l2": "on"}))
    p = panel(config)
    p.tabs.selected_index = 3
    form = p.profiling_form
    assert form.fields["output"].value == "/tmp/p"
    form.fields["task_trace"].value = "on"
    assert json.loads(config.profiling_options) == {"output": "/tmp/p", "l2": "on", "task_trace": "on"}
    config.update(profiling_options=json.dumps({"aicpu": "on"}))
    assert form.fields["aicpu"].value == "on" and form.fields["output"].value == ""
    p.close()


def test_malformed_profiling_json_is_reported_in_the_form_not_raised():
    config = NpuConfig()
    p = panel(config)
    p.tabs.selected_index = 3
    p.profiling_form.show("[1, 2]")
    assert "not a JSON object" in p.profiling_form.message.value
    p.close()
