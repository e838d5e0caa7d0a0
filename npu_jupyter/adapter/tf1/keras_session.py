"""``set_keras_session_npu_config`` / ``npu_clear_session``: Keras 2's global session, an emulator session.

The ModelZoo's migrated Keras scripts begin with ``npu_keras_sess = set_keras_session_npu_config()`` and
end with ``close_session(npu_keras_sess)``: the adapter makes a session with its NPU ConfigProto edits
(those of ``npu_config_proto``) and sets it as TF 1.15 Keras' global session, so ``model.fit`` runs on
the device. Here the session is an emulator session (as ``init_resource``'s), so each Keras step is
one emulator run, and it
becomes the global session of the Keras 2 that ``tf.keras`` is (TF 2.x's Keras 2, or tf_keras under
``TF_USE_LEGACY_KERAS=1``). Keras 3 has no sessions: one clear error saying what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import ConfigProto, Session


def set_keras_session_npu_config(config: ConfigProto | None = None) -> Session:
    """A session with the adapter's NPU config edits, set as Keras 2's global session, and returned."""
    backend = _keras2_backend("set_keras_session_npu_config")
    session = _npu_session(config)
    backend.set_session(session)
    return session


def npu_clear_session(config: ConfigProto | None = None) -> None:
    """Keras 2's ``clear_session``, then a new NPU-configured session as its global session."""
    backend = _keras2_backend("npu_clear_session")
    backend.clear_session()
    backend.set_session(_npu_session(config))


def _npu_session(config: ConfigProto | None) -> Session:
    """An emulator session with the adapter's edits of ``config``, made as ``init_resource`` makes its own."""
    from npu_jupyter.adapter.tf1.run_config import npu_config_proto
    from npu_jupyter.adapter.tf1.sessions import emulated_session

    return emulated_session(config=npu_config_proto(config))


def _keras2_backend(name: str) -> Any:  # noqa: ANN401 - the backend module of whichever Keras 2 is tf.keras
    """``tf.compat.v1.keras.backend`` when it is Keras 2's (it has sessions); otherwise one clear error."""
    import tensorflow as tf

    keras = getattr(tf.compat.v1, "keras", None)
    backend = getattr(keras, "backend", None)
    if not callable(getattr(backend, "set_session", None)):
        raise RuntimeError(
            f"npu_bridge.npu_init.{name} sets Keras 2's global session, but tf.keras here is Keras 3, which "
            "has no sessions; set TF_USE_LEGACY_KERAS=1 before TensorFlow is imported (Keras 2 from the "
            "tf_keras package; `%load_ext npu_jupyter` sets it) and restart the kernel"
        )
    return backend
