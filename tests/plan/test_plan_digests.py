"""The planner decides exactly as recorded on the shared training graphs, op by op, on the recorded TF.

``data/plan_digests.json`` holds digests of every field of every decision (placement, engine, reasons,
dtypes, clusters, transfers, warnings, errors, notes) on the ResNet-50, BERT and LSTM training steps of
``tests/models.py``, plus the TensorFlow and Keras versions they were recorded with. A change that
alters any decision, even one reason string or which of ``dense_1``/``dense_2`` gets it, fails here.

Op names are digested as they are: the graphs are built in a fresh interpreter, where Keras numbers
its auto-named layers from zero, so names are reproducible without masking. On another TensorFlow or
Keras version the graphs themselves differ (other op types, other lowering), so the test skips with
the reason rather than compare unlike graphs. The independent check that the decisions are *right*
is ``test_real_graph_expectations.py``; this file only guards against unintended change.
Regenerate only when decisions are meant to change:
``.venv/bin/python tests/plan/test_plan_digests.py --update``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DIGESTS = Path(__file__).parent / "data" / "plan_digests.json"
TESTS_DIR = Path(__file__).resolve().parents[1]
CONFIGS: dict[str, dict[str, Any] | None] = {
    "full_offload": None,
    "mixed_computing": {"mix_compile_mode": True},
    "allow_mix_precision": {"precision_mode": "allow_mix_precision"},
}
MODELS = ("resnet50_train_step", "bert_train_step", "lstm_train_step")


# The fields digested are named, so that fields added later (model.py allows additive edits) do
# not change the digests of the decisions recorded here.
OP_FIELDS = (
    "name",
    "op_type",
    "placement",
    "engine",
    "placement_reason",
    "dtype_before",
    "dtype_after",
    "precision_reason",
    "cluster",
    "inputs",
    "input_dtypes",
    "output_dtypes",
    "impl_mode",
    "policy",
    "body_ops",
)
SUBGRAPH_FIELDS = ("name", "ops")
TRANSFER_FIELDS = ("src", "dst", "tensor", "dtype", "direction", "bytes")


def _fields(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in names}


def plan_digest(p: Any) -> str:
    """SHA-256 of the whole plan, op names included as they are."""
    body = json.dumps(
        {
            "ops": [_fields(d, OP_FIELDS) for d in p.ops.values()],
            "subgraphs": [_fields(s, SUBGRAPH_FIELDS) for s in p.subgraphs],
            "transfers": [_fields(t, TRANSFER_FIELDS) for t in p.transfers],
            "warnings": p.warnings,
            "errors": p.errors,
            "notes": p.notes,
            "precision_mode": p.precision_mode,
            "title": p.title,
        },
        sort_keys=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def installed_versions() -> dict[str, str]:
    """The TensorFlow and Keras versions the graphs are built with."""
    import keras
    import tensorflow as tf

    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def _digests_here() -> dict[str, str]:
    """Digests computed in this process (call only in a fresh one: see the module doc)."""
    import models

    from npu_jupyter._plan.planner import plan

    out: dict[str, str] = {}
    for model_name in MODELS:
        fn = getattr(models, model_name)()
        for cfg, config in CONFIGS.items():
            out[f"{model_name}/{cfg}"] = plan_digest(plan(fn, config))
    return out


def fresh_digests() -> dict[str, str]:
    """Digests computed in a new interpreter, so Keras layer numbering starts from zero."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    repo = str(TESTS_DIR.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, str(TESTS_DIR), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--print"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"computing the digests failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    pytest.importorskip("tensorflow")
    pytest.importorskip("keras")
    data = json.loads(DIGESTS.read_text())
    want = data.get("versions", {})
    have = installed_versions()
    if want != have:
        pytest.skip(
            f"plan digests were recorded on {want} and the installed versions are {have}: the "
            "training graphs differ between versions, so the digests are not comparable"
        )
    return data


@pytest.fixture(scope="module")
def computed(recorded) -> dict[str, str]:
    return fresh_digests()


@pytest.mark.slow
@pytest.mark.parametrize("model_name", MODELS)
def test_decisions_on_training_graphs_equal_the_recorded_reference(recorded, computed, model_name):
    expected = recorded["digests"]
    got = {k: v for k, v in computed.items() if k.startswith(model_name + "/")}
    assert set(got) == {f"{model_name}/{cfg}" for cfg in CONFIGS}
    changed = [key for key, digest in got.items() if expected.get(key) != digest]
    assert not changed, (
        f"plan decisions changed for {changed}; if intended, regenerate {DIGESTS.name} "
        "with: .venv/bin/python tests/plan/test_plan_digests.py --update"
    )


def test_a_swapped_pair_of_numbered_op_names_changes_the_digest():
    from npu_jupyter._plan.model import OpDecision, Plan

    def decision(name: str, reason: str) -> OpDecision:
        return OpDecision(
            name=name,
            op_type="MatMul",
            placement="device",
            engine="AI_CORE",
            placement_reason=reason,
            dtype_before="float32",
            dtype_after="float32",
            precision_reason="kept",
        )

    # the same decisions in the same order, but given to the other op: masking "_\d+" hid this
    a = Plan(ops={"dense_1": decision("dense_1", "x"), "dense_2": decision("dense_2", "y")})
    b = Plan(ops={"dense_2": decision("dense_2", "x"), "dense_1": decision("dense_1", "y")})
    assert plan_digest(a) != plan_digest(b)


if __name__ == "__main__" and "--print" in sys.argv:
    print(json.dumps(_digests_here()))
elif __name__ == "__main__" and "--update" in sys.argv:
    data = json.loads(DIGESTS.read_text())
    data["versions"] = installed_versions()
    data["digests"] = fresh_digests()
    data.pop("tensorflow", None)
    tmp = DIGESTS.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=1) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, DIGESTS)
    print(f"wrote {DIGESTS}")
