"""Names a Keras user recognises for the traced functions a cell runs.

TensorFlow names a traced function after its Python function plus a counter
(``__inference_multi_step_on_iterator_211``), and Keras 3 uses the same Python function for ``fit``,
``evaluate`` and ``predict``; the report would show three look-alike names. When a function is first
called, the Python stack still holds the Keras entry point that called it, so its report can say
"Keras fit (train function)". Code outside Keras keeps its Python function name.

Only the step function the entry point runs (:data:`_KERAS_STEP_FUNCTIONS`) carries the entry point's
name. Other functions called while it runs keep their own name and say when they ran
("update_state, run during Keras fit"); TensorFlow's own helpers (:data:`_HELPERS`, such as
``initialize_variables``, which a ``tf.function`` that creates variables runs once before its first
call) say what they do, and :func:`helper_kind` lets the cell fold them into its "also ran" line.

A title names the entry point of the function's first call ("Keras fit's validation (test function)"
while fit validates, see :func:`title_entries`), but one function can run under several:
Keras 2's and Keras 3's ``fit(validation_data=...)`` validate by calling ``evaluate``, whose test
function a later ``evaluate`` calls again. Each call's entry points (:func:`entry_points`) say where it
came from (:func:`caller`: "during Keras fit (validation)", "in Keras evaluate"), so the report can
split its calls instead of counting fit's validation as evaluate calls.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
from types import FrameType

#: Keras entry points -> which of the model's functions they run.
_KERAS_ENTRIES = {
    "fit": "train function",
    "train_on_batch": "train function",
    "evaluate": "test function",
    "test_on_batch": "test function",
    "predict": "predict function",
    "predict_on_batch": "predict function",
}
#: The functions Keras builds for fit/evaluate/predict and calls per step (Keras 3; tf_keras and Keras 2).
_KERAS_STEP_FUNCTIONS = frozenset(
    {
        "multi_step_on_iterator",
        "one_step_on_iterator",
        "one_step_on_data",
        "one_step_on_data_distributed",
        "multi_step_on_data",
        "train_function",
        "test_function",
        "predict_function",
        "shard_test_function",
    }
)
#: TensorFlow's helper functions -> (what they do, their kind for the cell's "also ran" line).
_HELPERS = {"initialize_variables": ("variable initialisation", "initializer")}
_TRACED_NAME = re.compile(r"^__(?:inference|forward|backward)_(.+?)_\d+$")


def python_name(function_name: str) -> str:
    """The Python function a traced function was made from (``__inference_step_12`` -> ``step``)."""
    match = _TRACED_NAME.match(function_name)
    return match.group(1) if match else function_name


def title_entries(entries: tuple[str, ...]) -> tuple[str, ...]:
    """The entry points a title names: the innermost, or ("fit", "evaluate") while fit validates.

    Fit's validation runs inside ``evaluate``, which the user did not call: a title naming the innermost
    entry point alone read "Keras evaluate" for it.
    """
    return entries[-2:] if _validating(entries) else entries[-1:]


def _validating(entries: tuple[str, ...]) -> bool:
    """True when ``entries`` end with fit running evaluate: fit's validation."""
    return entries[-2:] == ("fit", "evaluate")


def _entry_title(entries: tuple[str, ...]) -> str:
    """The title's entry point: "Keras fit's validation" or "Keras evaluate" (non-empty :func:`title_entries`)."""
    return "Keras fit's validation" if _validating(entries) else f"Keras {entries[-1]}"


def _ran_under(entries: tuple[str, ...]) -> str:
    """Where a function ran: "during Keras fit (validation)", "during Keras evaluate" (non-empty :func:`title_entries`)."""
    return "during Keras fit (validation)" if _validating(entries) else f"during Keras {entries[-1]}"


def entry_points(frame: FrameType | None = None) -> tuple[str, ...]:
    """The Keras entry points on the calling stack, outermost first (("fit", "evaluate") while fit validates)."""
    frame = frame or sys._getframe(1)
    found: list[str] = []
    while frame is not None:
        name = str(frame.f_code.co_name)
        if name in _KERAS_ENTRIES and _is_keras(frame.f_code.co_filename) and found[-1:] != [name]:
            found.append(name)  # an entry point calling its own namesake (a subclass's super().fit) counts once
        frame = frame.f_back
    return tuple(reversed(found))


