"""``init_resource`` / ``shutdown_resource`` / ``close_session`` for one emulated device.

On the adapter, ``init_resource`` opens the device in a new session (running ``initialize_system``) and
reads the rank ids from HCCL; here the session is an emulator session, there is no device to open, and
the one device is rank 0 of 1.
"""

from __future__ import annotations

from typing import Any


def init_resource(config: Any = None) -> tuple[Any, Any]:
    """(session with the adapter's config, the shutdown op), as the adapter returns them."""
    from npu_jupyter.adapter.npu_ops import shutdown_system
    from npu_jupyter.adapter.run_config import npu_config_proto
    from npu_jupyter.adapter.sessions import emulated_session

    shutdown = shutdown_system()
    return emulated_session(config=npu_config_proto(config)), shutdown


def shutdown_resource(sess: Any, npu_shutdown: Any) -> None:
    """Runs the shutdown op (a no-op: there is no device to close)."""
    sess.run(npu_shutdown)


def close_session(sess: Any) -> None:
    """Closes the session."""
    sess.close()
