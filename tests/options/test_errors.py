"""NpuConfigError carries the option, the value and every problem."""

from __future__ import annotations

from npu_jupyter._options.errors import NpuConfigError


def test_is_a_value_error_with_structured_attributes():
    error = NpuConfigError("dump_mode: 'x' is not allowed", option="dump_mode", value="x", allowed=["input"])
    assert isinstance(error, ValueError)
    assert (error.option, error.value, error.problems, error.allowed) == (
        "dump_mode",
        "x",
        ["dump_mode: 'x' is not allowed"],
        ["input"],
    )


def test_combine_lists_every_problem_once():
    combined = NpuConfigError.combine([NpuConfigError("a bad", option="a"), NpuConfigError("b bad", option="b")])
    assert combined.problems == ["a bad", "b bad"]
    assert str(combined).startswith("2 problems") and "  - a bad" in str(combined)
    assert combined.option is None
    single = NpuConfigError("only", option="x")
    assert NpuConfigError.combine([single]) is single
