"""Run one corpus model the way its script does: plain TF, the planner, and the emulator with debug on.

Shared by ``test_corpus.py`` (assertions + the figures table) and ``bench/corpus_bench.py`` (timings
as same-run ratios). Every number this module produces is measured on this CPU (wall times) or
predicted by the planner (placements, precision); none is an NPU figure.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from corpus.corpus import CorpusModel

CORPUS_DIR = Path(__file__).resolve().parent
STEPS = 3
#: Steps of the separate debug run (dump, overflow detection, profiling); its one step is dumped. Each
#: run graph counts its own steps, so step 0 of the initialiser graph is dumped too: the read-back check
#: (test_corpus._check_debug) asserts that ``load_dump`` opens the training step's graph (the one that
#: fetches the loss) and finds the loss op in it. One step, not two: a second step with dump on for one
#: step only is another run graph (a second emulator rewrite and TensorFlow set-up of the whole model),
#: about half the debug run's time, for no further check.
DEBUG_STEPS = 1
#: Seconds the queue-runner threads get to end after every queue is closed.
STOP_GRACE_S = 10.0


def module_names() -> list[str]:
    """Every ``zoo_*.py`` in the corpus folder (corpus2's models are found the same way after merge)."""
    return sorted(p.stem for p in CORPUS_DIR.glob("zoo_*.py"))


def declared(module_name: str) -> dict[str, Any]:
    """The module's ``ARCHITECTURE`` and ``IDIOMS`` constants, read from its source without importing it.

    Parsing (not importing) keeps the coverage check fast and free of TensorFlow.
    """
    tree = ast.parse((CORPUS_DIR / f"{module_name}.py").read_text(encoding="utf-8"))
    found: dict[str, Any] = {}
    for node in tree.body:
        is_name = isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        if is_name and node.targets[0].id in ("ARCHITECTURE", "IDIOMS"):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def build(module_name: str, files_dir: Path) -> CorpusModel:
    """Import ``corpus.<module_name>`` and build its model into a fresh graph."""
    files_dir.mkdir(parents=True, exist_ok=True)
    module = importlib.import_module(f"corpus.{module_name}")
    return module.build(files_dir)


def npu_config(model: CorpusModel) -> Any:
    """The script's NpuConfig: a real ConfigProto filled as the script fills it, or NPURunConfig kwargs."""
    from npu_jupyter import NpuConfig

    cfg = model.config
    if cfg["kind"] == "estimator":
        return NpuConfig.from_run_config_kwargs(cfg["kwargs"])
    return NpuConfig.from_config_proto(script_proto(cfg))


def script_proto(cfg: dict[str, Any]) -> Any:
    """``tf.compat.v1.ConfigProto`` with the NpuOptimizer custom optimizer, typed by the Python value."""
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    proto = tf.compat.v1.ConfigProto()
    custom_op = proto.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    for key, value in cfg["parameter_map"].items():
        if isinstance(value, bool):
            custom_op.parameter_map[key].b = value
        elif isinstance(value, int):
            custom_op.parameter_map[key].i = value
        else:
            custom_op.parameter_map[key].s = tf.compat.as_bytes(str(value))
    for option, state in cfg.get("rewrite_options", {}).items():  # e.g. {"remapping": "OFF"}
        setattr(proto.graph_options.rewrite_options, option, getattr(rewriter_config_pb2.RewriterConfig, state))
    return proto


def debug_config(config: Any, out: Path, model: CorpusModel) -> Any:
    """The script's config plus dump (all), overflow detection and profiling, all writing under ``out``."""
    options = {
        "enable_dump": True,
        "dump_path": str(out / "dump"),
        "dump_mode": model.extra.get("dump_mode", "all"),
        "enable_dump_debug": True,
        "dump_debug_mode": "all",
        "profiling_mode": True,
        "profiling_options": json.dumps({"output": str(out / "profiling"), "training_trace": "on", "task_trace": "on"}),
    }
    # Dump the debug run's last step only (the adapter's dump_step grammar): "all" of every step of a
    # 30k-op graph is 100k+ files; one step proves dump and read-back without dominating the corpus time.
    # Step 0 of every run graph when the debug run has one step (see DEBUG_STEPS).
    options["dump_step"] = model.extra.get("dump_step", str(DEBUG_STEPS - 1))
    (out / "dump").mkdir(parents=True, exist_ok=True)
    (out / "profiling").mkdir(parents=True, exist_ok=True)
    return config.copy(**options)


@dataclass
class Training:
    """Three training steps of one session: per-step losses and wall times (measured on this CPU)."""

    losses: list[float] = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)
    reports: list[Any] = field(default_factory=list)  # emulator RunReports of the training steps

    @property
    def median_s(self) -> float:
        return statistics.median(self.step_s) if self.step_s else float("nan")


