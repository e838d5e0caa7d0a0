"""``Session._make_callable_from_options`` for the emulator: what Keras 2's graph-mode training calls.

Keras 2 in a TF1-style session (TF 1.15's ``tf.keras``; ``training_v1`` of Keras 2.x and tf_keras with
eager execution off) builds its train, test and predict functions with the private
``session._make_callable_from_options(CallableOptions)`` of ``tf.compat.v1.Session``, so without it a
Keras ``fit`` on an emulator session (``K.set_session(tf.Session(config))`` under the emulated adapter,
or the default Keras session in a ``%%npu`` cell) stops with an ``AttributeError``. Each call of the
callable built here is one ``run`` of the emulator session, so the Keras step is planned, reported
and observed like any other ``sess.run``.
"""

from __future__ import annotations

from typing import Any, Callable


def callable_from_options(run: Callable[..., Any], options: Any) -> Callable[..., list[Any]]:  # noqa: ANN401 - a CallableOptions proto
    """A callable running ``options``' fetches and targets through ``run`` (the session's ``run``).

    Feeds are positional in ``options.feed`` order, as TensorFlow's callable takes them; the result is
    the list of fetched values (targets are run, not returned). ``tensor_connection`` (feeding one graph
    tensor into another inside the step) has no ``Session.run`` equivalent and is refused when the
    callable is made, saying so, rather than run differently.
    """
    if len(options.tensor_connection):
        raise NotImplementedError(
            "the emulator session runs CallableOptions without tensor_connection only (Keras feeds a "
            "symbolic tensor through it); feed NumPy arrays instead, e.g. model.fit(x_array, y_array)"
        )
    feeds, fetches, targets = list(options.feed), list(options.fetch), list(options.target)
    run_options = options.run_options if options.HasField("run_options") else None

    def call(*args: Any, run_metadata: Any = None) -> list[Any]:  # noqa: ANN401 - fed values, RunMetadata
        """One step: ``run([fetches, targets], feeds)``; the fetched values as a list."""
        if len(args) != len(feeds):
            raise ValueError(f"this callable takes {len(feeds)} fed value(s) ({', '.join(feeds)}), got {len(args)}")
        fetched, _ = run([fetches, targets], dict(zip(feeds, args)), run_options, run_metadata)
        return list(fetched)

    return call
