"""The report contract has one source: ``npu_jupyter/_display/report_schema.json``.

The TypeScript types (``labextension/src/schema.ts``) and the field tables of ``docs/report-schema.md``
are generated from it (``tools/gen_schema.py``) and must be up to date; the payloads ``report_payload``
writes for real plans, session runs and traced functions must validate against it. (The sweep and the
comparison are tables rendered to HTML and text, not report payloads: they have no payload to check.)
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from npu_jupyter._display import mime
from npu_jupyter._display.facts import report_facts

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "npu_jupyter" / "_display" / "report_schema.json").read_text(encoding="utf-8"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generator():
    return _load("gen_schema", REPO / "tools" / "gen_schema.py")


def _parity():
    """The marker payload (every field set) and a RunReport with every optional slot filled."""
    return _load("view_parity", Path(__file__).with_name("test_view_parity.py"))


def _errors(payload):
    validator = jsonschema.Draft7Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(payload)]


def test_the_generated_types_and_field_tables_are_up_to_date():
    stale = [
        path.relative_to(REPO).as_posix()
        for path, text in _generator().outputs().items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], "run python tools/gen_schema.py"


def test_the_schema_is_a_valid_draft_7_schema_and_names_the_constants_mime_writes():
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["x-mime-type"] == mime.MIME_TYPE
    assert SCHEMA["properties"]["schema"]["const"] == mime.SCHEMA
    assert SCHEMA["properties"]["version"]["const"] == mime.VERSION


def test_the_generated_typescript_has_an_interface_per_object_and_marks_optional_fields():
    ts = _generator().render_ts(SCHEMA)
    assert "export interface Report {" in ts and "export interface RunInfo {" in ts
    assert "  facts: Fact[];" in ts and "  run?: RunInfo;" in ts and "  actual: Actual | null;" in ts
    assert "export const ENGINES: readonly Engine[] = ['AI_CORE', 'AI_CPU', 'HOST'];" in ts


def test_the_check_finds_a_stale_file(tmp_path, monkeypatch):
    gen = _generator()
    stale = tmp_path / "schema.ts"
    stale.write_text("// old\n", encoding="utf-8")
    monkeypatch.setattr(gen, "TS_OUT", stale)
    monkeypatch.setattr(gen, "REPO", tmp_path)
    monkeypatch.setattr(gen, "DOC", tmp_path / "doc.md")
    (tmp_path / "doc.md").write_text(gen.render_doc(SCHEMA, f"x\n{gen.DOC_BEGIN}\n{gen.DOC_END}\n"), encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def test_validation_fails_on_a_field_the_schema_does_not_know_or_a_wrong_type():
    payload, _ = _parity().marker_payload()
    assert _errors(payload) == []
    extra = copy.deepcopy(payload)
    extra["ops"][0]["zz"] = 1
    assert any("zz" in e for e in _errors(extra))
    wrong = copy.deepcopy(payload)
    wrong["run"]["steps"] = "3"
    assert any(e.startswith("run/steps") for e in _errors(wrong))


def test_a_full_run_report_and_a_truncated_one_validate():
    report = _parity()._full_run_report()
    payload = mime.report_payload(report)
    assert _errors(payload) == []
    assert payload["facts"] == [
        fact._asdict() for fact in report_facts({k: v for k, v in payload.items() if k != "facts"})
    ]
    small = mime.report_payload(report, budget=1)
    assert small["truncated"] and _errors(small) == []


def test_a_real_plan_and_session_run_validate(tmp_path):
    tf = pytest.importorskip("tensorflow")
    import npu_jupyter
    from npu_jupyter._options.config import NpuConfig

    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
        w = tf.compat.v1.get_variable("w", initializer=np.full((8, 3), 0.5, np.float32))
        loss = tf.reduce_sum(tf.matmul(x, w, name="mm"), name="loss")
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    (tmp_path / "dump").mkdir()
    config = NpuConfig(
        precision_mode="force_fp16",
        enable_dump=True,
        dump_path=str(tmp_path / "dump"),
        profiling_mode=True,
        profiling_options=f'{{"output": "{tmp_path / "prof"}"}}',
    )
    plan_payload = mime.report_payload(npu_jupyter.plan(g, config, fetches=["loss"]))
    assert plan_payload["kind"] == "plan" and _errors(plan_payload) == []
    with npu_jupyter.session(config, g, backend="emulator", reference=True) as sess:
        sess.run(init)
        for step in range(3):
            sess.run([loss, train], {x: np.full((4, 8), 1.0 + 1e4 * (step == 2), np.float32)})
        run_payload = mime.report_payload(sess.last_report)
    assert run_payload["kind"] == "run" and run_payload["run"]["steps"] == 3
    assert {"run.dump_dir", "run.trace_file", "cost_model"} <= {f["key"] for f in run_payload["facts"]}
    assert _errors(run_payload) == []


def test_a_traced_function_tree_validates():
    tf = pytest.importorskip("tensorflow")
    from npu_jupyter._runtime.functions import emulator as functions

    if not functions.supported():
        pytest.skip("traced functions are emulated on TensorFlow >= 2.14 only")

    @tf.function
    def inner(a):
        return tf.nn.relu(tf.matmul(a, a))

    @tf.function
    def outer(a):
        return tf.reduce_sum(inner(a) * 2.0)

    with functions.FunctionEmulation({"precision_mode": "allow_mix_precision"}, reference=True) as emulation:
        outer(tf.ones((4, 4)))
        outer(tf.ones((4, 4)))
    payloads = [mime.report_payload(report) for report in emulation.reports.values()]
    assert payloads and [_errors(p) for p in payloads] == [[]] * len(payloads)
    assert any(len(p.get("functions", [])) > 1 for p in payloads), "expected a report on a call tree"


def test_the_fallback_views_draw_the_shipped_facts_as_they_are():
    payload = mime.report_payload(_parity()._full_run_report())
    from npu_jupyter._display import html, text

    recomputed = {k: v for k, v in payload.items() if k != "facts"}  # an older payload: computed when drawn
    assert text.render(recomputed) == text.render(payload)
    assert html.render(recomputed) == html.render(payload)
    edited = copy.deepcopy(payload)
    [dump] = [fact for fact in edited["facts"] if fact["key"] == "run.dump_dir"]
    dump["text"] = "shipped-marker"
    assert "Dump folder: shipped-marker" in text.render(edited)
    assert "shipped-marker" in html.render(edited)
