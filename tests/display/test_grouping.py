"""Repeated findings folded into one message with their count and the ops they name."""

from __future__ import annotations

from npu_jupyter._display.grouping import group_messages


def test_messages_differing_only_in_the_op_they_name_become_one_with_count_and_ops():
    messages = [f"Failed spread place {op} on cpu (it exchanges a resource tensor with CPU op call)" for op in "abc"]
    (one,) = group_messages(messages, {"a", "b", "c", "call"})
    assert one == "Failed spread place <op> on cpu (it exchanges a resource tensor with CPU op call) [3 times: a; b; c]"


def test_a_detail_that_varies_with_the_op_is_listed_with_it():
    messages = [f"place {op} fails ({op} reads variable v{k}:0) badly" for k, op in enumerate(["51", "53"])]
    (one,) = group_messages(messages, {"51", "53"})
    assert one == "place <op> fails (<op> reads variable <…>) badly [2 times: 51 / v0:0; 53 / v1:0]"


def test_exact_repeats_are_dropped_and_unrelated_messages_kept_apart_in_order():
    messages = ["op a is slow", "the plan lowers precision", "op a is slow", "op b is slow but differently so"]
    assert group_messages(messages, {"a", "b"}) == [
        "op a is slow",
        "the plan lowers precision",
        "op b is slow but differently so",
    ]


def test_messages_naming_no_op_are_never_grouped_even_when_one_word_differs():
    assert group_messages(["dump step 1 skipped", "dump step 2 skipped"], {"x"}) == [
        "dump step 1 skipped",
        "dump step 2 skipped",
    ]
