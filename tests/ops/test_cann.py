"""Reading a CANN install: the files the adapter and GE read, in both layouts, with overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_jupyter._ops.library import OpDataError, load_library

SUPPORTED = {
    "MatMul": {"isGray": False, "isHeavy": True},
    "Relu": {"isGray": True, "isHeavy": False},
    "Sum": {"isGray": False, "isHeavy": False},
    "Identity": {"isGray": False, "isHeavy": False},
    "MyCustomOp": {"isGray": False, "isHeavy": False},
}
OPS_INFO = {
    "MatMulV2": {"input0": {"name": "x1", "dtype": "float16,float,bfloat16"}, "precision_reduce": {"flag": "true"}},
    "Relu": {"input0": {"name": "x", "dtype": "float16,float"}, "output0": {"dtype": "float16,float"}},
    "ReduceSum": {
        "input0": {"name": "x", "dtype": "float16"},
        "input1": {"dtype": "int32"},
        "precision_reduce": {"flag": "false"},
    },
}


def _write(path: Path, content: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _new_layout(opp: Path, supported: object = SUPPORTED, soc: str = "ascend910") -> Path:
    _write(opp / "built-in" / "framework" / "tensorflow" / "npu_supported_ops.json", supported)
    _write(opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / soc / f"aic-{soc}-ops-info.json", OPS_INFO)
    return opp


def test_new_layout_install_gives_exact_non_approximate_data(tmp_path: Path) -> None:
    lib = load_library("Ascend910", opp_path=str(_new_layout(tmp_path / "opp")))
    assert lib.approximate is False
    assert "npu_supported_ops.json" in lib.provenance
    relu = lib.caps("Relu")
    assert relu.gray_in_mix and relu.declared and relu.engine == "AI_CORE"
    matmul = lib.caps("MatMul")
    assert matmul.heavy and matmul.policy == "white" and matmul.aicore_dtypes == {"float16", "float32", "bfloat16"}
    assert lib.caps("Sum").aicore_dtypes == {"float16"} and lib.caps("Sum").policy == "black"


def test_op_types_missing_from_the_install_run_on_host(tmp_path: Path) -> None:
    lib = load_library("Ascend910", opp_path=str(_new_layout(tmp_path / "opp")))
    tanh = lib.caps("Tanh")  # a bundled row the install does not declare
    assert tanh.engine == "HOST" and not tanh.declared
    custom = lib.caps("MyCustomOp")  # declared by the install only
    assert custom.declared and custom.engine == "AI_CPU"


def test_ascend_opp_path_env_var_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCEND_OPP_PATH", str(_new_layout(tmp_path / "opp")))
    assert load_library("Ascend910").approximate is False


def test_old_layout_is_read_when_there_is_no_built_in_dir(tmp_path: Path) -> None:
    opp = tmp_path / "opp"
    _write(opp / "framework" / "built-in" / "tensorflow" / "npu_supported_ops.json", SUPPORTED)
    _write(
        opp / "op_impl" / "built-in" / "ai_core" / "tbe" / "config" / "ascend910" / "aic-ascend910-ops-info.json",
        OPS_INFO,
    )
    lib = load_library("Ascend910", opp_path=str(opp))
    assert lib.approximate is False
    assert lib.caps("Relu").gray_in_mix


def test_split_per_op_info_files_are_merged(tmp_path: Path) -> None:
    opp = tmp_path / "opp"
    _write(opp / "built-in" / "framework" / "tensorflow" / "npu_supported_ops.json", SUPPORTED)
    config = opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / "ascend910b"
    for op_type, entry in OPS_INFO.items():
        _write(config / f"aic-ascend910b-ops-info-{op_type.lower()}.json", {op_type: entry})
    lib = load_library("Ascend910B4", opp_path=str(opp))
    assert lib.approximate is False
    assert lib.policy_of_ir("ReduceSum") == "black" and lib.policy_of_ir("MatMulV2") == "white"
    assert lib.caps("Relu").aicore_dtypes == {"float16", "float32"}


def test_custom_opp_path_overrides_built_in_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opp = _new_layout(tmp_path / "opp")
    custom = tmp_path / "my_ops"
    _write(
        custom / "framework" / "tensorflow" / "npu_supported_ops.json",
        {"Relu": {"isGray": False, "isHeavy": False}, "Fancy": {"isGray": False, "isHeavy": True}},
    )
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(custom))
    lib = load_library("Ascend910", opp_path=str(opp))
    assert not lib.caps("Relu").gray_in_mix
    assert lib.caps("Fancy").declared and lib.caps("Fancy").heavy


def test_vendor_custom_ops_are_read_from_vendors_config(tmp_path: Path) -> None:
    opp = _new_layout(tmp_path / "opp")
    _write(opp / "vendors" / "config.ini", "load_priority=acme\n")
    _write(
        opp / "vendors" / "acme" / "framework" / "tensorflow" / "npu_supported_ops.json", {"AcmeOp": {"isGray": True}}
    )
    lib = load_library("Ascend910", opp_path=str(opp))
    assert lib.caps("AcmeOp").gray_in_mix


def test_install_with_only_the_support_json_stays_approximate_for_dtypes(tmp_path: Path) -> None:
    opp = tmp_path / "opp"
    _write(opp / "built-in" / "framework" / "tensorflow" / "npu_supported_ops.json", SUPPORTED)
    lib = load_library("Ascend910", opp_path=str(opp))
    assert lib.approximate is True
    assert "no aic-ascend910-ops-info.json found" in lib.provenance
    assert lib.caps("Relu").gray_in_mix  # the real isGray is still used
    assert lib.caps("MatMul").aicore_dtypes == {"float16"}  # bundled dtypes


def test_empty_opp_dir_falls_back_to_the_bundled_tables(tmp_path: Path) -> None:
    lib = load_library("Ascend910", opp_path=str(tmp_path))
    assert lib.approximate is True
    assert lib.caps("MatMul").policy == "white"


@pytest.mark.parametrize("which", ["supported", "ops_info"])
def test_malformed_cann_file_is_an_error_naming_the_file(tmp_path: Path, which: str) -> None:
    opp = _new_layout(tmp_path / "opp")
    if which == "supported":
        bad = opp / "built-in" / "framework" / "tensorflow" / "npu_supported_ops.json"
        _write(bad, '{"MatMul": {"isGray": fal')
    else:
        bad = opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / "ascend910" / "aic-ascend910-ops-info.json"
        _write(bad, "[1, 2]")
    with pytest.raises(OpDataError) as info:
        load_library("Ascend910", opp_path=str(opp))
    assert str(bad) in str(info.value)


def test_support_json_entry_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    opp = _new_layout(tmp_path / "opp", supported={"MatMul": True})
    with pytest.raises(OpDataError, match="entry 'MatMul' must be an object"):
        load_library("Ascend910", opp_path=str(opp))


def test_plumbing_keeps_its_engine_but_takes_the_install_policy(tmp_path: Path) -> None:
    opp = tmp_path / "opp"
    _write(opp / "built-in" / "framework" / "tensorflow" / "npu_supported_ops.json", {"Const": {}, "PyFunc": {}})
    config = opp / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / "ascend910"
    _write(config / "aic-ascend910-ops-info.json", {"Const": {"precision_reduce": {"flag": "false"}}})
    lib = load_library("Ascend910", opp_path=str(opp))
    const = lib.caps("Const")
    assert (const.kernel, const.policy) == ("ge", "black")
    assert lib.caps("PyFunc").declared  # the install declares it, so the adapter would offload it
    assert lib.caps("Identity").engine == "HOST"  # not declared by this install
