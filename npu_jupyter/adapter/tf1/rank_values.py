"""The adapter's rank look-ups for one device: ``util``'s value store and ``npu_init``'s ``get_npu_rank_*``.

On the adapter ``init_resource`` asks HCCL for the rank id and size and stores them with
``util.set_value``; ``get_npu_rank_id()`` & co. read them back with one-rank defaults (id 0, size 1).
The emulator is one device, so the store starts with those values and ``init_resource`` writes them.
``util.get_ranksize`` reads the environment as the adapter does (``RANK_SIZE`` or ``CM_WORKER_SIZE``,
a string, ``"1"`` when neither is set).
"""

from __future__ import annotations

import os
from typing import Any

_values: dict[str, object] = {}


def global_dict_init() -> None:
    """``util.global_dict_init``: empty the value store."""
    _values.clear()


def set_value(key: str, value: object) -> None:
    """``util.set_value``."""
    _values[key] = value


def get_value(key: str, def_value: object = None) -> Any:  # noqa: ANN401 - the adapter's store gives back whatever set_value was given
    """``util.get_value``: the stored value, else ``def_value``."""
    return _values.get(key, def_value)


def get_ranksize() -> str:
    """``util.get_ranksize``: ``RANK_SIZE`` or ``CM_WORKER_SIZE`` as the adapter reads them (both set is an error)."""
    if os.getenv("CM_WORKER_SIZE") is not None and os.getenv("RANK_SIZE") is not None:
        raise ValueError("RANK_SIZE and CM_WORK_SIZE cannot be configured at the same time")
    return os.getenv("RANK_SIZE") or os.getenv("CM_WORKER_SIZE") or "1"


def record_one_rank() -> None:
    """What ``init_resource`` stores after asking HCCL: here, rank 0 of 1."""
    for key, value in (("npu_rank_id", 0), ("npu_local_rank_id", 0), ("npu_rank_size", 1), ("npu_local_rank_size", 1)):
        set_value(key, value)


def get_npu_rank_id() -> int:
    """``npu_init.get_npu_rank_id``: the stored rank id (0: the one device)."""
    return int(get_value("npu_rank_id", 0))


def get_npu_local_rank_id() -> int:
    """``npu_init.get_npu_local_rank_id``: 0."""
    return int(get_value("npu_local_rank_id", 0))


def get_npu_rank_size() -> int:
    """``npu_init.get_npu_rank_size``: 1."""
    return int(get_value("npu_rank_size", 1))


def get_npu_local_rank_size() -> int:
    """``npu_init.get_npu_local_rank_size``: 1."""
    return int(get_value("npu_local_rank_size", 1))
