"""The corpus harness itself: what it counts as lowered, and how it stops queue-runner threads.

Small graphs built here, so these run fast (not ``slow``); the corpus models run in ``test_corpus.py``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from corpus import runner
from corpus.corpus import CorpusModel


def _model(graph: Any, loss: Any, fetches: Any, init: list, queue_runners: bool = False, **extra: Any) -> CorpusModel:
    return CorpusModel(
        name="tiny",
        architecture="ResNet",
        source="-",
        idioms=(),
        graph=graph,
        init=init,
        train_fetches=fetches,
        loss=loss.name,
        config={"kind": "session", "parameter_map": {}},
        queue_runners=queue_runners,
        extra=extra,
    )


def test_ops_the_script_writes_in_float16_are_not_counted_as_lowered():
    import tensorflow as tf

    import npu_jupyter
    from npu_jupyter import NpuConfig

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        w = v1.get_variable("w", [8, 8], initializer=v1.ones_initializer())
        y = tf.matmul(x, w, name="mm32")
        z = tf.matmul(tf.cast(y, tf.float16, name="to16"), tf.cast(w, tf.float16, name="w16"), name="mm16")
        loss = tf.reduce_mean(tf.cast(z, tf.float32), name="loss")
    plan = npu_jupyter.plan(graph, NpuConfig(precision_mode="allow_mix_precision"), fetches=[loss])
    assert plan.ops["mm16"].output_dtypes == ["float16"]  # float16 in the plan, but as the script wrote it

    lowered = runner.lowered_ops(plan, graph)

    assert "mm32" in lowered  # float32 MatMul the mixed-precision config lowers
    assert not {"to16", "w16", "mm16"} & set(lowered)


def _queue_fed_model() -> tuple[CorpusModel, Any]:
    """A hand-fed FIFOQueue drained by a ``batch`` queue runner: the FaceNet input pipeline in small."""
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        values = v1.placeholder(tf.float32, [None], name="values")
        queue = tf.queue.FIFOQueue(100, [tf.float32], shapes=[()])
        enqueue = queue.enqueue_many([values])
        batch = v1.train.batch([queue.dequeue()], batch_size=2, capacity=8)
        loss = tf.reduce_sum(batch, name="loss")
    before = [(enqueue, {values: np.arange(6, dtype=np.float32)})]
    return _model(graph, loss, loss, [], queue_runners=True, before_training=before), graph


def test_queue_runner_threads_end_before_the_session_closes():
    """The upstream queue empties after 3 batches: its runner thread must not outlive the session."""
    model, _ = _queue_fed_model()
    died: list[str] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: died.append(f"{args.thread.name}: {args.exc_type.__name__}")
    try:
        training = runner.plain_run(model, steps=2)
        alive = [t.name for t in threading.enumerate() if t.name.startswith("QueueRunnerThread")]
    finally:
        threading.excepthook = previous

    assert training.losses == [1.0, 5.0]
    assert alive == [] and died == []


def test_queue_closers_are_made_once_per_model(tmp_path: Path):
    model, graph = _queue_fed_model()
    first = runner.queue_closers(model)
    ops = len(graph.get_operations())

    assert len(first) == 2  # the hand-fed queue and the batch queue
    assert runner.queue_closers(model) is first and len(graph.get_operations()) == ops


def test_the_figures_table_gathers_the_rows_of_every_worker_of_this_run(tmp_path, monkeypatch):
    # Under pytest-xdist each worker holds the rows of its own models; the table is made from all rows
    # saved with this run's id, and rows left by an earlier run are not shown.
    from corpus import test_corpus

    monkeypatch.setattr(test_corpus, "ROWS_DIR", tmp_path)
    monkeypatch.setattr(test_corpus, "RUN_ID", "run-2")
    (tmp_path / "zoo_old.json").write_text(json.dumps({"run": "run-1", "row": {"model": "old"}}), encoding="utf-8")
    (tmp_path / "zoo_other.json").write_text(json.dumps({"run": "run-2", "row": {"model": "other"}}), encoding="utf-8")
    monkeypatch.setattr(test_corpus, "ROWS", {"zoo_mine": {"model": "mine"}})
    rows = test_corpus._rows_of_this_run()
    assert rows == {"zoo_mine": {"model": "mine"}, "zoo_other": {"model": "other"}}
