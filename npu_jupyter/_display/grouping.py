"""Repeated findings shown once: messages that differ only in the op they name become one line.

The planner states some findings once per op: NodePlacer's "Failed spread place <op> on cpu …" comes
once for every variable a Keras metric passes to a CPU call, ten near-identical lines in a row. A
reader needs the finding once, how often it occurred, and which ops it names. :func:`group_messages`
folds messages whose words are equal except for op names (words that are op names of the plan), and
at most one other word that varies with them (the variable an op reads, say), into one message: the
varying words become ``<op>`` (or ``<…>``), followed by the count and, per message, what they were.
"""

from __future__ import annotations

from typing import Iterable

_OP = "\x00op"
_SHOWN = 8


def group_messages(messages: list[str], op_names: Iterable[str]) -> list[str]:
    """``messages`` with exact repeats dropped and near-identical ones grouped, in first-seen order.

    A message alone in its group is kept as it is.
    """
    names = set(op_names)
    groups: list[tuple[tuple[str, ...], list[list[str]]]] = []
    for message in dict.fromkeys(messages):
        words = message.split(" ")
        key = tuple(_OP if _bare(word) in names else word for word in words)
        for known, members in groups:
            if _close(known, key):
                members.append(words)
                break
        else:
            groups.append((key, [words]))
    return [_one(members, names) for _, members in groups]


def _close(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Same words apart from op names and at most one other word, and at least one op name."""
    if len(a) != len(b) or _OP not in a:
        return False
    return sum(x != y for x, y in zip(a, b)) <= 1


_PUNCTUATION = "(),;:."


def _bare(word: str) -> str:
    """A word without the punctuation that may surround an op name in a sentence."""
    return word.strip(_PUNCTUATION)


def _replaced(word: str, placeholder: str) -> str:
    """``word`` with its bare part replaced, its surrounding punctuation kept: ``(51)`` -> ``(<op>)``."""
    core = _bare(word)
    start = word.find(core) if core else len(word)
    return word[:start] + placeholder + word[start + len(core) :]


def _one(members: list[list[str]], names: set[str]) -> str:
    """One message standing for a group: varying words become ``<op>``/``<…>``, then count and values."""
    if len(members) == 1:
        return " ".join(members[0])
    first = members[0]
    varying = [k for k in range(len(first)) if len({m[k] for m in members}) > 1]
    words = list(first)
    for k in varying:
        words[k] = _replaced(first[k], "<op>" if all(_bare(m[k]) in names for m in members) else "<…>")
    rows = list(dict.fromkeys(" / ".join(dict.fromkeys(_bare(m[k]) for k in varying)) for m in members))
    more = f"; +{len(rows) - _SHOWN} more" if len(rows) > _SHOWN else ""
    return f"{' '.join(words)} [{len(members)} times: {'; '.join(rows[:_SHOWN])}{more}]"


__all__ = ["group_messages"]
