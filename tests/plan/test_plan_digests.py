"""The optimised planner decides exactly as before on the shared training graphs.

``data/plan_digests.json`` holds digests of every field of every decision (placement, engine, reasons,
dtypes, clusters, transfers, warnings, errors, notes) on the ResNet-50, BERT and LSTM training steps of
``tests/models.py``, recorded before the performance work. A speed-up that changes any decision, even
one reason string, fails here. Regenerate the file only when decisions are meant to change:
``.venv/bin/python tests/plan/test_plan_digests.py --update``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

DIGESTS = Path(__file__).parent / "data" / "plan_digests.json"
CONFIGS: dict[str, dict[str, Any] | None] = {
    "full_offload": None,
    "mixed_computing": {"mix_compile_mode": True},
    "allow_mix_precision": {"precision_mode": "allow_mix_precision"},
}
MODELS = ("resnet50_train_step", "bert_train_step", "lstm_train_step")


# The fields digested are named, so that fields added later (model.py allows additive edits) do
# not change the digests of the decisions recorded here.
OP_FIELDS = ("name", "op_type", "placement", "engine", "placement_reason", "dtype_before", "dtype_after",
             "precision_reason", "cluster", "inputs", "input_dtypes", "output_dtypes", "impl_mode", "policy",
             "body_ops")
SUBGRAPH_FIELDS = ("name", "ops")
TRANSFER_FIELDS = ("src", "dst", "tensor", "dtype", "direction", "bytes")


def _fields(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in names}


def plan_digest(p: Any) -> str:
    """SHA-256 of the whole plan, with Keras' per-process numbering (``dense_1``) masked."""
    body = json.dumps({
        "ops": [_fields(d, OP_FIELDS) for d in p.ops.values()],
        "subgraphs": [_fields(s, SUBGRAPH_FIELDS) for s in p.subgraphs],
        "transfers": [_fields(t, TRANSFER_FIELDS) for t in p.transfers],
        "warnings": p.warnings, "errors": p.errors, "notes": p.notes,
        "precision_mode": p.precision_mode, "title": p.title,
    }, sort_keys=True)
    return hashlib.sha256(re.sub(r"_\d+", "_#", body).encode()).hexdigest()


def _digests_of(model_name: str) -> dict[str, str]:
    import models

    from npu_jupyter.plan.planner import plan

    fn = getattr(models, model_name)()
    return {f"{model_name}/{cfg}": plan_digest(plan(fn, config)) for cfg, config in CONFIGS.items()}


@pytest.mark.slow
@pytest.mark.parametrize("model_name", MODELS)
def test_decisions_on_training_graphs_equal_the_recorded_reference(model_name):
    pytest.importorskip("tensorflow")
    expected = json.loads(DIGESTS.read_text())["digests"]
    got = _digests_of(model_name)
    changed = [key for key, digest in got.items() if expected.get(key) != digest]
    assert not changed, (f"plan decisions changed for {changed}; if intended, regenerate {DIGESTS.name} "
                         "with: .venv/bin/python tests/plan/test_plan_digests.py --update")


if __name__ == "__main__" and "--update" in sys.argv:
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/models.py
    data = json.loads(DIGESTS.read_text())
    data["digests"] = {k: v for m in MODELS for k, v in _digests_of(m).items()}
    tmp = DIGESTS.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=1) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, DIGESTS)
    print(f"wrote {DIGESTS}")
