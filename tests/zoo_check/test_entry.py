"""Entry references: what the zoo accepts, how it resolves them, and the one error for anything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_jupyter._zoo_check.entry import EntryError, ZooRun, normalise, resolve

ENTRIES = Path(__file__).with_name("entries.py")


def test_a_file_is_made_absolute_and_defaults_to_zoo_entry(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text("def zoo_entry(npu, steps):\n    return 1.5\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ref = normalise("train.py")
    assert ref == f"{script.resolve()}:zoo_entry"
    assert resolve(ref)(None, 1) == 1.5


def test_a_file_with_a_function_and_a_module_with_a_function_resolve():
    assert resolve(normalise(f"{ENTRIES}:raises")).__name__ == "raises"
    assert resolve(normalise("json:dumps"))({"a": 1}) == '{"a": 1}'


def test_a_function_from_an_importable_module_becomes_its_reference():
    from npu_jupyter._zoo_check.check import zoo

    assert normalise(zoo) == "npu_jupyter._zoo_check.check:zoo"


def test_a_function_defined_in_the_notebook_is_refused_with_what_to_do():
    def local(npu, steps):
        return 0.0

    with pytest.raises(EntryError, match="put the entry in a .py file"):
        normalise(local)


@pytest.mark.parametrize(
    "reference, message",
    [
        ("missing_file.py", "no such file"),
        ("not a module", "expected 'file.py"),
        (f"{ENTRIES}:not-a-name", "is not a function name"),
        (42, "a zoo entry is"),
    ],
)
def test_bad_references_are_one_clear_error(reference, message):
    with pytest.raises(EntryError, match=message):
        normalise(reference)


def test_a_reference_to_nothing_callable_names_the_contract():
    with pytest.raises(EntryError, match=r"def nothing\(npu, steps\) -> loss"):
        resolve(f"{ENTRIES}:nothing")
    with pytest.raises(EntryError, match="cannot import"):
        resolve("no_such_module_here:fn")


def test_the_task_options_win_over_the_scripts_config():
    npu = ZooRun({"precision_mode": "force_fp16"}, steps=2)
    config = npu.config({"precision_mode": "force_fp32", "op_select_implmode": "high_precision"})
    assert config.precision_mode == "force_fp16" and config.op_select_implmode == "high_precision"
    assert npu.config(None).precision_mode == "force_fp16"


def test_a_windows_drive_is_not_taken_for_the_function_separator():
    from npu_jupyter._zoo_check.entry import _is_drive

    assert _is_drive("C:\\models\\train.py") and _is_drive("c:/models/train.py")
    assert not _is_drive("train.py:fn") and not _is_drive("pkg.mod:fn")
