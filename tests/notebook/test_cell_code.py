"""An error in a %%npu cell looks as it would in a plain cell: the cell's number, its lines, no magic frames.

(Tests of ``npu_jupyter/_notebook/cell_code.py``, through ``run_cell`` of a real IPython shell, which is
what a notebook's kernel calls: the traceback is what IPython prints for the cell.)
"""

from __future__ import annotations

import re
import sys

import IPython
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

ANSI = re.compile(r"\x1b\[[0-9;]*m")
NEW_LABELS = int(IPython.__version__.split(".")[0]) >= 8  # "Cell In[7], line 3" (IPython 7: <ipython-input-7-...>)


def _run(ip, cell):
    """Run ``cell`` as a notebook does; its printed output (the traceback) without colours."""
    with capture_output() as cap:
        result = ip.run_cell(cell, store_history=True)
    return result, ANSI.sub("", cap.stdout + cap.stderr)


def _where(number: int, line: int) -> str:
    return f"Cell In[{number}], line {line}" if NEW_LABELS else f"<ipython-input-{number}-"


def test_a_name_error_shows_the_cells_own_number_and_line_and_no_magic_frames(ip):
    result, shown = _run(ip, "%%npu\ny = 2\nundefined_name + 1\n")
    assert isinstance(result.error_in_exec, NameError)  # the cell failed, so "run all" stops there
    assert _where(result.execution_count, 3) in shown  # line 3 of the notebook cell (line 1 is %%npu)
    assert "undefined_name + 1" in shown
    assert "magics.py" not in shown and "cell_code.py" not in shown and "run_cell_magic" not in shown
    assert "In[0]" not in shown


def test_the_users_own_frames_below_the_cell_are_kept(ip):
    result, shown = _run(ip, "%%npu --quiet\ndef f():\n    return 1 / 0\nf()\n")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert shown.count(f"In[{result.execution_count}]" if NEW_LABELS else "<ipython-input-") == 2  # cell, then f
    assert "return 1 / 0" in shown and "magics.py" not in shown


def test_the_full_traceback_stays_for_debug_and_is_shown_once(ip):
    result, _ = _run(ip, "%%npu\nundefined_name\n")
    assert not hasattr(result.error_in_exec, "_render_traceback_")  # used once, not left on the error
    assert sys.last_traceback is not None  # %debug still has every frame


def test_a_syntax_error_names_the_cell_line_without_frames(ip):
    with pytest.raises(UsageError) as caught:
        ip.run_cell_magic("npu", "", "y = 2\nif y\n    pass\n")
    text = str(caught.value)
    assert "line 3" in text and "if y" in text and "SyntaxError" in text and "not run" in text
    result, shown = _run(ip, "%%npu\nif y\n")
    assert "magics.py" not in shown and "cell_code.py" not in shown
    assert _where(result.execution_count, 2) in shown or not NEW_LABELS


@pytest.mark.skipif(not NEW_LABELS, reason="IPython 7 names cells <ipython-input-N-...>")
def test_a_later_plain_error_still_shows_normally(ip):
    _run(ip, "%%npu\nundefined_name\n")
    result, shown = _run(ip, "other_undefined\n")
    assert _where(result.execution_count, 1) in shown and "other_undefined" in shown


def test_autograph_converts_a_lambda_defined_in_the_cell(ip):
    """AutoGraph parses a lambda's whole cell: the cached cell text must be Python (was: the %%npu line).

    Unconverted, ``if x > 0`` on a graph tensor fails; converted, it is a ``tf.cond``. Keras and
    ``Dataset.map(lambda ...)`` code in pasted ModelZoo scripts goes through the same path.
    """
    pytest.importorskip("tensorflow")
    result, shown = _run(
        ip,
        "%%npu --quiet\nimport tensorflow as tf\nsigned = tf.function(lambda x: x * 2.0 if x > 0 else -x)\n"
        "value = float(signed(tf.constant(3.0)))\n",
    )
    assert result.success, shown
    assert ip.user_ns["value"] == 6.0 and "AutoGraph could not transform" not in shown
