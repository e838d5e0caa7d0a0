"""npu_jupyter._ops.library: the facts the planner reads, SoC names, IR-name resolution and caching."""

from __future__ import annotations

import subprocess
import sys

import pytest

from npu_jupyter._ops.library import load_library, resolve_soc


@pytest.fixture(scope="module")
def a910():
    return load_library("Ascend910")


@pytest.fixture(scope="module")
def a910b():
    return load_library("Ascend910B")


def test_matmul_maps_to_matmulv2_white_cube_fp16_on_ascend910(a910) -> None:
    caps = a910.caps("MatMul")
    assert (caps.ir_type, caps.engine, caps.policy, caps.cube) == ("MatMulV2", "AI_CORE", "white", True)
    assert caps.aicore_dtypes == {"float16"}


def test_matmul_cube_kernel_accepts_float32_on_ascend910b(a910b) -> None:
    caps = a910b.caps("MatMul")
    assert caps.cube and caps.policy == "white"
    assert "float32" in caps.aicore_dtypes


def test_sum_is_reducesum_on_the_black_list(a910) -> None:
    caps = a910.caps("Sum")
    assert (caps.ir_type, caps.policy) == ("ReduceSum", "black")
    assert a910.policy_of_ir("ReduceSum") == "black"
    assert a910.policy_of_ir("ReduceSumD") == "gray"


def test_relu_is_gray_vector_op_with_fp16_and_fp32_kernels(a910) -> None:
    caps = a910.caps("Relu")
    assert (caps.policy, caps.cube, caps.engine) == ("gray", False, "AI_CORE")
    assert caps.aicore_dtypes == {"float16", "float32"}


def test_maxpool_ai_core_kernel_is_fp16_only_with_an_ai_cpu_fallback(a910) -> None:
    caps = a910.caps("MaxPool")
    assert caps.aicore_dtypes == {"float16"}
    assert "float32" in caps.aicpu_dtypes


def test_depthwise_conv_is_white_on_910_but_gray_on_910b(a910, a910b) -> None:
    assert a910.caps("DepthwiseConv2dNative").policy == "white"
    assert a910b.caps("DepthwiseConv2dNative").policy == "gray"
    assert a910.caps("DepthwiseConv2dNative").ir_type == "DepthwiseConv2D"


def test_optimizer_update_uses_the_const_attr_d_variant_flag(a910) -> None:
    caps = a910.caps("ResourceApplyMomentum")
    assert (caps.ir_type, caps.aicore_ir_type, caps.policy) == ("ApplyMomentum", "ApplyMomentumD", "black")


@pytest.mark.parametrize("tf_type", ["PyFunc", "MapDataset", "TensorSliceDataset", "IteratorGetNext", "SaveV2"])
def test_python_dataset_and_checkpoint_ops_run_on_the_host(a910, tf_type: str) -> None:
    caps = a910.caps(tf_type)
    assert caps.engine == "HOST" and not caps.declared
    assert a910.ir_type(tf_type) is None


@pytest.mark.parametrize("tf_type", ["StringSplit", "HashTableV2", "LookupTableFindV2", "TensorArrayV3", "FIFOQueueV2"])
def test_string_table_and_queue_ops_are_kept_on_host_in_mixed_computing(a910, tf_type: str) -> None:
    caps = a910.caps(tf_type)
    assert caps.declared and caps.gray_in_mix and caps.gray_reason
    assert tf_type in a910.host_kept


PLUMBING = [
    "Identity",
    "Const",
    "Placeholder",
    "NoOp",
    "VarHandleOp",
    "ReadVariableOp",
    "Enter",
    "Merge",
    "Switch",
    "LoopCond",
    "NextIteration",
    "Exit",
    "_Arg",
    "_Retval",
]


@pytest.mark.parametrize("tf_type", PLUMBING)
def test_graph_plumbing_has_a_device_row_with_a_source(a910, tf_type: str) -> None:
    caps = a910.caps(tf_type)
    assert caps.declared and caps.engine != "HOST" and not caps.gray_in_mix
    assert caps.source


