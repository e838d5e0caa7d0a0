"""npu_jupyter._ops.host_ops: correcting the approximate host-kept (isGray) list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_jupyter._ops.library import OpDataError, load_library


def test_host_ops_file_extends_and_removes_the_host_kept_list(tmp_path: Path) -> None:
    override = tmp_path / "host_ops.json"
    override.write_text(json.dumps({"add": ["Relu", "MyCustomOp"], "remove": ["StringSplit"]}))
    lib = load_library("Ascend910", host_ops=override)
    assert lib.caps("Relu").gray_in_mix and str(override) in lib.caps("Relu").gray_reason
    assert not lib.caps("StringSplit").gray_in_mix
    assert {"Relu", "MyCustomOp"} <= lib.host_kept
    assert load_library("Ascend910").caps("Relu").gray_in_mix is False  # the bundled library is untouched


def test_host_ops_replace_keeps_only_the_listed_types() -> None:
    lib = load_library("Ascend910", host_ops={"replace": ["Relu"]})
    assert lib.host_kept == {"Relu"}
    assert not lib.caps("HashTableV2").gray_in_mix


def test_host_ops_env_var_points_at_a_json_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    override = tmp_path / "extra.json"
    override.write_text('["Tanh"]')
    monkeypatch.setenv("NPU_JUPYTER_HOST_OPS", str(override))
    lib = load_library("Ascend910")
    assert lib.caps("Tanh").gray_in_mix
    assert lib.caps("HashTableV2").gray_in_mix  # extended, not replaced


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"keep": ["Relu"]}', "unknown key"),
        ('{"add": "Relu"}', "expected a JSON list"),
        ("42", "expected a JSON list"),
    ],
)
def test_malformed_host_ops_file_is_one_clear_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    override = tmp_path / "bad_host_ops.json"
    override.write_text(content)
    with pytest.raises(OpDataError, match=message) as info:
        load_library("Ascend910", host_ops=override)
    assert "bad_host_ops.json" in str(info.value)


def test_missing_host_ops_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(OpDataError, match="missing.json"):
        load_library("Ascend910", host_ops=tmp_path / "missing.json")
