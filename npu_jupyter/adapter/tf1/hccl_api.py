"""CANN's HCCL Python API (``hccl.manage.api``, ``hccl.split.api``) for one rank.

Scripts import it directly (``from hccl.manage.api import get_rank_size``) and through
``npu_bridge.npu_init``. The emulator is one device: the world group ``hccl_world_group`` has one rank,
whose id is 0, in every group. A group of that one rank can be created and destroyed; asking for more
ranks, or another rank id, is one clear error. The gradient split strategies choose how all-reduce
fuses gradients across ranks; with one rank nothing is reduced, so they are checked and kept only.
"""

from __future__ import annotations

from typing import Iterable

WORLD_GROUP = "hccl_world_group"
_groups: set[str] = {WORLD_GROUP}
split_strategies: dict[str, tuple[str, list[int]]] = {}  # group -> ("idx" or "size", the list)


def _one_rank_error(what: str) -> ValueError:
    return ValueError(
        f"{what}: npu_jupyter's emulated HCCL has one rank (the emulator is one device, rank 0 of 1); "
        "run multi-rank code on an Ascend cluster, or with RANK_SIZE unset (1) here"
    )


def _known(group: str) -> str:
    if group not in _groups:
        raise ValueError(f"HCCL group {group!r} does not exist; created groups: {sorted(_groups)}")
    return group


def create_group(group: str, rank_num: int, rank_ids: Iterable[int]) -> None:
    """A group of the one rank: ``rank_num`` 1 and ``rank_ids`` [0]."""
    if group == WORLD_GROUP:
        raise ValueError(f"create_group: {WORLD_GROUP!r} exists already and cannot be created")
    if int(rank_num) != 1 or list(rank_ids) != [0]:
        raise _one_rank_error(f"create_group({group!r}, {rank_num}, {list(rank_ids)})")
    _groups.add(group)


def destroy_group(group: str) -> None:
    """Destroy a group made by :func:`create_group` (the world group cannot be destroyed)."""
    if group == WORLD_GROUP:
        raise ValueError(f"destroy_group: {WORLD_GROUP!r} cannot be destroyed")
    _groups.discard(_known(group))


def get_rank_size(group: str = WORLD_GROUP) -> int:
    """Ranks in ``group``: 1."""
    _known(group)
    return 1


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """Ranks of ``group`` on this server: 1."""
    _known(group)
    return 1


def get_rank_id(group: str = WORLD_GROUP) -> int:
    """The rank of this process in ``group``: 0."""
    _known(group)
    return 0


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """The rank of this process on this server: 0."""
    _known(group)
    return 0


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """World rank of ``group_rank_id`` in ``group``: rank 0 is world rank 0; there is no other."""
    _known(group)
    if int(group_rank_id) != 0:
        raise _one_rank_error(f"get_world_rank_from_group_rank({group!r}, {group_rank_id})")
    return 0


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """Rank in ``group`` of world rank ``world_rank_id``: 0 for 0; there is no other."""
    _known(group)
    if int(world_rank_id) != 0:
        raise _one_rank_error(f"get_group_rank_from_world_rank({world_rank_id}, {group!r})")
    return 0


def _split(kind: str, values: object, group: str) -> None:
    _known(group)
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(f"set_split_strategy_by_{kind}: expected a list of non-negative ints, got {values!r}")
    split_strategies[group] = (kind, list(values))


def set_split_strategy_by_idx(idxList: list[int], group: str = WORLD_GROUP) -> None:  # noqa: N803 - HCCL's own name
    """Where all-reduce splits the gradients, by gradient index: kept; one rank reduces nothing."""
    _split("idx", idxList, group)


def set_split_strategy_by_size(dataSizeList: list[int], group: str = WORLD_GROUP) -> None:  # noqa: N803 - HCCL's own name
    """Where all-reduce splits the gradients, by percent of their size: kept; one rank reduces nothing."""
    _split("size", dataSizeList, group)
