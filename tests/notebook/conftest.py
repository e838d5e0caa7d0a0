"""A real IPython shell with the extension loaded; the shared NPU config is reset around each test."""

from __future__ import annotations

import os

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def ip():
    """IPython's own InteractiveShell; ``run_line_magic``/``run_cell_magic`` raise errors directly."""
    from npu_jupyter._notebook.state import current_config

    shell = InteractiveShell.instance()
    # IPython 7's %config evaluates "cfg.<line>" with the user namespace first: a `cfg` left by an
    # earlier test (say an NpuConfig) would receive the assignment. IPython 8 fixed this.
    shell.user_ns.pop("cfg", None)
    # The first %load_ext of the process would switch tf.keras to Keras 2 if TensorFlow was not imported
    # yet (legacy_keras.py); the suite keeps whichever Keras the environment gives (tests/notebook/
    # test_legacy_keras.py checks the switch in fresh processes).
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TF_USE_LEGACY_KERAS", os.environ.get("TF_USE_LEGACY_KERAS", "0"))
        shell.run_line_magic("load_ext", "npu_jupyter")
    current_config().reset()
    shell.run_line_magic("config", "NpuMagics.detail = 'summary'")
    shell.run_line_magic("config", "NpuMagics.autodisplay = True")
    yield shell
    shell.user_ns.pop("cfg", None)
    current_config().reset()
    shell.run_line_magic("config", "NpuMagics.detail = 'summary'")  # a process-wide default
    shell.run_line_magic("config", "NpuMagics.backend = 'auto'")
