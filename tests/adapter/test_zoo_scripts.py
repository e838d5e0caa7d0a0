"""Real ModelZoo TF1 training scripts (tests/adapter/zoo) run with their adapter imports and calls as written.

Each script runs from a copy in a scratch directory (it writes next to itself and to ./output), under
``emulate_adapter()`` and inside a ``%%npu`` cell of a real IPython shell after ``%npu adapter emulate``,
with its options read from the script's own NpuOptimizer entries. TF 1.15 builds graphs by default; on
TF 2.x the test enters a graph for the script, as TF 1.15 would have.
"""

from __future__ import annotations

import math
import runpy
import shutil
import sys
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from npu_jupyter import adapter
from npu_jupyter._display.mime import MIME_TYPE

tf = pytest.importorskip("tensorflow")

ZOO = Path(__file__).with_name("zoo")
LENET_ARGS = [
    "--batch_size",
    "8",
    "--steps",
    "8",
    "--iteration_per_loop",
    "2",
    "--precision_mode",
    "allow_mix_precision",
]


@pytest.fixture
def workdir(tmp_path, monkeypatch, no_adapter):
    """A scratch copy of the zoo scripts as the working directory; their flags and modules forgotten after."""
    for path in ZOO.glob("*.py"):
        shutil.copy(path, tmp_path)
    (tmp_path / "test").mkdir()  # the zoo model directories have one (their launch scripts); LeNet writes into it
    (tmp_path / "output" / "ckpt_npu").mkdir(parents=True)  # LeNet saves there; TF's Saver needs the folder
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RANK_SIZE", "1")  # as the zoo's 1p launch scripts export it
    flags = tf.compat.v1.flags.FLAGS
    defined = set(flags)
    yield tmp_path
    for name in set(flags) - defined:
        delattr(flags, name)
    flags.unparse_flags()
    sys.modules.pop("zoo_data", None)


