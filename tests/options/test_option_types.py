"""The typed view of NpuConfig's options is generated from the catalogue and cannot drift from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npu_jupyter._options import catalogue

REPO = Path(__file__).resolve().parents[2]


def test_the_typed_view_is_up_to_date_with_the_catalogue():
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "build_option_types.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_the_typed_view_names_every_option_with_its_proto_type():
    from npu_jupyter._options._option_types import OptionAttributes

    hints = OptionAttributes.__annotations__
    assert list(hints) == catalogue.keys()
    for spec in catalogue.specs():
        expected = {"b": "bool", "i": "int", "s": "str"}[spec.field]
        assert expected in hints[spec.key], spec.key


@pytest.mark.parametrize("name", ["py.typed"])
def test_the_package_ships_its_type_marker(name):
    assert (REPO / "npu_jupyter" / name).is_file()
