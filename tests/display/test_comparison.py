"""compare()'s HTML: a verdict line, differing tensors worst first, identical ones folded, fitted to the cell."""

from __future__ import annotations

import math
import re

import npu_jupyter  # noqa: F401 - registers the display layer's renderers
from npu_jupyter._display.comparison import PAGE, render
from npu_jupyter._runtime.observe.compare import Comparison, Row


def _row(op: str, cosine: float = 1.0, max_abs: float = 0.0, acc: float = 0.0, step: int | None = 0) -> Row:
    return Row(step, op, "output:0", (4, 8), cosine, max_abs, max_abs * 2, acc, max_abs / 2)


def _tutorial_like() -> Comparison:
    """218 tensors of which 20 differ, in dump order (the differing ones scattered), as in tutorial 04."""
    rows = []
    for k in range(218):
        if k % 11 == 3:
            rows.append(
                _row(f"gradients/dense_{k}/MatMul_grad/MatMul", 0.99999 - k * 1e-7, 1e-3 * (k % 7 + 1), 1e-4 * k)
            )
        else:
            rows.append(_row(f"op_{k}"))
    return Comparison(rows, [], [], title="Comparison of two dumps")


def _outside_details(page: str) -> str:
    return re.sub(r"<details>.*?</details>", "", page, flags=re.DOTALL)


def test_only_the_differing_tensors_are_listed_open_and_the_identical_ones_are_folded_with_a_count():
    comparison = _tutorial_like()
    page = comparison._repr_html_()
    assert page is not None
    differ = [r for r in comparison.rows if r.max_abs > 0]
    open_part = _outside_details(page)
    assert open_part.count("<tr") - 1 == len(differ)  # header row + one per differing tensor
    assert "op_0" not in open_part
    assert f"<summary>{218 - len(differ)} identical tensors (every error 0)</summary>" in page
    assert f"218 tensors compared: {len(differ)} differ, {218 - len(differ)} identical" in page


def test_differing_tensors_are_sorted_worst_first():
    comparison = Comparison(
        [
            _row("fine", 0.999999, 1e-4, 1e-5),
            _row("bad", 0.95, 0.5, 0.3),
            _row("overflowed", math.nan, math.inf, math.inf),
            _row("worse_of_fine", 0.999999, 1e-3, 1e-3),
        ],
        [],
        [],
    )
    assert [r.op for r in comparison.by_error()] == ["overflowed", "bad", "worse_of_fine", "fine"]
    page = render(comparison)
    order = [page.index(f">{name}<") for name in ("overflowed", "bad", "worse_of_fine", "fine")]
    assert order == sorted(order)
    assert "worst: overflowed output:0 at step 0" in page


def test_more_than_a_page_of_differing_tensors_folds_the_rest():
    rows = [_row(f"d{k}", 0.9999, 1e-3, 1e-3 / (k + 1)) for k in range(PAGE + 7)]
    page = render(Comparison(rows, [], []))
    assert "<summary>7 more differing tensors, worst first</summary>" in page
    assert _outside_details(page).count("<tr") - 1 == PAGE


def test_the_table_fits_the_cell_with_names_left_aligned_and_full_names_on_hover():
    long = "model/" * 20 + "MatMul"
    page = render(Comparison([_row(long, 0.9, 1.0, 1.0)], [], []))
    assert "table-layout:fixed;width:100%" in page
    name_cell = re.search(r'<td style="([^"]*)" title="([^"]*)"><code[^>]*>model/', page)
    assert name_cell is not None
    assert "text-align:left" in name_cell.group(1) and "overflow-wrap:anywhere" in name_cell.group(1)
    assert name_cell.group(2) == long
    assert 'title="cosine similarity' in page  # the metric columns say what they are


def test_names_and_slots_are_escaped():
    page = render(Comparison([_row("<script>x</script>", 0.5, 1.0, 1.0)], ["<img src=x>:output:0"], []))
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;" in page