def test_function_calls_are_marked_as_such(a910) -> None:
    for tf_type in ("PartitionedCall", "StatefulPartitionedCall"):
        assert a910.caps(tf_type).kernel == "function_call"


def test_enter_is_on_the_black_list_like_its_ir_type(a910) -> None:
    assert a910.caps("Enter").policy == "black"


def test_sparse_softmax_loss_runs_on_ai_core_after_ge_fusion(a910) -> None:
    caps = a910.caps("SparseSoftmaxCrossEntropyWithLogits")
    assert (caps.engine, caps.kernel, caps.aicore_ir_type) == (
        "AI_CORE",
        "aicore_fused",
        "SoftmaxCrossEntropyWithLogits",
    )
    assert "fusion_pass" in caps.source


def test_unknown_op_type_has_no_caps(a910) -> None:
    assert a910.caps("NoSuchOpType") is None


def test_ir_type_resolves_ir_names_tf_names_and_nothing_else(a910) -> None:
    assert a910.ir_type("MatMulV2") == "MatMulV2"
    assert a910.ir_type("Softmax") == "SoftmaxV2"  # TF name -> IR name
    assert a910.ir_type("SoftmaxV2") == "SoftmaxV2"
    assert a910.ir_type("FusedBatchNormV3") == "BatchNorm"
    assert a910.ir_type("MatMul") == "MatMul"  # an IR type of its own: GE matches IR names literally
    assert a910.ir_type("NotAnOp") is None


def test_mixed_precision_lists_are_per_soc(a910, a910b) -> None:
    assert "DepthwiseConv2D" in a910.mixed_precision_white
    assert "DepthwiseConv2D" not in a910b.mixed_precision_white
    assert "FullyConnection" in a910b.mixed_precision_white
    assert a910b.policy_of_ir("Conv3DBackpropFilter") == "white"
    assert a910.policy_of_ir("Conv3DBackpropFilter") == "black"
    assert (len(a910.mixed_precision_white), len(a910.mixed_precision_black)) == (35, 88)
    assert (len(a910b.mixed_precision_white), len(a910b.mixed_precision_black)) == (38, 86)


def test_bundled_library_says_it_is_approximate(a910) -> None:
    assert a910.approximate is True
    assert "APPROXIMATION" in a910.provenance
    assert a910.soc == "Ascend910"


@pytest.mark.parametrize(
    ("spelling", "soc"),
    [
        ("Ascend910", "Ascend910"),
        ("ascend910", "Ascend910"),
        ("Ascend910A", "Ascend910"),
        ("ASCEND910PROB", "Ascend910"),
        ("Ascend910B", "Ascend910B"),
        ("Ascend910B1", "Ascend910B"),
        ("ascend910b4", "Ascend910B"),
        (" Ascend910B3 ", "Ascend910B"),
    ],
)
def test_soc_spellings_of_the_adapter_select_the_right_table(spelling: str, soc: str) -> None:
    assert load_library(spelling).soc == soc


@pytest.mark.parametrize("bad", ["Ascend310", "Ascend910C", "910", ""])
def test_unknown_soc_is_rejected_with_the_supported_names(bad: str) -> None:
    with pytest.raises(ValueError, match="supported are .*Ascend910B1"):
        resolve_soc(bad)


def test_library_is_cached_per_soc() -> None:
    assert load_library("Ascend910B2") is load_library("ascend910b2")


def test_loading_the_library_does_not_import_tensorflow() -> None:
    code = (
        "import sys; from npu_jupyter._ops.library import load_library; "
        "load_library('Ascend910B'); print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert out == "False"


@pytest.mark.parametrize("name", ["Ascend910_9391", "ascend910_9382", "Ascend910_93"])
def test_atlas_a3_spellings_resolve_to_the_910b_table(name):
    assert resolve_soc(name) == "ascend910b"
