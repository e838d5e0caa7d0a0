"""A model-zoo style training script (zoo_style_train.py) runs unchanged under the emulated adapter."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from npu_jupyter import adapter
from npu_jupyter._display.mime import MIME_TYPE

tf = pytest.importorskip("tensorflow")

SCRIPT = Path(__file__).with_name("zoo_style_train.py")


def _check(result):
    assert result["session_type"] == "EmulatorSession"
    assert result["global_step"] == 4 and result["rank_size"] == 1
    assert result["loss_scale"] == 4096.0  # 1024 doubled every 2 finite steps, over 4 steps
    assert all(0.0 < loss < 10.0 for loss in result["losses"])


def test_the_script_runs_unchanged_after_emulate_adapter(no_adapter):
    import npu_jupyter

    npu_jupyter.emulate_adapter()
    namespace = runpy.run_path(str(SCRIPT))
    _check(namespace["main"]())


def test_the_script_runs_unchanged_in_an_npu_cell_with_the_magic_switch(ip, no_adapter):
    ip.run_line_magic("npu", "adapter emulate")
    cell = (
        SCRIPT.read_text(encoding="utf-8")
        .replace('if __name__ == "__main__":', "if True:")
        .replace("    print(main())", "    result = main()")
    )
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--dump-mode output", cell)
    _check(ip.user_ns["result"])
    reports = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    assert reports and all(r["run"]["backend"] == "emulator" for r in reports)
    train = next(r for r in reports if any(op["n"] == "conv1" for op in r["ops"]))
    assert train["config"]["precision_mode"] == "allow_mix_precision"  # the script's own NpuOptimizer entry
    conv = next(op for op in train["ops"] if op["n"].endswith("Conv2D"))
    assert conv["d1"] == "float16"
    assert adapter.is_emulated()


def test_without_the_emulation_the_script_fails_at_its_first_adapter_import(no_adapter):
    with pytest.raises(ImportError, match="npu_bridge"):
        runpy.run_path(str(SCRIPT))
