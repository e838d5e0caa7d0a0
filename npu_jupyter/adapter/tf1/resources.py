"""``init_resource`` / ``shutdown_resource`` / ``close_session`` for one emulated device.

On the adapter, ``init_resource`` opens the device in a new session (running ``initialize_system``) and
reads the rank ids from HCCL; here the session is an emulator session, there is no device to open, and
the one device is rank 0 of 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from npu_jupyter._runtime.session.emulator import EmulatorSession
    from npu_jupyter._tf_types import ConfigProto, Operation, Session

# npu_init.experimental_options: the graph rewriters the adapter documents turning back on
EXPERIMENTAL_OPTIONS = {
    "disable_model_pruning": False,
    "function_optimization": 1,  # RewriterConfig.ON
    "constant_folding": 1,
    "shape_optimization": 1,
    "arithmetic_optimization": 1,
    "loop_optimization": 1,
    "dependency_optimization": 1,
    "layout_optimizer": 1,
}


def init_resource(config: ConfigProto | None = None) -> tuple[EmulatorSession, Operation]:
    """(session with the adapter's config, the shutdown op), as the adapter returns them; rank 0 of 1 stored."""
    from npu_jupyter.adapter.tf1.npu_ops import shutdown_system
    from npu_jupyter.adapter.tf1.rank_values import global_dict_init, record_one_rank
    from npu_jupyter.adapter.tf1.run_config import npu_config_proto
    from npu_jupyter.adapter.tf1.sessions import emulated_session

    global_dict_init()
    shutdown = shutdown_system()
    session = emulated_session(config=npu_config_proto(config))
    record_one_rank()
    return session, shutdown


def shutdown_resource(sess: Session, npu_shutdown: object) -> None:
    """Runs the shutdown op (a no-op: there is no device to close)."""
    sess.run(npu_shutdown)


def close_session(sess: Session) -> None:
    """Closes the session."""
    sess.close()
