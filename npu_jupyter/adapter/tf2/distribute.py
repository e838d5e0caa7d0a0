"""``npu_device.distribute`` for one rank, and ``npu_device.compat.v1.SessionConfigBuilder``.

The TF2 adapter skips every collective when the process is not a cluster worker (no device opened, or
a rank size of 1): ``all_reduce`` returns its values, ``broadcast`` does nothing,
``shard_and_rebatch_dataset`` returns the dataset and batch size, the grouping helpers apply or return
as they are. The emulator is rank 0 of 1, so these are those identities; a rank size above 1
(``RANK_SIZE`` / ``CM_WORKER_SIZE``) is refused with a message, since there is no second device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, MutableMapping, TypeVar

from npu_jupyter.adapter.tf2.device import require_one_rank

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AttrValue, ConfigProto

_T = TypeVar("_T")  # what a one-rank collective hands back: the value it was given


def all_reduce(
    values: _T, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = "hccl_world_group"
) -> _T:
    """One rank: the values themselves (the mean or sum over one rank)."""
    require_one_rank("npu_device.distribute.all_reduce")
    return values


def broadcast(
    values: object, root_rank: int = 0, fusion: int = 2, fusion_id: int = 0, group: str = "hccl_world_group"
) -> None:
    """One rank: rank 0 already holds the values."""
    require_one_rank("npu_device.distribute.broadcast")


def shard_and_rebatch_dataset(dataset: _T, global_bs: int) -> tuple[_T, int]:
    """One rank: the whole dataset, the whole batch."""
    require_one_rank("npu_device.distribute.shard_and_rebatch_dataset")
    return dataset, global_bs


def npu_distributed_keras_optimizer_wrapper(
    optimizer: object,
    reduce_reduction: str = "mean",
    fusion: int = 1,
    fusion_id: int = -1,
    group: str = "hccl_world_group",
) -> object:
    """One rank: the Keras optimizer (resolved as ``tf.keras.optimizers.get`` does), gradients unreduced."""
    require_one_rank("npu_device.distribute.npu_distributed_keras_optimizer_wrapper")
    import tensorflow as tf

    resolved: object = tf.keras.optimizers.get(optimizer)  # a Keras optimizer (Keras ships no types)
    return resolved


def grouping_gradients_apply(apply_func: Callable[..., _T], grads_and_vars: object, *args: Any, **kwargs: Any) -> _T:
    """One rank applies every gradient itself."""
    require_one_rank("npu_device.distribute.grouping_gradients_apply")
    return apply_func(grads_and_vars, *args, **kwargs)


def grouping_broadcast(variables: _T) -> _T:
    """One rank: nothing to send."""
    require_one_rank("npu_device.distribute.grouping_broadcast")
    return variables


class SessionConfigBuilder:
    """``npu_device.compat.v1.SessionConfigBuilder``: a ConfigProto with an NpuOptimizer entry to fill.

    As the adapter's: soft placement on (unless a ConfigProto is given), remapping off, one
    ``NpuOptimizer`` custom optimizer added whose ``parameter_map`` the script fills.
    """

    def __init__(self, config: object = None) -> None:
        import tensorflow as tf
        from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

        if isinstance(config, tf.compat.v1.ConfigProto):
            self._session_config = config
        else:
            self._session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
        self._session_config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
        self._npu_config = self._session_config.graph_options.rewrite_options.custom_optimizers.add()
        self._npu_config.name = "NpuOptimizer"

    @property
    def parameter_map(self) -> MutableMapping[str, AttrValue]:
        """The NpuOptimizer entry's parameter_map."""
        mapping: MutableMapping[str, AttrValue] = self._npu_config.parameter_map
        return mapping

    @property
    def session_config(self) -> ConfigProto:
        """The ConfigProto (emulated adapter sessions read its NpuOptimizer entry)."""
        config: ConfigProto = self._session_config
        return config
