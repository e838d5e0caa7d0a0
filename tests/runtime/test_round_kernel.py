"""The rounding kernel: built where setup builds it, installed only when checked, same numbers as the Casts."""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._runtime import round_kernel
from npu_jupyter._runtime.session.emulator import EmulatorSession

BUILDABLE = sys.platform.startswith("linux") and platform.machine() == "x86_64" and shutil.which("g++") is not None


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty kernel cache of the test's own; the process's loaded-library memo is left as it was."""
    monkeypatch.setenv(round_kernel.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(round_kernel.SWITCH_ENV, "1")
    return tmp_path / "cache" / "kernels"


@pytest.mark.skipif(not BUILDABLE, reason="./dev.sh setup builds the kernel on Linux x86-64 with g++")
def test_setup_built_the_kernel_and_the_emulator_uses_it():
    """`./dev.sh setup` (and so CI) builds it: the suite's other tests then run on the kernel."""
    assert round_kernel.in_use(), round_kernel.status()
    assert round_kernel.status().startswith("rounding kernel: in use")


def test_the_switch_turns_it_off_and_status_says_so(monkeypatch):
    monkeypatch.setenv(round_kernel.SWITCH_ENV, "0")
    assert not round_kernel.in_use()
    assert "off (NPU_JUPYTER_ROUND_KERNEL=0)" in round_kernel.status()


def test_an_empty_cache_means_casts_and_status_says_how_to_build(cache):
    assert not round_kernel.in_use()
    assert "python -m npu_jupyter build-kernel" in round_kernel.status()
    assert not cache.exists()  # a lookup creates nothing


