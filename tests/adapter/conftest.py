"""Fixtures for the adapter tests: the adapter test double on sys.path, and a real IPython shell."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

DOUBLE_DIR = str(Path(__file__).resolve().parent.parent / "adapter_double")
ADAPTER_PACKAGES = ("npu_bridge", "npu_device")


def _forget_adapter_modules() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in ADAPTER_PACKAGES:
            del sys.modules[name]


@pytest.fixture
def adapter_double():
    """The double of ``npu_bridge``/``npu_device`` importable for one test; returns its record module.

    Afterwards the double's modules are forgotten and ``Session.__init__`` (which importing the
    double's ``npu_init`` wraps, as the real one does) is restored.
    """
    pytest.importorskip("tensorflow")
    from npu_jupyter import adapter

    adapter.uninstall()
    _forget_adapter_modules()
    sys.path.insert(0, DOUBLE_DIR)
    importlib.invalidate_caches()
    recorded = importlib.import_module("npu_bridge.recorded")
    recorded.clear()
    try:
        yield recorded
    finally:
        if recorded.original_session_init is not None:
            from tensorflow.python.client import session

            session.Session.__init__ = recorded.original_session_init
        sys.path.remove(DOUBLE_DIR)
        _forget_adapter_modules()
        importlib.invalidate_caches()


@pytest.fixture
def no_adapter():
    """No adapter importable and no emulated one installed, before and after the test."""
    from npu_jupyter import adapter

    adapter.uninstall()
    yield
    adapter.uninstall()


@pytest.fixture
def emulated_shell(ip, no_adapter):
    """A real IPython shell after ``%npu adapter emulate``, as a user starts (no_adapter uninstalls after)."""
    ip.run_line_magic("npu", "adapter emulate")
    return ip


@pytest.fixture
def emulated(no_adapter):
    """The emulated adapter installed for the test (no real one importable), uninstalled after."""
    from npu_jupyter import adapter

    adapter.emulate_adapter()
    yield
    adapter.uninstall()


@pytest.fixture
def ip():
    """IPython's own InteractiveShell with the extension loaded; config and backend reset after."""
    from IPython.core.interactiveshell import InteractiveShell

    from npu_jupyter._notebook.state import current_config

    shell = InteractiveShell.instance()
    with pytest.MonkeyPatch.context() as env:  # keep this process's tf.keras (tests/notebook/conftest.py)
        env.setenv("TF_USE_LEGACY_KERAS", os.environ.get("TF_USE_LEGACY_KERAS", "0"))
        shell.run_line_magic("load_ext", "npu_jupyter")
    current_config().reset()
    yield shell
    current_config().reset()
    shell.run_line_magic("config", "NpuMagics.backend = 'auto'")
