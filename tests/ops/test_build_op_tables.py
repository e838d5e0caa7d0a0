"""tools/build_op_tables.py: the shipped tables are exactly what the public data produces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "build_op_tables.py"
SHIPPED = REPO / "npu_jupyter" / "_ops"
SOCS = ("ascend910", "ascend910b")


@pytest.fixture(scope="module")
def rebuilt(shared_data_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tables")
    subprocess.run(
        [sys.executable, str(TOOL), str(shared_data_path), "--out", str(out)], check=True, capture_output=True
    )
    return out


@pytest.mark.parametrize("soc", SOCS)
def test_shipped_table_is_reproducible_from_the_shipped_data(rebuilt: Path, soc: str) -> None:
    shipped = (SHIPPED / f"{soc}.json").read_text(encoding="utf-8")
    fresh = (rebuilt / f"{soc}.json").read_text(encoding="utf-8")
    assert fresh == shipped, f"{soc}.json is stale: rerun python tools/build_op_tables.py"


def test_builder_output_is_deterministic(rebuilt: Path, shared_data_path: Path, tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(TOOL), str(shared_data_path), "--out", str(tmp_path)], check=True, capture_output=True
    )
    for soc in SOCS:
        assert (tmp_path / f"{soc}.json").read_bytes() == (rebuilt / f"{soc}.json").read_bytes()


@pytest.mark.parametrize("soc", SOCS)
def test_table_starts_with_a_provenance_block_that_calls_the_host_list_an_approximation(soc: str) -> None:
    table = json.loads((SHIPPED / f"{soc}.json").read_text(encoding="utf-8"))
    assert next(iter(table)) == "provenance"
    prov = table["provenance"]
    assert prov["host_kept_list"].startswith("APPROXIMATION")
    assert "not public" in prov["host_kept_list"]
    assert set(prov["columns"]) >= {
        "ir_type",
        "engine",
        "aicore_dtypes",
        "aicpu_dtypes",
        "cube",
        "policy",
        "gray_in_mix",
        "heavy",
    }
    assert table["approximate"] is True


@pytest.mark.parametrize("soc", SOCS)
def test_every_row_states_its_source_and_uses_known_values(soc: str) -> None:
    table = json.loads((SHIPPED / f"{soc}.json").read_text(encoding="utf-8"))
    floats = {"float16", "float32", "bfloat16"}
    for tf_type, row in table["ops"].items():
        assert row["source"], tf_type
        assert row["engine"] in {"AI_CORE", "AI_CPU", "HOST"}, tf_type
        assert row["policy"] in {"white", "black", "gray"}, tf_type
        assert set(row["aicore_dtypes"]) <= floats and set(row["aicpu_dtypes"]) <= floats, tf_type
        assert (row["engine"] == "HOST") == (not row["declared"]), tf_type


def test_policies_agree_with_the_published_tf_level_precision_table(shared_data: dict) -> None:
    """tf_level_precision_ascend910_2022 was computed independently from the same op-info; the
    builder's IR mapping plus D-variant rule must reproduce its flag for every TF op type in it."""
    table = json.loads((SHIPPED / "ascend910.json").read_text(encoding="utf-8"))
    expected_policy = {"true": "white", "false": "black", "gray": "gray"}
    mismatches = {}
    for tf_type, entries in shared_data["tf_level_precision_ascend910_2022"].items():
        entry = entries[0]
        flag = entry["flag"] if entry["flag"] != "absent" else entry["flag_D"]
        want = expected_policy.get(flag, "gray")
        got = table["ops"][tf_type]["policy"]
        if got != want:
            mismatches[tf_type] = (got, want)
    assert not mismatches


def test_builder_finds_the_shipped_data_by_default(shared_data_path: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(TOOL), "--out", str(tmp_path)], check=True, capture_output=True, text=True
    )
    assert "ascend910.json" in result.stdout
    assert (tmp_path / "ascend910.json").read_bytes() == (SHIPPED / "ascend910.json").read_bytes()
