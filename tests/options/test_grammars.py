"""The small languages inside string options, read the way today's adapter reads them."""

from __future__ import annotations

import pytest

from npu_jupyter._options import grammars


@pytest.mark.parametrize("text", ["", "0", "0|5|10", "0|3-5|10", "10-20", "0||5", "|".join(["1"] * 100)])
def test_dump_step_accepts_what_the_adapter_accepts(text):
    assert grammars.check_dump_step(text) is None


@pytest.mark.parametrize(
    "text, phrase",
    [
        ("5-3", "first step is >= the second"),
        ("5-5", "first step"),
        ("1-2-3", "correct example"),
        ("a", "correct example"),
        ("-1", "correct example"),
        (" 1", "correct example"),
        ("|".join(["1"] * 101), "at most 100"),
    ],
)
def test_dump_step_rejects_malformed_text(text, phrase):
    assert phrase in grammars.check_dump_step(text)


def test_in_out_pair_is_read_like_the_adapter_character_walk():
    text = "[[['import/conv2d_1/convolution'], ['import/conv2d_59/BiasAdd', 'import/conv2d_67/BiasAdd']]]"
    assert grammars.parse_in_out_pair(text) == [
        (["import/conv2d_1/convolution"], ["import/conv2d_59/BiasAdd", "import/conv2d_67/BiasAdd"])
    ]
    two = str([[["a"], ["b"]], [["c", "d"], ["e"]]])
    assert grammars.parse_in_out_pair(two) == [(["a"], ["b"]), (["c", "d"], ["e"])]


@pytest.mark.parametrize("text", ["[]", "[[['a']]]", "x", "[[['a'], ['b']]"])
def test_in_out_pair_without_a_full_pair_is_invalid(text):
    assert grammars.check_in_out_pair(text) is not None


def test_input_shape_and_dynamic_dims_parse_into_gears():
    assert grammars.parse_input_shape("data:1,1,40,-1;label:1,-1") == [("data", [1, 1, 40, -1]), ("label", [1, -1])]
    assert grammars.parse_input_shape("ns:input:0:2,-1") == [("ns:input:0", [2, -1])]
    assert grammars.parse_dynamic_dims("20,20;40,40") == [[20, 20], [40, 40]]
    assert grammars.check_input_shape("") is not None
    assert grammars.check_input_shape("data") is not None
    assert grammars.check_dynamic_dims("1,a") is not None


@pytest.mark.parametrize(
    "text, ok",
    [
        ("getnext:[128 ,3~5, 2~128, -1],[64 ,3~5, 2~128, -1];data:[128 ,3~5, 2~128, -1]", True),
        ("data:[1,20~800,20~800,3],[],[1,20~800,20~800,3]", True),
        ("data:[-1,-1,-1, 3]", True),
        ("data:[1];data:[2]", False),
        ("data:[1];getnext:[2];data:[3]", False),
        ("inputs:[1]", False),
        ("data:[1~]", False),
        ("data:1,2", False),
    ],
)
def test_dynamic_inputs_shape_range_grammar(text, ok):
    assert (grammars.check_dynamic_inputs_shape_range(text) is None) is ok


@pytest.mark.parametrize(
    "text, ok",
    [
        ("fast|step|0.9", True),
        ("fast1|loss|1.05", True),
        ("fast|step|0.2", True),
        ("fast|step|0.1", False),
        ("fast|loss|2", False),
        ("slow|step|0.5", False),
        ("fast|epoch|0.5", False),
        ("fast|step", False),
        ("fast|step|x", False),
    ],
)
def test_accelerate_train_mode_grammar(text, ok):
    assert (grammars.check_accelerate_train_mode(text) is None) is ok


@pytest.mark.parametrize(
    "text, ok",
    [
        ('{"output":"/tmp/p","training_trace":"on","task_trace":"on","aicpu":"on","fp_point":"","bp_point":""}', True),
        ('{"output":"./p","aic_metrics":"Custom:0x49,0x4a"}', True),
        ('{"output":"./p","sys_hardware_mem_freq":"50","host_sys":"cpu,mem"}', True),
        ('{"output":"./p","sys_hardware_mem_freq":500}', False),
        ('{"output":"./p","aic_metrics":"Pipe"}', False),
        ('{"output":"./p","host_sys":"gpu"}', False),
        ('{"output":"./p","task_trace":true}', False),
        ('{"output":"./p","storage_limit":"200"}', False),
        ("task_trace", False),
        ('"on"', False),
    ],
)
def test_profiling_options_grammar(text, ok):
    assert (grammars.check_profiling_options(text) is None) is ok


def test_profiling_options_typo_gets_a_suggestion():
    assert "did you mean 'task_trace'" in grammars.check_profiling_options('{"task_trce":"on"}')


@pytest.mark.parametrize(
    "checker, good, bad",
    [
        (grammars.check_local_device_list, "0,1,2", "0,,1"),
        (grammars.check_stream_max_parallel_num, "DNN_VM_TF:10,DNN_V100:1", "DNN_VM_TF=10"),
        (grammars.check_auto_tune_mode, "RL,GA", "RL,XX"),
        (grammars.check_byte_size, "1024", "1e3"),
    ],
)
def test_list_grammars(checker, good, bad):
    assert checker(good) is None and checker(bad) is not None


@pytest.mark.parametrize(
    "check, text",
    [
        (grammars.check_dump_step, "5\n"),
        (grammars.check_dump_step, "0|5-7\n"),
        (grammars.check_local_device_list, "1,2\n"),
        (grammars.check_input_shape, "data:1,2\n"),
        (grammars.check_dynamic_dims, "1,2;3,4\n"),
        (grammars.check_byte_size, "1024\n"),
    ],
)
def test_a_trailing_newline_is_not_part_of_the_grammar(check, text):
    assert check(text) is not None


@pytest.mark.parametrize("text", ["²", "٣", "１２", "1_000", "-1", " 12"])
def test_byte_size_takes_ascii_decimal_digits_only(text):
    assert "whole number of bytes" in grammars.check_byte_size(text)


@pytest.mark.parametrize(
    ("text", "ranges"),
    [
        (None, None),
        ("", None),
        ("0|5|10", [(0, 0), (5, 5), (10, 10)]),
        ("0|3-5|10", [(0, 0), (3, 5), (10, 10)]),
        ("0||5", [(0, 0), (5, 5)]),
    ],
)
def test_parse_dump_step_reads_the_steps_check_dump_step_accepts(text, ranges):
    assert grammars.parse_dump_step(text) == ranges


@pytest.mark.parametrize("text", ["-5", "3-", "5-3", "5\n", "٣"])
def test_parse_dump_step_refuses_what_check_dump_step_refuses(text):
    with pytest.raises(ValueError, match="correct example"):
        grammars.parse_dump_step(text)
