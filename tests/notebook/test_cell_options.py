"""%%npu flags -> per-cell overrides, and the layering of session config, user entries and flags.

The flags are parsed by the real ``%%npu`` parser: the one IPython builds from the cell magic's
``@argument`` decorators (``magics.CELL_PARSER``).
"""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError

from npu_jupyter._notebook.cell_options import merged, with_exclusions
from npu_jupyter._notebook.magics import CELL_PARSER, NpuMagics
from npu_jupyter._options.config import NpuConfig


def _overrides_and_quiet(line, base):
    """(overrides, quiet) of a ``%%npu`` line, as the magic parses it."""
    flags = CELL_PARSER.parse(line, base)
    return flags.overrides, flags.quiet


def test_flags_become_option_values():
    overrides, quiet = _overrides_and_quiet(
        "--mix --precision force_fp16 --dump /tmp/d --dump-step '0|5' --dump-mode all --quiet", NpuConfig()
    )
    assert quiet is True
    assert overrides == {
        "mix_compile_mode": True,
        "precision_mode": "force_fp16",
        "precision_mode_v2": None,
        "enable_dump": True,
        "dump_path": "/tmp/d",
        "dump_step": "0|5",
        "dump_mode": "all",
    }


def test_precision_takes_a_v2_value_and_then_clears_precision_mode():
    overrides, _ = _overrides_and_quiet("--precision mixed_float16", NpuConfig())
    assert overrides == {"precision_mode_v2": "mixed_float16", "precision_mode": None}
    cell = merged(NpuConfig(precision_mode="force_fp32"), overrides)
    assert cell.changed() == {"precision_mode_v2": "mixed_float16"}


def test_profile_keeps_session_profiling_switches_and_sets_output():
    base = NpuConfig(profiling_options=json.dumps({"output": "/old", "training_trace": "on"}))
    overrides, _ = _overrides_and_quiet("--profile /tmp/prof", base)
    assert overrides["profiling_mode"] is True
    assert json.loads(overrides["profiling_options"]) == {
        "output": "/tmp/prof",
        "training_trace": "on",
        "task_trace": "on",
    }
    overrides, _ = _overrides_and_quiet("--profile", base)
    assert overrides == {"profiling_mode": True}


def test_set_values_are_typed_and_repeatable():
    overrides, _ = _overrides_and_quiet(
        "--set iterations_per_loop=1 --set enable_dump=off 'dump_path=/tmp/a b'", NpuConfig()
    )
    assert overrides == {"iterations_per_loop": 1, "enable_dump": False, "dump_path": "/tmp/a b"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("--precision force_fp17", "did you mean force_fp16"),
        ("--mix --no-mix", "contradict"),
        ("--prcision force_fp16", "did you mean --precision"),
        ("--set precison_mode=force_fp16", "did you mean 'precision_mode'"),
        ("--precision force_fp16 --set precision_mode=force_fp32", "given twice"),
        ("--set enable_dump=maybe", "not a bool"),
    ],
)
def test_bad_flags_are_one_usage_error_saying_nothing_ran(line, expected):
    with pytest.raises(UsageError) as err:
        _overrides_and_quiet(line, NpuConfig())
    assert expected in str(err.value) and "nothing was run" in str(err.value)
    assert "Usage: %%npu" in str(err.value)


def test_a_misspelt_flag_gets_the_hint_on_itself_not_on_a_neighbour():
    with pytest.raises(UsageError) as err:
        _overrides_and_quiet("--precison force_fp16 --dump", NpuConfig())
    message = str(err.value)
    assert "unknown flag --precison (did you mean --precision?)" in message
    assert "argument --dump" not in message


def test_an_abbreviated_flag_argparse_accepts_is_not_called_unknown():
    overrides, _ = _overrides_and_quiet("--prec force_fp16", NpuConfig())
    assert overrides["precision_mode"] == "force_fp16"


def test_the_usage_and_flag_help_come_from_the_cell_magics_decorators():
    help_text = NpuMagics.npu_cell.__doc__  # what %%npu? shows: IPython's magic_arguments help
    assert CELL_PARSER.parser is NpuMagics.npu_cell.parser
    for name in CELL_PARSER.names():
        assert name in CELL_PARSER.usage and name in help_text and CELL_PARSER.flag_usage(name) in CELL_PARSER.usage
        assert CELL_PARSER.flag_help(name).split()[0] in help_text
    assert CELL_PARSER.usage.startswith("%%npu [--mix] [--no-mix] [--precision MODE]")
    assert "--verbose" in CELL_PARSER.names()
    assert CELL_PARSER.flag_usage("--profile") == "--profile [DIR]" and CELL_PARSER.flag_usage("--dump") == "--dump DIR"


def test_a_function_without_magic_arguments_is_refused():
    from npu_jupyter._notebook.cell_options import CellParser

    with pytest.raises(TypeError, match="not decorated with @magic_arguments"):
        CellParser(lambda line, cell: None)


def test_layers_apply_lowest_first_without_touching_the_base():
    base = NpuConfig(precision_mode="force_fp32", mix_compile_mode=True)
    user = with_exclusions({"precision_mode_v2": "fp16"})
    cell = {"mix_compile_mode": False}
    result = merged(base, user, cell)
    assert result.changed() == {"mix_compile_mode": False, "precision_mode_v2": "fp16"}
    assert base.changed() == {"precision_mode": "force_fp32", "mix_compile_mode": True}


def test_unknown_precision_lists_both_value_sets_wrapped_between_values():
    from npu_jupyter._notebook.arguments import WRAP_WIDTH

    with pytest.raises(UsageError) as caught:
        _overrides_and_quiet("--precision fp16maybe", NpuConfig())
    lines = str(caught.value).splitlines()
    assert "precision_mode values:" in lines and "precision_mode_v2 values:" in lines
    values = [line for line in lines if line.startswith("    ")]
    assert all(len(line) <= WRAP_WIDTH for line in values)
    words = {v.strip() for line in values for v in line.split(",")}
    assert {"must_keep_origin_dtype", "allow_mix_precision_bf16", "mixed_bfloat16"} <= words


def test_reference_is_a_cell_switch_not_an_option():
    flags = CELL_PARSER.parse("--precision force_fp16 --reference", NpuConfig())
    assert flags.reference is True
    assert flags.overrides == {"precision_mode": "force_fp16", "precision_mode_v2": None}
    assert CELL_PARSER.parse("--precision force_fp16", NpuConfig()).reference is False
    assert "--reference" in CELL_PARSER.usage and "float32 reference" in CELL_PARSER.flag_help("--reference")
