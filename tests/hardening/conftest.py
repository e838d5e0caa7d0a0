"""Hardening tests: shared helpers on the path, a real IPython shell, and the count of fuzzed inputs.

The count is printed in pytest's terminal summary ("hardening: N generated inputs tried"), so each CI
log states how many inputs the run actually tried.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fuzz_inputs import ACCEPTED, TRIED


@pytest.fixture
def ip():
    """IPython's own InteractiveShell with the extension loaded and the shared config emptied."""
    from IPython.core.interactiveshell import InteractiveShell

    from npu_jupyter._notebook.state import current_config

    shell = InteractiveShell.instance()
    with pytest.MonkeyPatch.context() as env:  # keep this process's tf.keras (tests/notebook/conftest.py)
        env.setenv("TF_USE_LEGACY_KERAS", os.environ.get("TF_USE_LEGACY_KERAS", "0"))
        shell.run_line_magic("load_ext", "npu_jupyter")
    current_config().reset()
    shell.run_line_magic("config", "NpuMagics.autodisplay = True")
    yield shell
    current_config().reset()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per fuzzed area and the total, so the CI log shows how many inputs were tried."""
    if not TRIED:
        return
    total = sum(TRIED.values())
    parts = ", ".join(f"{area} {count} ({ACCEPTED[area]} accepted)" for area, count in sorted(TRIED.items()))
    terminalreporter.write_line(f"hardening: {total} generated inputs tried ({parts})")
