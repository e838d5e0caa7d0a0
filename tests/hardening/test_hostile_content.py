"""Hostile op names, attribute strings and paths through every Python renderer (docs/contract.md, Notebook).

Names such as ``<script>``, ``<img src=x onerror=...>``, quotes, ``</details>`` and RTL marks are put
into a real GraphDef (TensorFlow itself refuses them as node names, a GraphDef proto does not), into
option values that end up in messages (file paths), and into run facts (fetches, dump and trace
paths). For every rendering:
- text/html parses into only the tags the renderer writes, with no ``on*`` attributes and no script,
  and every hostile string comes back as text data;
- the MIME JSON carries each string exactly, as data;
- text/plain holds no control characters that could fake lines or move the terminal cursor.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from fuzz_inputs import accepted, fuzz_settings, tried
from hardening_graphs import renamed, set_string_attr, tiny_graph_def
from hypothesis import given
from hypothesis import strategies as st

from npu_jupyter._display import formatters
from npu_jupyter._display.mime import MIME_TYPE, mimebundle, shown_path
from npu_jupyter._options.config import NpuConfig

pytest.importorskip("tensorflow")

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "'; alert(1); '",
    "</details></table><script>x</script>",
    "\u202eevil\u202c.txt",
    "a\nERROR: fake line",
    "&lt;already&gt; &amp;",
    "`${alert(1)}`",
    "<!-- x --><style>*{display:none}</style>",
    "javascript:alert(1)",
]
# Tags the renderers write themselves; anything else in the output came from data.
ALLOWED_TAGS = {
    "div",
    "span",
    "strong",
    "em",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "details",
    "summary",
    "h4",
    "p",
    "caption",
    "br",
    "b",
    "i",
    "small",
    "colgroup",  # fit_table's column widths
    "col",
    "a",  # links to files a run wrote inside the notebook's folder (checked: never a script URL)
}

hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.lists(
        st.sampled_from([*list("<>\"'&/=;:() \n\t\u202e\u200f\x00x"), "script", "onerror=", "details", "img"]),
        min_size=1,
        max_size=12,
    ).map("".join),
)


class _Collector(HTMLParser):
    """Every start/end tag, attribute name and text run of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.ends: list[str] = []
        self.attrs: list[str] = []
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        self.hrefs += [value or "" for name, value in attrs if name == "href"]

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        self.ends.append(tag)

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        self.tags.append("<!--comment-->")


def assert_safe_html(html: str, strings: list[str]) -> None:
    """Only the renderer's own tags, no event handlers, and every hostile string present as text."""
    parsed = _Collector()
    parsed.feed(html)
    parsed.close()
    assert set(parsed.tags) <= ALLOWED_TAGS, set(parsed.tags) - ALLOWED_TAGS
    assert set(parsed.ends) <= ALLOWED_TAGS, set(parsed.ends) - ALLOWED_TAGS
    assert not [a for a in parsed.attrs if a.lower().startswith("on")]
    assert not [h for h in parsed.hrefs if ":" in h or h.startswith(("/", "\\"))], parsed.hrefs
    assert "<script" not in html.lower() and "<img" not in html.lower() and "<svg" not in html.lower()
    for tag in ("details", "table", "div"):
        assert parsed.tags.count(tag) == parsed.ends.count(tag), tag
    text = "".join(parsed.text)
    for s in strings:
        assert s.replace("\x00", "\ufffd") in text or s in text, s


def assert_clean_text(text: str) -> None:
    bad = [ch for ch in text if ch != "\n" and not ch.isprintable()]
    assert not bad, bad


def _hostile_plan(names: list[str], attr: str, path: str):
    """Plan the tiny graph with its nodes renamed to ``names`` and hostile strings in the config."""
    from npu_jupyter._plan.planner import plan

    graph_def = tiny_graph_def()
    old = [n.name for n in graph_def.node]
    mapping = dict(zip(old, names))
    hostile = renamed(graph_def, mapping)
    set_string_attr(hostile, mapping["mm"], "_user_note", attr)
    cfg = NpuConfig(precision_mode="allow_mix_precision", modify_mixlist=path, mix_compile_mode=True, dump_path=path)
    return plan(hostile, cfg), mapping


def _unique(draw, count: int) -> list[str]:
    return draw(st.lists(hostile_text, min_size=count, max_size=count, unique=True))


@fuzz_settings(120)
@given(data=st.data())
def test_plans_and_run_reports_render_hostile_names_and_paths_as_text(data):
    from npu_jupyter._runtime.report import RunReport

    tried("hostile reports")
    accepted("hostile reports")
    count = len(tiny_graph_def().node)
    names = _unique(data.draw, count)
    # a NUL in a file path: reported in test_known_bugs.py (test_a_nul_in_a_precision_file_path_...)
    attr, path = data.draw(hostile_text), "/tmp/" + data.draw(hostile_text).replace("\x00", "")
    plan, mapping = _hostile_plan(names, attr, path)
    assert set(plan.ops) == set(names)
    assert any(path in e or repr(path) in e for e in plan.errors + plan.warnings)  # the missing file is named
    report = RunReport(
        plan=plan,
        fetches=[mapping["y"], mapping["total"]],
        steps=2,
        wall_ms=1.5,
        op_times_us={n: 10.0 + i for i, n in enumerate(names)},
        drift={mapping["mm"]: {"max_abs": 0.5, "max_rel": 0.1, "cos": 0.99}},
        overflow_ops=[mapping["y"]],
        first_overflow=mapping["y"],
        dump_dir=path,
        trace_file=path,
        op_summary_csv=path,
        warnings=[path],
    )
    for obj in (plan, report):
        for detail in ("full", "summary"):
            bundle = mimebundle(obj, detail=detail)
            payload = json.loads(json.dumps(bundle[MIME_TYPE]))
            assert [op["n"] for op in payload["ops"]] == list(plan.ops)
            expected = list(names) if detail == "full" else []
            if obj is report:
                assert (
                    payload["run"]["dump_dir"] == shown_path(path) and payload["run"]["first_overflow"] == mapping["y"]
                )
                expected = list(names) if detail == "full" else [mapping["y"]]
            assert_safe_html(bundle["text/html"], expected)
            assert_clean_text(bundle["text/plain"])
    assert formatters.bundle(obj)["text/html"] == mimebundle(obj)["text/html"]


