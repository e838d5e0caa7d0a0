"""Op capability tables: which TF op types the device runs, on which engine, in which dtypes.

INTERFACE CONTRACT (implementation in progress): the planner only uses the names below.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpCaps:
    """What the device can do with one TensorFlow op type.

    engine: "AI_CORE" | "AI_CPU" | "HOST" -- where the device executes it; "HOST" means the device
        cannot run it (not declared in npu_supported_ops.json).
    aicore_dtypes: float dtypes ("float16", "float32", "bfloat16") the AI Core kernel accepts on its
        float inputs; empty when the op has no AI Core kernel.
    aicpu_dtypes: float dtypes an AI CPU kernel accepts (used for must_keep_origin_dtype fallback).
    cube: the op is in fe.ini's fp16.op_type list (cube unit; float16 first in allow_fp32_to_fp16).
    policy: mixed-precision list of its Ascend IR type: "white" | "black" | "gray".
    gray_in_mix: npu_supported_ops.json's isGray -- kept on the host in mixed computing.
    """

    tf_type: str
    ir_type: str
    engine: str
    aicore_dtypes: frozenset[str]
    aicpu_dtypes: frozenset[str]
    cube: bool
    policy: str
    gray_in_mix: bool
    heavy: bool
    source: str


class OpLibrary:
    """Capabilities of one SoC. ``caps(tf_type)`` is None for op types the device does not declare."""

    soc: str
    provenance: str
    approximate: bool

    def caps(self, tf_type: str) -> OpCaps | None:  # pragma: no cover - contract
        raise NotImplementedError

    def ir_type(self, name: str) -> str | None:  # pragma: no cover - contract
        """Ascend IR type for a TF op type or an IR name; None when it matches neither."""
        raise NotImplementedError

    def policy_of_ir(self, ir_type: str) -> str:  # pragma: no cover - contract
        raise NotImplementedError


def load_library(soc: str = "Ascend910", *, opp_path: str | None = None) -> OpLibrary:  # pragma: no cover
    raise NotImplementedError