def caller(entries: tuple[str, ...]) -> str:
    """Where a call came from, as a report says it: "in Keras evaluate", "during Keras fit (validation)".

    ``entries`` are :func:`entry_points` (outermost first); none is "outside Keras". ``evaluate`` run by
    ``fit`` is fit's validation; any other entry point run by another says both ("in Keras predict
    during Keras fit", a callback predicting).
    """
    if not entries:
        return "outside Keras"
    *outer, inner = entries
    if _validating(entries):
        words, outer = [_ran_under(entries)], outer[:-1]
    else:
        words = [f"in Keras {inner}"]
    return " ".join([*words, *(f"during Keras {name}" for name in reversed(outer))])


def keras3_entry(frame: FrameType | None = None) -> bool:
    """True when a Keras 3 entry point (installed ``keras/src/...``, TF >= 2.16's Keras) is on the calling stack."""
    frame = frame or sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        found = _keras_package(frame.f_code.co_filename) if name in _KERAS_ENTRIES else None
        if found is not None and found[0] == "keras" and found[1].startswith("src/"):
            return True
        frame = frame.f_back
    return False


def keras_entry(frame: FrameType | None = None) -> str | None:
    """The Keras entry point on the calling stack ("Keras fit (train function)"), else None.

    Fit's validation is "Keras fit's validation (test function)": the user called fit, not evaluate.
    """
    entries = title_entries(entry_points(frame or sys._getframe(1)))
    return f"{_entry_title(entries)} ({_KERAS_ENTRIES[entries[-1]]})" if entries else None


def label(function_name: str, frame: FrameType | None = None) -> str:
    """What a report calls a traced function.

    The step function a Keras entry point runs: the entry point ("Keras fit (train function)", "Keras
    fit's validation (test function)"). A TensorFlow helper: what it does ("variable initialisation
    (initialize_variables)"). Any other function: its Python name, with the Keras entry point it ran
    under, if any ("update_state, run during Keras fit (validation)").
    """
    python = python_name(function_name)
    entries = title_entries(entry_points(frame or sys._getframe(1)))
    if python in _HELPERS:
        text = f"{_HELPERS[python][0]} ({python})"
    elif entries and python in _KERAS_STEP_FUNCTIONS:
        return f"{_entry_title(entries)} ({_KERAS_ENTRIES[entries[-1]]})"
    else:
        text = python
    return f"{text}, run {_ran_under(entries)}" if entries else text


def helper_kind(function_name: str) -> str | None:
    """Kind of a TensorFlow helper function ("initializer" for initialize_variables), else None."""
    found = _HELPERS.get(python_name(function_name))
    return None if found is None else found[1]


#: The installed Keras libraries: package -> folders under it that hold Keras (tensorflow's own old copy).
_KERAS_PACKAGES = {"keras": ("",), "tf_keras": ("",), "tensorflow": ("python/keras/",)}


@functools.lru_cache(maxsize=1)
def _keras_roots() -> tuple[tuple[str, str], ...]:
    """(package, folder ending in "/") of each Keras library installed, where Python imports it from.

    Read from the import system, not from a path's words: a user's own folder named ``keras`` (a
    project's ``keras/train.py`` defining ``fit``) is not Keras. ``find_spec`` of a top-level package
    locates it without importing it.
    """
    roots = []
    for package, subfolders in _KERAS_PACKAGES.items():
        module = sys.modules.get(package)
        locations = getattr(module, "__path__", None)
        if locations is None:
            try:
                spec = importlib.util.find_spec(package)
            except (ImportError, ValueError):  # a broken or half-imported package: not Keras
                spec = None
            locations = spec.submodule_search_locations if spec is not None else None
        for location in locations or ():
            folder = os.path.realpath(location).replace("\\", "/").rstrip("/") + "/"
            roots += [(package, folder + sub) for sub in subfolders]
    return tuple(roots)


@functools.lru_cache(maxsize=256)
def _keras_package(filename: str) -> tuple[str, str] | None:
    """(Keras library, path inside it) of a file of an installed Keras library, else None."""
    path = os.path.realpath(filename).replace("\\", "/")
    for package, root in _keras_roots():
        if path.startswith(root):
            return package, path[len(root) :]
    return None


def _is_keras(filename: str) -> bool:
    """True for a file of installed Keras 3, tf_keras or the Keras inside TensorFlow, not a user's own."""
    return _keras_package(filename) is not None


__all__ = [
    "caller",
    "entry_points",
    "helper_kind",
    "keras3_entry",
    "keras_entry",
    "label",
    "python_name",
    "title_entries",
]
