"""The one shared session config."""

from __future__ import annotations

from npu_jupyter import current_config as public_current_config
from npu_jupyter._notebook.state import current_config


def test_current_config_is_one_object_for_the_whole_session():
    first = current_config()
    assert first is current_config() is public_current_config()
    assert type(first).__name__ == "NpuConfig"