@pytest.fixture
def sessions(monkeypatch):
    """Every session the emulated adapter makes for a script, in order."""
    from npu_jupyter.adapter.tf1 import sessions as swap

    made = []
    real = swap.emulated_session

    def record(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(swap, "emulated_session", record)
    return made


def _run(script: Path, argv: list[str], monkeypatch) -> dict:
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    with tf.Graph().as_default():
        return runpy.run_path(str(script), run_name="__main__")


def _run_cell(ip, script: Path, argv: list[str], monkeypatch, line: str = "") -> list[dict]:
    """The script as one %%npu cell (``__file__`` set as %run sets it); its run reports."""
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    ip.run_line_magic("npu", "adapter emulate")
    ip.user_ns["__file__"] = str(script)
    with tf.Graph().as_default(), capture_output() as cap:
        ip.run_cell_magic("npu", line, script.read_text(encoding="utf-8"))
    return [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]


def _adam_steps(checkpoint: Path) -> int:
    """Adam's update count, read back from beta1_power (0.9 at the start, times 0.9 per update) in the checkpoint."""
    return round(math.log(tf.train.load_variable(str(checkpoint), "beta1_power")) / math.log(0.9)) - 1


# ---- LeNet_ID0127: `from npu_bridge.npu_init import *`, util.set_iteration_per_loop ---------------------


def test_lenet_trains_on_the_emulator_with_its_iteration_loop(workdir, sessions, monkeypatch):
    adapter.emulate_adapter()
    with pytest.warns(UserWarning, match="runs the step 2 times per sess.run"):
        _run(workdir / "zoo_lenet.py", LENET_ARGS, monkeypatch)
    assert sessions and all(s.backend == "emulator" for s in sessions)
    assert sessions[0].config.precision_mode == "allow_mix_precision"  # the script's own NpuOptimizer entry
    assert sessions[0].config.iterations_per_loop == 2
    assert _adam_steps(workdir / "output" / "ckpt_npu" / "mode.ckpt") == 8  # 4 runs x 2 steps: as counted
    result = (workdir / "test" / "output" / "performance_precision.txt").read_text(encoding="utf-8")
    assert "Final Accuracy accuracy" in result


def test_lenet_in_an_npu_cell_reads_its_options_and_the_cell_flags_win(ip, workdir, monkeypatch):
    argv = [*LENET_ARGS, "--loss_scale_flag", "1", "--loss_scale_value", "1024"]
    with pytest.warns(UserWarning, match="runs the step 2 times per sess.run"):  # said inside the cell too
        reports = _run_cell(ip, workdir / "zoo_lenet.py", argv, monkeypatch, "--dump-mode output")
    train = [r for r in reports if any(op["n"] == "IterationOp" for op in r["ops"])]
    assert train and all(r["run"]["backend"] == "emulator" for r in reports)
    assert train[0]["config"]["precision_mode"] == "allow_mix_precision"
    assert train[0]["config"]["iterations_per_loop"] == 2
    assert train[0]["config"]["dump_mode"] == "output"  # the cell's own flag
    assert _adam_steps(workdir / "output" / "ckpt_npu" / "mode.ckpt") <= 8  # the loss scale may skip a step


# ---- Multi-Layer_Perceptron_ID0628: star import, util loop, npu_tf_optimizer, loss scaling ---------------


def _iris(workdir: Path) -> None:
    import numpy as np

    rng = np.random.RandomState(0)
    names = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    for split, n in (("train", 30), ("test", 12)):
        rows = [",".join([*(f"{v:.1f}" for v in rng.rand(4) * 7), names[i % 3]]) for i in range(n)]
        (workdir / f"iris.{split}").write_text("\n".join(rows) + "\n", encoding="utf-8")


MLP_ARGS = ["--training_epochs", "40", "--display_steps", "20", "--precision_mode", "allow_mix_precision"]


def test_mlp_trains_on_the_emulator_with_its_loss_scale_and_loop(workdir, sessions, monkeypatch, capsys):
    _iris(workdir)
    adapter.emulate_adapter()
    with pytest.warns(UserWarning, match="runs the step 10 times per sess.run"):
        namespace = _run(workdir / "zoo_mlp.py", [*MLP_ARGS, "--data_path", str(workdir)], monkeypatch)
    (session,) = sessions
    assert session.backend == "emulator" and session.config.precision_mode == "allow_mix_precision"
    assert session.config.iterations_per_loop == 10 and session.config.enable_data_pre_proc is True
    assert type(namespace["optimizador"]).__name__ == "Operation"
    out = capsys.readouterr().out
    assert "Epoch: 2 loss" in out and "Epoch: 4 loss" in out and "accuracy:" in out


def test_mlp_in_an_npu_cell(ip, workdir, monkeypatch):
    _iris(workdir)
    with pytest.warns(UserWarning, match="runs the step 10 times per sess.run"):
        reports = _run_cell(ip, workdir / "zoo_mlp.py", [*MLP_ARGS, "--data_path", str(workdir)], monkeypatch)
    train = [r for r in reports if any(op["n"] == "IterationOp" for op in r["ops"])]
    assert train and train[0]["config"]["precision_mode"] == "allow_mix_precision"
    assert train[0]["run"]["backend"] == "emulator"


# ---- shufflenetv2_ID0185: NPURunConfig + NPUEstimator (TensorFlow with tf.estimator, the legacy leg) -----


@pytest.fixture
def shufflenet(workdir, monkeypatch):
    """The shufflenetv2 project copied in, with train/val tfrecords under ./dataset as its paths expect."""
    for path in (ZOO / "shufflenetv2").glob("*.py"):
        shutil.copy(path, workdir)
    from input_pipeline import write_records

    for split, count in (("train", 24), ("val", 8)):
        (workdir / "dataset" / split).mkdir(parents=True)
        write_records(workdir / "dataset" / split / f"{split}-0.tfrecords", count)
    yield workdir / "train.py"
    for name in ("model", "architecture", "input_pipeline"):
        sys.modules.pop(name, None)


def _needs_estimator():
    from npu_jupyter.adapter.tf1.estimator import estimator_module

    if estimator_module() is None:
        pytest.skip("TensorFlow >= 2.16 has no tf.estimator: the legacy leg (TF 2.6.5) runs this test")


def test_shufflenet_without_tf_estimator_stops_at_npu_estimator_with_the_clear_error(shufflenet, monkeypatch):
    from npu_jupyter.adapter.surface import NotEmulatedError
    from npu_jupyter.adapter.tf1.estimator import estimator_module

    if estimator_module() is not None:
        pytest.skip("this TensorFlow has tf.estimator: the script trains (test_shufflenet_trains_...)")
    adapter.emulate_adapter()
    with pytest.raises(NotEmulatedError, match=r"NPUEstimator needs TensorFlow's Estimator .*this is TensorFlow 2"):
        _run(shufflenet, [], monkeypatch)


def test_shufflenet_trains_its_npu_estimator_on_the_emulator(shufflenet, sessions, monkeypatch):
    _needs_estimator()
    adapter.emulate_adapter()
    with pytest.warns(UserWarning, match="iterations_per_loop=10 runs 10 steps per session run on the device"):
        _run(shufflenet, [], monkeypatch)
    assert sessions and all(s.backend == "emulator" for s in sessions)  # MonitoredTrainingSession's, swapped
    config = sessions[0].config
    assert config.precision_mode == "allow_mix_precision" and config.iterations_per_loop == 10
    checkpoint = tf.train.latest_checkpoint(str(shufflenet.parent / "model_dir"))
    assert tf.train.load_variable(checkpoint, "global_step") == 6  # StopAtStepHook(last_step=NUM_STEPS)


def test_shufflenet_in_an_npu_cell_reports_the_estimators_training(ip, shufflenet, monkeypatch):
    _needs_estimator()
    reports = _run_cell(ip, shufflenet, [], monkeypatch, "--dump-mode output")
    train = [r for r in reports if any(op["n"] == "IterationOp" for op in r["ops"])]
    assert train and all(r["run"]["backend"] == "emulator" for r in train)
    assert train[0]["config"]["precision_mode"] == "allow_mix_precision"  # NPURunConfig's argument
    assert train[0]["config"]["dump_mode"] == "output"


# ---- fasttext_ftodft: `from npu_bridge.npu_init import *`, training in MonitoredTrainingSession ---------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fasttext(workdir):
    """The fasttext project copied in, its batches file written; its settings at small sizes (FasttextSettings' fields).

    Variables are TF 1.15's default reference variables: its sparse GradientDescent update casts the float64
    learning rate the script computes, which TF 2.6's resource-variable path refuses.
    """
    from types import SimpleNamespace

    resource = tf.compat.v1.resource_variables_enabled()
    tf.compat.v1.disable_resource_variables()

    for path in (ZOO / "fasttext").iterdir():
        shutil.copy(path, workdir)
    from input import write_batches

    settings = SimpleNamespace(
        batches_file=str(workdir / "batches.tfrecord"), log_dir=str(workdir / "log"), steps=6, vocabulary_size=50,
        batch_size=4, embedding_size=8, num_sampled=5, num_buckets=200, validation_words="", validation_words_list=[],
        profile=False, learnrate=0.1, job="worker", index=0, workers_list=[f"localhost:{_free_port()}"], ps_list=[],
    )  # fmt: skip
    write_batches(settings.batches_file, 8, settings.batch_size, settings.num_buckets, settings.vocabulary_size)
    yield settings
    for name in ("training", "model", "inference", "input"):
        sys.modules.pop(name, None)
    if resource:
        tf.compat.v1.enable_resource_variables()


def test_fasttext_trains_in_monitored_training_session_on_the_emulator(fasttext, sessions):
    adapter.emulate_adapter()
    import training

    training.train(fasttext)
    assert sessions and all(s.backend == "emulator" for s in sessions)  # MonitoredTrainingSession's session
    config = sessions[0].config
    assert config.customize_dtypes.endswith("customize_dtypes.cfg")  # the script's own NpuOptimizer entry
    checkpoint = tf.train.latest_checkpoint(fasttext.log_dir)
    assert tf.train.load_variable(checkpoint, "global_step") == 6  # StopAtStepHook(last_step=settings.steps)


def test_fasttext_in_an_npu_cell_reports_the_monitored_sessions_training(ip, fasttext):
    ip.run_line_magic("npu", "adapter emulate")
    ip.user_ns["zoo_settings"] = fasttext
    with capture_output() as cap:
        ip.run_cell_magic("npu", "--precision allow_mix_precision", "import training\ntraining.train(zoo_settings)")
    reports = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    train = [r for r in reports if any(op["n"].startswith("optimizer/") for op in r["ops"])]
    assert train and all(r["run"]["backend"] == "emulator" for r in train)
    assert train[0]["config"]["customize_dtypes"].endswith("customize_dtypes.cfg")  # the script's entry
    assert train[0]["config"]["precision_mode"] == "allow_mix_precision"  # the cell's flag
