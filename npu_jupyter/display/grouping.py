"""Repeated findings shown once: messages that differ only in the op they name become one line.

The planner states some findings once per op: NodePlacer's "Failed spread place <op> on cpu …" comes
once for every variable a Keras metric passes to a CPU call, ten near-identical lines in a row. A
reader needs the finding once, how often it occurred, and which ops it names. :func:`group_messages`
folds messages whose words are equal except for op names (words that are op names of the plan) into
one message, the varying op replaced by ``<op>``, followed by the count and the ops.
"""

from __future__ import annotations

from typing import Iterable

_OP = "\x00op"
_SHOWN_OPS = 8


def group_messages(messages: list[str], op_names: Iterable[str]) -> list[str]:
    """``messages`` with exact repeats dropped and messages differing only in op names grouped.

    Order follows each group's first message; a message alone in its group is kept as it is.
    """
    names = set(op_names)
    groups: dict[tuple[str, ...], list[list[str]]] = {}
    for message in dict.fromkeys(messages):
        words = message.split(" ")
        key = tuple(_OP if _bare(word) in names else word for word in words)
        groups.setdefault(key, []).append(words)
    return [_one(members) for members in groups.values()]


def _bare(word: str) -> str:
    """A word without the punctuation that may follow an op name in a sentence."""
    return word.rstrip(",;:.)")


def _one(members: list[list[str]]) -> str:
    """One message standing for a group: varying op words become ``<op>``, then the count and ops."""
    if len(members) == 1:
        return " ".join(members[0])
    first = members[0]
    varying = [k for k in range(len(first)) if len({m[k] for m in members}) > 1]
    words = list(first)
    for k in varying:
        words[k] = "<op>" + first[k][len(_bare(first[k])) :]
    ops = list(dict.fromkeys(_bare(m[k]) for m in members for k in varying))
    more = f" (+{len(ops) - _SHOWN_OPS} more)" if len(ops) > _SHOWN_OPS else ""
    return f"{' '.join(words)} [{len(members)} times, <op> = {', '.join(ops[:_SHOWN_OPS])}{more}]"


__all__ = ["group_messages"]
