"""Every op type of the shared training graphs (incl. function bodies) has a row in both tables."""

from __future__ import annotations

import models
import pytest

from npu_jupyter._ops.library import load_library

FAST = [
    "mlp_v1",
    "cnn_v1",
    "dataset_pipeline_v1",
    "lstm_train_step",
    pytest.param("bert_train_step", marks=pytest.mark.slow),  # Keras import + tracing, ~6 s
]


def _missing(model_name: str, soc: str) -> list[str]:
    lib = load_library(soc)
    return sorted(t for t in models.op_types(models.ALL_MODELS[model_name]()) if lib.caps(t) is None)


@pytest.mark.parametrize("soc", ["Ascend910", "Ascend910B"])
@pytest.mark.parametrize("model_name", FAST)
def test_every_op_type_of_the_model_has_a_row(model_name: str, soc: str) -> None:
    missing = _missing(model_name, soc)
    assert not missing, f"{model_name}: op types without a row in the {soc} table: {', '.join(missing)}"


@pytest.mark.slow
@pytest.mark.parametrize("soc", ["Ascend910", "Ascend910B"])
def test_every_op_type_of_resnet50_training_has_a_row(soc: str) -> None:
    missing = _missing("resnet50_train_step", soc)
    assert not missing, f"resnet50_train_step: op types without a row in the {soc} table: {', '.join(missing)}"


def test_op_types_include_function_bodies() -> None:
    """The LSTM's recurrence lives in a While body: its ops must be seen, not just the While node."""
    graph_def = models.graph_def_of(models.lstm_train_step())
    top_level = {node.op for node in graph_def.node}
    body_only = {"LogicalAnd", "SigmoidGrad", "TensorListPopBack"}  # loop condition and gradient body
    assert not body_only & top_level
    assert body_only | {"While"} <= models.op_types(models.lstm_train_step())


def test_dataset_model_reaches_the_device_only_through_host_ops() -> None:
    lib = load_library("Ascend910")
    types = models.op_types(models.dataset_pipeline_v1())
    host = {t for t in types if lib.caps(t).engine == "HOST"}
    assert {"PyFunc", "MapDataset", "TensorSliceDataset", "IteratorGetNext"} <= host
    assert lib.caps("MatMul").engine == "AI_CORE"