def test_no_compiler_is_one_clear_error_and_nothing_is_written(cache, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(round_kernel.KernelBuildError, match=r"no C\+\+ compiler found .* Cast pairs"):
        round_kernel.build()
    assert not cache.exists()


def test_an_unwritable_cache_is_one_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(round_kernel.CACHE_ENV, str(blocker))
    with pytest.raises(round_kernel.KernelBuildError, match="cannot write the rounding kernel to"):
        round_kernel.build(compiler="true")


def test_a_failed_compile_says_why_and_leaves_no_file(cache):
    with pytest.raises(round_kernel.KernelBuildError, match=r"compiling round_kernel.cc failed \(exit status 1\)"):
        round_kernel.build(compiler="false")
    assert list(cache.iterdir()) == []  # the scratch file is gone too


@pytest.mark.skipif(not BUILDABLE, reason="needs the built kernel (Linux x86-64, g++)")
def test_a_library_that_fails_its_check_is_not_installed(cache, monkeypatch, tmp_path):
    """Install logic without a compile: "compile" copies a library, the check is a script that refuses."""
    monkeypatch.setattr(round_kernel, "_compile_command", lambda output: ["/dev/null", output])
    refuse = tmp_path / "refuse.py"
    refuse.write_text("import sys; print('float16: 1 values differ from the Cast pair'); sys.exit(1)\n")
    monkeypatch.setattr(round_kernel, "CHECK", refuse)
    with pytest.raises(
        round_kernel.KernelBuildError,
        match=r"(?s)failed its check against the Cast pair \(exit status 1\):\nfloat16: 1 values differ",
    ):
        round_kernel.build(compiler="cp")
    assert list(cache.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not BUILDABLE, reason="compiles with g++ on Linux x86-64")
def test_the_check_refuses_a_kernel_that_rounds_one_tie_the_wrong_way(cache, monkeypatch, tmp_path):
    """The check can fail: a build whose portable float16 rounding sends ties up (not to even) is refused."""
    source = round_kernel.SOURCE.read_text()
    wrong = source.replace("(a + 0x0fffu + ((a >> 13) & 1u))", "(a + 0x1000u)")
    assert wrong != source
    broken = tmp_path / "round_kernel.cc"
    broken.write_text("#define NPU_EMU_PORTABLE 1\n" + wrong)
    monkeypatch.setattr(round_kernel, "SOURCE", broken)
    with pytest.raises(
        round_kernel.KernelBuildError,
        match=r"(?s)failed its check.*\nfloat16 \(a copy\): \d+ values differ from the Cast pair, first 0x",
    ):
        round_kernel.build()
    assert list(cache.iterdir()) == []


def _unrounded_copies(source: str) -> str:
    """A kernel whose streamed copies (a large tensor the caller still holds) are written unrounded."""
    return source.replace("_mm512_stream_ps(out + i, y)", "_mm512_stream_ps(out + i, x)").replace(
        "_mm256_stream_ps(out + i, y)", "_mm256_stream_ps(out + i, x)"
    )


def _unrounded_in_place(source: str) -> str:
    """A kernel that leaves a tensor it could overwrite (its only reader is the rounding) as it was."""
    line = "    const bool stream = out != in && x.TotalBytes() >= kStreamBytes;\n"
    return source.replace(line, line + "    if (out == in) return;\n")


@pytest.mark.slow
@pytest.mark.skipif(not BUILDABLE, reason="compiles with g++ on Linux x86-64")
@pytest.mark.parametrize(("break_it", "form"), [(_unrounded_copies, "a copy"), (_unrounded_in_place, "in place")])
def test_the_check_covers_both_writing_paths(cache, monkeypatch, tmp_path, break_it, form):
    """A build broken in one writing path alone is refused, and the check says which path.

    The op writes a copy (non-temporal stores past 1 MiB) when the caller still holds its input, as
    for a weight read from its variable, and rounds in place when the rounding is the input's only
    reader; the check must take both, or a break in one would be installed.
    """
    source = round_kernel.SOURCE.read_text()
    broken = tmp_path / "round_kernel.cc"
    broken.write_text(break_it(source))
    assert broken.read_text() != source
    monkeypatch.setattr(round_kernel, "SOURCE", broken)
    with pytest.raises(
        round_kernel.KernelBuildError, match=rf"float16 \({form}\): \d+ values differ from the Cast pair"
    ):
        round_kernel.build()
    assert list(cache.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not BUILDABLE, reason="compiles with g++ on Linux x86-64")
def test_the_check_refuses_a_finite_scan_that_misses_inf_and_nan(cache, monkeypatch, tmp_path):
    """``NpuEmuCheck``'s scan (its SSE2 and AVX2 copies share it) is checked too: one that never sees
    an inf or NaN is refused, and the check says where it missed."""
    source = round_kernel.SOURCE.read_text()
    scan = "hits |= static_cast<Bits>(~bits[i] & kExponent) == 0 ? Bits(1) : Bits(0);"
    assert scan in source
    broken = tmp_path / "round_kernel.cc"
    broken.write_text(source.replace(scan, "hits |= Bits(0) & bits[i];"))
    monkeypatch.setattr(round_kernel, "SOURCE", broken)
    with pytest.raises(round_kernel.KernelBuildError, match=r"NpuEmuCheck: misses inf at 0 of 1 float32 values"):
        round_kernel.build()
    assert list(cache.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not BUILDABLE, reason="compiles with g++ on Linux x86-64")
@pytest.mark.parametrize("path", ["NPU_EMU_NO_AVX512", "NPU_EMU_PORTABLE"])
def test_the_narrower_paths_pass_the_check_on_this_machine(cache, monkeypatch, tmp_path, path):
    """The F16C path (what a CPU without AVX-512 runs) and the portable one (what a CPU without F16C
    runs) pass the check too: on a CPU with AVX-512, as CI's, a plain build checks that path alone."""
    narrowed = tmp_path / "round_kernel.cc"
    narrowed.write_text(f"#define {path} 1\n" + round_kernel.SOURCE.read_text())
    monkeypatch.setattr(round_kernel, "SOURCE", narrowed)
    assert round_kernel.build() == round_kernel.library_path()
    assert round_kernel.library_path().is_file()


@pytest.mark.slow
@pytest.mark.skipif(not BUILDABLE, reason="compiles with g++ on Linux x86-64")
def test_build_compiles_checks_and_installs_under_a_key_of_this_tensorflow(cache, capsys):
    from npu_jupyter.__main__ import main

    assert main(["build-kernel"]) == 0
    assert "rounding kernel ready:" in capsys.readouterr().out
    installed = list(cache.iterdir())
    assert installed == [round_kernel.library_path()]
    import tensorflow as tf

    assert installed[0].name.startswith(f"npu_emu_round-tf{tf.__version__}-")
    stamp = installed[0].stat().st_mtime_ns
    assert main(["build-kernel"]) == 0  # already there: kept, not rebuilt
    assert installed[0].stat().st_mtime_ns == stamp
    assert "(already built)" in capsys.readouterr().out


def _train(model, mode: str, steps: int, scale: float = 1.0):
    """Losses, flags and final variables of ``steps`` emulated steps of a tests/models.py V1Model."""
    import tensorflow as tf

    with model.graph.as_default():
        # A value to fetch: a ref variable's own tensor, a resource variable's first read (not its handle).
        variables = [getattr(v, "_graph_element", v).name for v in tf.compat.v1.global_variables()]
    with EmulatorSession(NpuConfig(precision_mode=mode), model.graph) as sess:
        sess.run(list(model.init_ops))
        losses, findings = [], []
        for step in range(steps):
            feeds = {k: v * scale if v.dtype == np.float32 else v for k, v in model.feed_dict_fn(8 + step).items()}
            losses.append(sess.run([model.loss, model.train_op], feeds)[0])
            finding = sess.last_report.non_finite
            findings.append(None if finding is None else (finding.first_op, finding.first_tensor, finding.step))
        return np.array(losses), findings, [sess.run(name) for name in variables]


@pytest.mark.skipif(not BUILDABLE, reason="needs the built kernel (Linux x86-64, g++)")
@pytest.mark.parametrize(
    ("build", "mode", "scale"),
    [
        ("mlp_v1", "allow_mix_precision", 1.0),  # ref variables: the weights' flags come from their roundings
        ("cnn_v1", "allow_mix_precision", 1.0),  # resource variables, batch norm's float32 slots
        ("cnn_v1", "force_fp16", 1.0),
        ("mlp_v1", "allow_mix_precision", 3e4),  # overflows: the same first non-finite op, step and tensor
    ],
)
def test_a_training_run_is_bit_identical_with_the_kernel_and_with_casts(build, mode, scale, monkeypatch):
    import models

    assert round_kernel.in_use(), round_kernel.status()
    kernel = _train(getattr(models, build)(), mode, 3, scale)
    monkeypatch.setenv(round_kernel.SWITCH_ENV, "0")
    casts = _train(getattr(models, build)(), mode, 3, scale)
    assert kernel[0].tobytes() == casts[0].tobytes()
    assert kernel[1] == casts[1]
    for a, b in zip(kernel[2], casts[2]):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if scale != 1.0:
        assert any(f is not None for f in kernel[1])  # the overflow case does find something
    else:
        assert kernel[1] == [None] * 3


@pytest.mark.skipif(not BUILDABLE, reason="needs the built kernel (Linux x86-64, g++)")
def test_flags_of_rounded_and_rounding_read_tensors_come_from_the_roundings(tf, hand):
    """No flag node of its own for a tensor an NpuEmuRound wrote or read; NpuEmuCheck for the others."""
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        big = tf.multiply(x, 1000.0, name="big")
        tf.reduce_sum(tf.subtract(big, 1.0, name="diff"), name="loss")
    with EmulatorSession(NpuConfig(), g, plan_fn=hand.plan_fn({"Mul"})) as sess:
        assert np.isinf(sess.run("loss:0", {"x:0": np.array([70.0, 1.0], np.float32)}))
        report = sess.last_report
        run = next(r for r in sess._exec.runs.values() if r.flags is not None)
        ops = [op for op in sess._exec.private.graph.get_operations() if op.name.startswith(run.prefix)]
    assert report.non_finite.first_op == "big"
    pack = next(op for op in ops if op.type == "Pack" and op.name.endswith("/sums"))
    sources = {t.op.type for t in pack.inputs}
    assert round_kernel.OP_TYPE in sources and sources <= {round_kernel.OP_TYPE, round_kernel.CHECK_OP_TYPE}
    assert not {"Sum", "L2Loss", "Reshape"} & {op.type for op in ops if "npu_emu_watch" in op.name}


def test_the_library_key_changes_with_the_source(monkeypatch, tmp_path):
    before = round_kernel.library_path()
    edited = tmp_path / "round_kernel.cc"
    edited.write_text(round_kernel.SOURCE.read_text() + "\n// edited\n")
    monkeypatch.setattr(round_kernel, "SOURCE", edited)
    round_kernel._build_key.cache_clear()
    try:
        assert round_kernel.library_path() != before
    finally:
        monkeypatch.undo()
        round_kernel._build_key.cache_clear()
    assert round_kernel.library_path() == before


def test_the_package_ships_the_source_and_a_check_that_runs_without_the_package():
    import ast

    assert round_kernel.SOURCE.is_file() and round_kernel.CHECK.is_file()
    assert os.path.dirname(round_kernel.SOURCE) == os.path.dirname(round_kernel.__file__)
    tree = ast.parse(Path(round_kernel.CHECK).read_text())
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert {alias.name for node in top for alias in node.names} <= {
        "annotations",
        "sys",
        "ModuleType",
        "TYPE_CHECKING",
        "np",
    } | {"numpy"}


def test_a_second_build_is_not_loaded_beside_the_first(monkeypatch, tmp_path):
    """TensorFlow would then refuse every NpuEmuRound ("Multiple OpKernel registrations")."""
    other = tmp_path / "kernels" / "npu_emu_round-other.so"
    other.parent.mkdir()
    other.write_bytes(b"")
    monkeypatch.setattr(round_kernel, "_LOADED", {"/somewhere/npu_emu_round-first.so": None})
    monkeypatch.setattr(round_kernel, "library_path", lambda: other)
    assert not round_kernel.in_use()
    assert "another build of it (npu_emu_round-first.so) is loaded in this process" in round_kernel.status()


def test_the_command_says_what_is_missing_in_one_line(monkeypatch, capsys):
    """No TensorFlow, or a failed build: one line on stderr, exit status 1, no traceback."""
    from npu_jupyter.__main__ import main
    from npu_jupyter._tensorflow_import import TensorFlowMissingError

    def missing(**_):
        raise TensorFlowMissingError("npu_jupyter: TensorFlow is not installed in this Python environment")

    monkeypatch.setattr(round_kernel, "library_path", lambda: Path("/nonexistent/npu_emu_round.so"))
    monkeypatch.setattr(round_kernel, "build", missing)
    assert main(["build-kernel"]) == 1
    assert capsys.readouterr().err == (
        "npu_jupyter build-kernel: npu_jupyter: TensorFlow is not installed in this Python environment\n"
    )
    with pytest.raises(SystemExit) as exit_:  # argparse: its usage and error on stderr
        main(["build-kernel", "--bogus"])
    assert exit_.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err
