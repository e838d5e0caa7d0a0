"""Fixtures for the op-table tests: the shared source data and an environment free of CANN settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The public op lists the tables are built from ship with the build tool (tools/data/README.md).
SHARED_DATA = REPO / "tools" / "data" / "ascend_op_data.json"


@pytest.fixture(autouse=True)
def _no_cann_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's CANN or override settings must not change what these tests see."""
    for name in ("ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH", "NPU_JUPYTER_HOST_OPS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def shared_data_path() -> Path:
    if not SHARED_DATA.is_file():
        pytest.fail(f"op source data missing from the repository: {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_data(shared_data_path: Path) -> dict:
    return json.loads(shared_data_path.read_text(encoding="utf-8"))
