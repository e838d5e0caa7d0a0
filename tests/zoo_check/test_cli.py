"""``python -m npu_jupyter zoo``: arguments, option sets as text, and the table on stdout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npu_jupyter._zoo_check.cli import main, parse_option_set

ENTRIES = str(Path(__file__).with_name("entries.py"))


def test_option_sets_are_typed_like_npu_set():
    assert parse_option_set("precision_mode=force_fp16, enable_dump_debug=false") == {
        "precision_mode": "force_fp16",
        "enable_dump_debug": False,
    }


def test_bad_input_exits_2_with_one_line_saying_why(capsys):
    assert main([f"{ENTRIES}:tiny", "--modes", "fp8"]) == 2
    assert "precision_mode: 'fp8' is not allowed" in capsys.readouterr().err
    assert main(["missing.py"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([f"{ENTRIES}:tiny", "--set", "precision_mode"]) == 2
    assert "is not KEY=VALUE" in capsys.readouterr().err


def test_the_package_command_without_a_command_prints_its_usage():
    done = subprocess.run([sys.executable, "-m", "npu_jupyter"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "python -m npu_jupyter zoo ENTRY" in done.stderr


@pytest.mark.slow
def test_the_command_prints_the_table_and_writes_json_and_csv(tmp_path):
    out = tmp_path / "rows.json"
    sheet = tmp_path / "rows.csv"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "npu_jupyter", "zoo", f"{ENTRIES}:tiny", "--modes", "force_fp16", "--steps", "1"),
            *("--json", str(out), "--csv", str(sheet), "--results", str(tmp_path / "zoo.json")),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "entries.py:tiny" in done.stdout and "wall-clock time of the emulation measured on this CPU" in done.stdout
    assert "[1/1] entries.py:tiny force_fp16: ok" in done.stderr
    assert '"status": "ok"' in out.read_text(encoding="utf-8")
    header = sheet.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert {"entry", "options", "status", "cpu_ms_per_step", "est_step_ms"} <= set(header)
