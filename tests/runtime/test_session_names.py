"""Session swaps reach every namespace scripts take ``Session`` from."""

from __future__ import annotations

import pytest

from npu_jupyter._runtime.session import session_names

tf = pytest.importorskip("tensorflow")


def test_patch_reaches_tf_compat_v1_and_the_imported_compat_module_and_restores_both():
    import tensorflow.compat.v1 as imported

    original = tf.compat.v1.Session
    replaced = session_names.patch(("Session",), lambda name, cls: "stand-in")
    try:
        assert tf.compat.v1.Session == "stand-in" and imported.Session == "stand-in"
    finally:
        session_names.restore(replaced)
    assert tf.compat.v1.Session is original and imported.Session is original