def test_the_mime_json_keeps_hostile_strings_exactly_as_data():
    names = HOSTILE[: len(tiny_graph_def().node)]
    plan, _ = _hostile_plan(names, HOSTILE[-1], "/tmp/" + HOSTILE[0])
    payload = mimebundle(plan)[MIME_TYPE]
    wire = json.dumps(payload)
    assert "<script>" in json.loads(wire)["ops"][0]["n"]
    assert {op["n"] for op in payload["ops"]} == set(names)


@fuzz_settings(80)
@given(op=hostile_text, slot=hostile_text, mode=hostile_text, title=hostile_text)
def test_compare_and_sweep_tables_escape_hostile_names(op, slot, mode, title):
    from npu_jupyter._runtime.observe.compare import Comparison, Row
    from npu_jupyter._sweep import SweepRow, SweepTable

    tried("hostile tables")
    accepted("hostile tables")
    comparison = Comparison([Row(0, op, slot, (2, 2), 0.5, 1.0, 0.2, 0.1, 0.3)], [op], [slot], title=title)
    assert_safe_html(comparison._repr_html_(), [op, slot, title])
    table = SweepTable(
        [
            SweepRow(mode, 1.0, 2, 0.1, 0.2, 0.99, op, slot),
            SweepRow(title, float("nan"), 0, 0, 0, 0, "", None, error=op),
        ],
        [slot],
    )
    assert_safe_html(table._repr_html_(), [mode, op, slot, title])


@fuzz_settings(60)
@given(path=hostile_text, step=hostile_text)
def test_the_config_view_and_the_panel_escape_hostile_option_values(path, step):
    from npu_jupyter._display.config_view import ConfigView
    from npu_jupyter._notebook.panel import panel

    tried("hostile config views")
    accepted("hostile config views")
    cfg = NpuConfig(enable_dump=True, dump_path=path, op_compiler_cache_dir=step)
    view = ConfigView(cfg)
    assert_safe_html(view._repr_html_(), [])
    assert path in repr(view) or repr(path) in repr(view)
    widget = panel(cfg)
    try:
        widget.control("dump_step").value = step  # most hostile strings are refused: the error shows
        for html in (widget.status.value, widget.code.value, widget.controls["dump_step"]._message.value):
            assert_safe_html(html, [])
    finally:
        widget.close()


def test_a_real_run_with_the_most_hostile_names_tensorflow_allows_dumps_and_renders_safely(tmp_path):
    """TF node names may hold '>' after the first character: run such names through the emulator for
    real, with dump and profiling on, and check the files, load_dump and the rendered report.

    (A '>' next to a '/' or at the end is accepted by tf.Graph but refused by import_graph_def, so
    no graph that the emulator could copy holds one.)"""
    import numpy as np
    import tensorflow as tf

    from npu_jupyter._runtime.backends import session
    from npu_jupyter._runtime.observe.dump import load_dump

    names = ["x>script", "mm>img.src-x>onerror", "out>details.-x"]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 2], name=names[0])
        mm = tf.raw_ops.MatMul(a=x, b=x, name=names[1])
        out = tf.raw_ops.Identity(input=mm, name=names[2])
    assert [op.name for op in graph.get_operations()] == names
    dump_dir = tmp_path / "dump <script>"
    dump_dir.mkdir()
    prof_dir = tmp_path / 'prof "<img onerror=x>'
    cfg = NpuConfig(
        enable_dump=True,
        dump_path=str(dump_dir),
        profiling_mode=True,
        profiling_options=json.dumps({"output": str(prof_dir), "task_trace": "on"}),
    )
    with session(cfg, graph=graph, backend="emulator") as sess:
        sess.run(out, {x: np.ones((2, 2), np.float32)})
        report = sess.last_report
    op_names = {op.name for op in graph.get_operations()}
    for path in dump_dir.rglob("*.npy"):
        assert path.parent.parent == dump_dir and "<" not in path.name and ">" not in path.name
    dumped = load_dump(dump_dir)
    assert set(dumped[0]) == set(names)
    np.testing.assert_array_equal(dumped[0][names[2]][0], np.full((2, 2), 2.0, np.float32))
    bundle = mimebundle(report, detail="full")
    assert {op["n"] for op in bundle[MIME_TYPE]["ops"]} == op_names
    assert_safe_html(bundle["text/html"], [*sorted(op_names), str(dump_dir)])
    assert_clean_text(bundle["text/plain"])
