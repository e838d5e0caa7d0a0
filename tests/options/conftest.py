"""Shared helpers for the option-model tests: a valid sample value per option, and hypothesis strategies."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from npu_jupyter._options import catalogue
from npu_jupyter._options.catalogue import OptionSpec

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Reference documents shipped with the tests (see tests/data/reference/README.md).
SHARED = Path(__file__).resolve().parents[1] / "data" / "reference"

# One documented example per special grammar (taken from the seed docs' own examples).
GRAMMAR_SAMPLES = {
    "dump_step": ["0|5|10", "0|3-5|10", "7"],
    "profiling_options": [
        (
            '{"output":"/tmp/profiling","training_trace":"on","task_trace":"on",'
            '"fp_point":"conv1/Conv2D","bp_point":"gradients/AddN_70"}'
        ),
        '{"output":"./p","aicpu":"on","aic_metrics":"PipeUtilization"}',
    ],
    "in_out_pair": ["[[['import/conv2d_1/convolution'], ['import/conv2d_59/BiasAdd', 'import/conv2d_67/BiasAdd']]]"],
    "input_shape": ["data:1,1,40,-1;label:1,-1;mask:-1,-1"],
    "dynamic_dims": ["20,20,1,1;40,40,2,2;80,60,4,4"],
    "dynamic_inputs_shape_range": [
        "getnext:[128 ,3~5, 2~128, -1],[64 ,3~5, 2~128, -1];data:[128 ,3~5, 2~128, -1]",
        "data:[1~200,200],[]",
    ],
    "local_device_list": ["0,1", "0,1,2,3,4,5,6,7"],
    "accelerate_train_mode": ["fast|step|0.9", "fast1|loss|1.05"],
    "stream_max_parallel_num": ["DNN_VM_AICPU:10,AIcoreEngine:1"],
    "auto_tune_mode": ["RL,GA", "GA"],
    "byte_size": ["17179869184", "5368709120"],
}


def sample_values(spec: OptionSpec) -> list[Any]:
    """A few values the option accepts."""
    if spec.choices is not None:
        return list(spec.choices)
    if spec.validator:
        return list(GRAMMAR_SAMPLES[spec.validator])
    if spec.range is not None:
        low, high = spec.range
        return [low, low + 1] if high is None else [low, high]
    return {"b": [True, False], "i": [0, 7], "s": ["/home/test/x.cfg", "a b 'quoted' \"text\""]}[spec.field]


def option_value_strategy(spec: OptionSpec) -> st.SearchStrategy[Any]:
    """Hypothesis values valid for ``spec`` on its own."""
    if spec.choices is not None or spec.validator:
        return st.sampled_from(sample_values(spec))
    if spec.range is not None:
        low, high = spec.range
        return st.integers(min_value=low, max_value=high if high is not None else 2**40)
    if spec.field == "b":
        return st.booleans()
    if spec.field == "i":
        return st.integers(min_value=-(2**63), max_value=2**63 - 1)
    return st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@st.composite
def option_sets(draw: Any, max_options: int = 12) -> dict[str, Any]:
    """Random sets of individually valid options (cross-option rules are not guaranteed)."""
    chosen = draw(st.lists(st.sampled_from(catalogue.specs()), max_size=max_options, unique_by=lambda s: s.key))
    return {spec.key: draw(option_value_strategy(spec)) for spec in chosen}


@pytest.fixture(scope="session", name="sample_values")
def _sample_values_fixture():
    """``sample_values(spec)`` -> a few values the option accepts."""
    return sample_values


@pytest.fixture(scope="session", name="option_sets")
def _option_sets_fixture():
    """``option_sets()`` -> hypothesis strategy of random individually valid option sets."""
    return option_sets


@pytest.fixture(scope="session")
def shared() -> Path:
    """The reference directory shipped with the tests (seeds, adapter facts, real configs)."""
    return SHARED


@pytest.fixture(scope="session")
def seed_text():
    """Read a seed document by file name."""

    def read(name: str) -> str:
        return (SHARED / "seeds" / name).read_text(encoding="utf-8")

    return read
