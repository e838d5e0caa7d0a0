"""Traced functions are named as a Keras user knows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npu_jupyter._runtime.functions.labels import (
    caller,
    entry_points,
    keras3_entry,
    keras_entry,
    label,
    python_name,
    title_entries,
)


def test_the_python_name_of_a_traced_function_drops_tensorflows_prefix_and_counter():
    assert python_name("__inference_multi_step_on_iterator_211") == "multi_step_on_iterator"
    assert python_name("__inference_train_step_12") == "train_step"
    assert python_name("my_function") == "my_function"  # not a traced name: kept


def test_calls_from_inside_keras_fit_evaluate_and_predict_name_the_entry_point():
    import keras

    seen = []

    class Spy(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(keras_entry())

        def on_test_batch_end(self, batch, logs=None):
            seen.append(keras_entry())

        def on_predict_batch_end(self, batch, logs=None):
            seen.append(keras_entry())

    model = keras.Sequential([keras.layers.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 3), "float32"), np.ones((4, 1), "float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0, callbacks=[Spy()])
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[Spy()])
    model.predict(x, batch_size=4, verbose=0, callbacks=[Spy()])
    assert seen == ["Keras fit (train function)", "Keras evaluate (test function)", "Keras predict (predict function)"]


def test_code_outside_keras_keeps_its_python_function_name():
    def fit():  # a user's own function called fit is not Keras'
        return label("__inference_fit_7")

    assert fit() == "fit"


def test_where_a_call_came_from_names_fits_validation_and_any_entry_point_run_inside_another():
    assert caller(()) == "outside Keras"
    assert caller(("evaluate",)) == "in Keras evaluate"
    assert caller(("fit", "evaluate")) == "during Keras fit (validation)"  # fit validates through evaluate
    assert caller(("fit", "predict")) == "in Keras predict during Keras fit"  # a callback predicting


def test_fits_validation_runs_under_fit_and_evaluate_while_evaluate_alone_runs_under_evaluate():
    """Keras 3 and tf_keras both validate by calling evaluate inside fit; the stack holds both."""
    import keras

    seen = []

    class Spy(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.append(entry_points())

    model = keras.Sequential([keras.layers.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 3), "float32"), np.ones((4, 1), "float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0, validation_data=(x, y), callbacks=[Spy()])
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[Spy()])
    assert seen == [("fit", "evaluate"), ("evaluate",)]
    assert entry_points() == ()  # outside Keras


def test_fits_validation_is_titled_fits_validation_not_an_evaluate_the_user_never_called():
    """tf_keras fit(validation_data=...): the test function's report read "Keras evaluate (test function)"
    and a function it ran "update_state, run during Keras evaluate"."""
    import keras

    seen = []

    class Spy(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            seen.append((label("__inference_test_function_5"), label("__inference_update_state_3"), keras_entry()))

    model = keras.Sequential([keras.layers.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 3), "float32"), np.ones((4, 1), "float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0, validation_data=(x, y), callbacks=[Spy()])
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[Spy()])
    validation = "Keras fit's validation (test function)"
    assert seen == [
        (validation, "update_state, run during Keras fit (validation)", validation),
        ("Keras evaluate (test function)", "update_state, run during Keras evaluate", "Keras evaluate (test function)"),
    ]


def test_a_title_names_fit_with_evaluate_only_while_fit_validates():
    assert title_entries(("fit", "evaluate")) == ("fit", "evaluate")
    assert caller(title_entries(("fit", "evaluate"))) == "during Keras fit (validation)"
    assert title_entries(("evaluate",)) == ("evaluate",)
    assert title_entries(("fit", "predict")) == ("predict",)  # a callback predicting: predict's title
    assert title_entries(()) == ()


def test_keras_is_told_by_where_the_keras_libraries_are_installed_not_by_a_folder_named_keras(tmp_path):
    """A user's own package folder named keras (``project/keras/train.py`` defining ``fit``) is not Keras."""
    import importlib.util

    import tensorflow as tf

    from npu_jupyter._runtime.functions.labels import _is_keras

    for name in ("keras", "tf_keras"):  # Keras 3 and tf_keras; the legacy leg's Keras 2 has no tf_keras
        module = importlib.import_module(name) if importlib.util.find_spec(name) else None
        if module is not None:
            assert _is_keras(str(Path(module.__file__).parent / "src" / "engine" / "training.py"))
    assert _is_keras(str(Path(tf.__file__).parent / "python" / "keras" / "engine" / "training.py"))
    assert not _is_keras(str(tmp_path / "keras" / "src" / "train.py"))
    assert not _is_keras(str(Path(tf.__file__).parent / "python" / "ops" / "math_ops.py"))  # TensorFlow, not Keras

    own = tmp_path / "keras" / "src" / "trainer.py"  # a user's fit in a folder named keras: outside Keras
    own.parent.mkdir(parents=True)
    own.write_text("def fit(entry_points, keras3_entry):\n    return entry_points(), keras3_entry()\n")
    namespace: dict[str, object] = {}
    exec(compile(own.read_text(), str(own), "exec"), namespace)
    assert namespace["fit"](entry_points, keras3_entry) == ((), False)