def train(
    model: CorpusModel, session: Any, steps: int = STEPS, on_step: Callable[[int], None] | None = None
) -> Training:
    """``init``, whatever the script runs before its loop, then ``steps`` runs of the script's fetches.

    The loss is fetched in the same run (``{"fetches": ..., "loss": ...}``) so no extra run graph exists.
    """
    import tensorflow as tf

    result = Training()
    coord = threads = closers = None
    for op in model.init:
        session.run(op)
    for fetches, feed in model.extra.get("before_training", []):
        session.run(fetches, feed)
    if model.queue_runners:
        closers = queue_closers(model)
        coord = tf.compat.v1.train.Coordinator()
        with model.graph.as_default():
            threads = tf.compat.v1.train.start_queue_runners(sess=session, coord=coord)
    loss = model.graph.get_tensor_by_name(model.loss)
    try:
        for step in range(steps):
            feed = model.feed_fn(step) if model.feed_fn else None
            start = time.perf_counter()
            out = session.run({"fetches": model.train_fetches, "loss": loss}, feed_dict=feed)
            result.step_s.append(time.perf_counter() - start)
            result.losses.append(float(out["loss"]))
            report = getattr(session, "last_report", None)
            if report is not None:
                result.reports.append(report)
            if on_step:
                on_step(step)
    finally:
        if coord is not None:
            stop_queue_runners(session, coord, threads, closers or [])
    return result


#: Queue ops (resource and ref handles) whose pending dequeues a queue-runner thread may block on.
QUEUE_OPS = {
    "FIFOQueueV2": "QueueCloseV2",
    "PaddingFIFOQueueV2": "QueueCloseV2",
    "RandomShuffleQueueV2": "QueueCloseV2",
    "PriorityQueueV2": "QueueCloseV2",
    "FIFOQueue": "QueueClose",
    "PaddingFIFOQueue": "QueueClose",
    "RandomShuffleQueue": "QueueClose",
    "PriorityQueue": "QueueClose",
}


def queue_closers(model: CorpusModel) -> list[Any]:
    """One ``close(cancel_pending_enqueues=True)`` op per queue in the graph, made once per model.

    A queue runner's own cancel op closes only the queue it fills; its thread can still sit in a dequeue
    from an upstream queue the script fills by hand (FaceNet's path queue), so only closing every queue
    lets the thread see the end of input and return before the session closes. Made on first use (after
    the op count is taken) and kept in ``model.extra`` so every session runs the same ops.
    """
    import tensorflow as tf

    if "queue_closers" not in model.extra:
        closers = []
        with model.graph.as_default(), tf.name_scope("corpus_runner"):
            for op in model.graph.get_operations():
                close = QUEUE_OPS.get(op.type)
                if close == "QueueCloseV2":
                    closers.append(tf.raw_ops.QueueCloseV2(handle=op.outputs[0], cancel_pending_enqueues=True))
                elif close == "QueueClose":
                    closers.append(tf.raw_ops.QueueClose(handle=op.outputs[0], cancel_pending_enqueues=True))
        model.extra["queue_closers"] = closers
    return model.extra["queue_closers"]


def stop_queue_runners(session: Any, coord: Any, threads: list[Any], closers: list[Any]) -> None:
    """Stop the queue-runner threads before the session closes, so none dies on a closed session.

    ``request_stop`` ends the runners' loops, closing every queue wakes the threads blocked in a dequeue or
    enqueue (a closed empty queue ends them with OutOfRange, a clean stop), and ``join`` waits for all of
    them: a thread still alive after the grace period raises instead of being left to print a traceback.
    """
    coord.request_stop()
    if closers:
        session.run(closers)
    deadline = time.monotonic() + STOP_GRACE_S
    for thread in threads:  # returns as soon as the threads end (Coordinator.join sleeps in doubling steps)
        thread.join(max(deadline - time.monotonic(), 0.0))
    coord.join(threads, stop_grace_period_secs=0)  # raises a runner thread's error, or names a straggler


def plain_run(model: CorpusModel, steps: int = STEPS) -> Training:
    """The script's training in a plain ``tf.compat.v1.Session`` (float32 on this CPU)."""
    import tensorflow as tf

    with tf.compat.v1.Session(graph=model.graph) as sess:
        return train(model, sess, steps)


def timed_plan(model: CorpusModel, config: Any) -> tuple[Any, float]:
    """``npu_jupyter.plan`` on the script's fetches, and its wall time in ms (measured on this CPU)."""
    import npu_jupyter

    start = time.perf_counter()
    result = npu_jupyter.plan(model.graph, config, fetches=model.train_fetches)
    return result, (time.perf_counter() - start) * 1000.0


def emulated_run(model: CorpusModel, config: Any, steps: int = STEPS) -> Training:
    """The script's training in the emulator under ``config`` (precision as the plan decides)."""
    import npu_jupyter

    with npu_jupyter.session(config, model.graph, backend="emulator") as sess:
        return train(model, sess, steps)


def lowered_ops(plan: Any, graph: Any) -> list[str]:
    """Ops the plan computes in a narrower float than ``graph`` declares (the zoo check's own count).

    An op the script already writes in float16 (BERT's manual-fp16 encoder, a Cast to float16) is not
    counted: only ops the NPU config lowers are, which is what the emulator must then round.
    """
    from npu_jupyter._zoo_check.task import lowered_ops as count

    return count(plan, graph)


def files_under(path: Path) -> int:
    """How many files a dump or profiling folder holds."""
    return sum(1 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def finite(values: list[float]) -> bool:
    return bool(values) and all(math.isfinite(v) for v in values)
