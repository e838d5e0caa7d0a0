"""Telling a storage rounding apart in a graph, whichever form it takes (Cast pair or NpuEmuRound)."""

from __future__ import annotations


def rounding_trips(nodes):
    """The storage roundings among ``nodes`` (ops or NodeDefs): the last node of each round trip.

    A round trip is two Casts (``.../to``, ``.../back``) or one ``NpuEmuRound`` (``.../back``); both
    forms end in a node named ``<op>/_npu_emu_round_<in|out><slot>_<f16|bf16>/back``.
    """
    from npu_jupyter._runtime.rewrite import ROUND_MARKER

    return [n for n in nodes if ROUND_MARKER in n.name and n.name.endswith("/back")]
