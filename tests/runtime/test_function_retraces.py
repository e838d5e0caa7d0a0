"""A tf.function traced twice (a smaller last batch) gets two reports, and each says which trace it is."""

from __future__ import annotations

import numpy as np
import pytest

from npu_jupyter._runtime.functions import emulator as functions

pytestmark = pytest.mark.skipif(not functions.supported(), reason="needs TensorFlow >= 2.14 (AtomicFunction)")

CONFIG = {"precision_mode": "allow_mix_precision"}


def _retrace_notes(report):
    return [n for n in report.notes if n.startswith("TensorFlow traced ")]


def test_each_trace_of_a_retraced_function_says_which_trace_it_is_and_its_inputs():
    """ModelZoo ResNet101_ID0361's valid_step: batches of 8 then a last one of 4, two 'Calls of valid_step'."""
    import tensorflow as tf

    weights = tf.Variable(np.ones((4, 2), np.float32))

    @tf.function
    def valid_step(images, labels):
        return tf.reduce_mean(tf.matmul(images, weights)) + tf.cast(tf.reduce_sum(labels), tf.float32)

    def an_epoch():
        for batch in (8, 8, 4):
            valid_step(tf.ones((batch, 4)), tf.zeros((batch,), tf.int32))

    with functions.FunctionEmulation(CONFIG) as emulation:
        an_epoch()
    first, second = emulation.reports.values()
    assert (first.steps, second.steps) == (2, 1)
    (note,) = _retrace_notes(first)
    assert note.startswith("TensorFlow traced valid_step 2 times (")
    assert "this report is trace 1 of 2 (inputs (8, 4) float32, (8,) int32) and counts only its calls" in note
    (note,) = _retrace_notes(second)
    assert "this report is trace 2 of 2 (inputs (4, 4) float32, (4,) int32)" in note


def test_traces_whose_graph_inputs_read_alike_say_the_change_is_inside_an_argument():
    """tf_keras: fit's validation (batches of 16) and a later evaluate (batches of 32) trace the test function
    twice for one iterator argument, listed as "() resource" in both: the shape change is in its batches."""
    import tensorflow as tf

    @tf.function
    def step(iterator):
        return tf.reduce_sum(next(iterator))

    def batches(size):
        return iter(tf.data.Dataset.from_tensor_slices(np.ones((32, 4), np.float32)).batch(size, drop_remainder=True))

    with functions.FunctionEmulation(CONFIG) as emulation:
        step(batches(16))
        step(batches(32))
    notes = [_retrace_notes(report) for report in emulation.reports.values()]
    assert len(notes) == 2 and all(len(n) == 1 for n in notes)
    assert all("their graph inputs read alike, so what changed is inside an argument" in n[0] for n in notes)


def test_traces_with_other_graph_inputs_do_not_say_the_inputs_read_alike():
    import tensorflow as tf

    @tf.function
    def step(x):
        return tf.reduce_sum(x)

    with functions.FunctionEmulation(CONFIG) as emulation:
        step(tf.ones((8, 4)))
        step(tf.ones((4, 4)))
    notes = [n for report in emulation.reports.values() for n in _retrace_notes(report)]
    assert len(notes) == 2 and not any("read alike" in n for n in notes)


def test_a_function_traced_once_has_no_retrace_note():
    import tensorflow as tf

    @tf.function
    def train_step(x):
        return x * 2.0

    @tf.function
    def valid_step(x):
        return x + 1.0

    def an_epoch():
        for _ in range(2):
            train_step(tf.ones((8, 4)))
            valid_step(tf.ones((8, 4)))

    with functions.FunctionEmulation(CONFIG) as emulation:
        an_epoch()
    assert len(emulation.reports) == 2
    assert all(_retrace_notes(report) == [] for report in emulation.reports.values())


def test_two_tf_functions_of_one_python_name_are_not_called_retraces():
    """Two models' train steps (knowledge distillation: teacher, then student) are two functions, each traced once."""
    import tensorflow as tf

    def make_train_step(scale):
        @tf.function
        def train_step(x):
            return x * scale

        return train_step

    teacher_step, student_step = make_train_step(2.0), make_train_step(3.0)

    def both():
        teacher_step(tf.ones((8, 4)))
        student_step(tf.ones((4, 4)))

    with functions.FunctionEmulation(CONFIG) as emulation:
        both()
    assert len(emulation.reports) == 2
    assert all(_retrace_notes(report) == [] for report in emulation.reports.values())


def test_a_function_that_creates_its_variables_is_not_called_retraced_by_their_initialiser():
    """Keras 3's fit (here the ModelZoo VAE_ID2593): the first call of multi_step_on_iterator creates the
    optimizer's variables, so TensorFlow also runs initialize_variables, a helper made by the same
    tf.function. The function's one report said "traced multi_step_on_iterator 2 times ... this report is
    trace 2 of 2 ... each other trace has its own report", and no other report existed."""
    import tensorflow as tf

    class Scaled(tf.Module):
        def __init__(self) -> None:
            self.weights = None

        @tf.function
        def __call__(self, x):
            if self.weights is None:  # built on the first call, as Keras layers and optimizers are
                self.weights = tf.Variable(tf.ones((4, 2)))
            return tf.reduce_sum(tf.matmul(x, self.weights))

    model = Scaled()
    with functions.FunctionEmulation(CONFIG) as emulation:
        for _ in range(2):
            model(tf.ones((8, 4)))
    kinds = {key: report.function.helper for key, report in emulation.reports.items()}
    assert sorted(kinds.values(), key=str) == [None, "initializer"], kinds  # the helper ran: the case is real
    assert all(_retrace_notes(report) == [] for report in emulation.reports.values())
