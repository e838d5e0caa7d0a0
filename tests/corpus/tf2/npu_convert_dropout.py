"""The ``npu_convert_dropout.py`` the ModelZoo's PointNet (and other TF2 Keras samples) ship next to the script.

Written for npu_jupyter's corpus from the shipped file (facts, not code): importing it makes every Keras
``Dropout`` layer run the NPU dropout of ``npu_ops`` (DropOutGenMask + DropOutDoMask) when training and
pass its input through otherwise. The shipped file patches ``keras.layers.core.Dropout`` (TF 2.6's Keras
2 package layout); this one patches ``tf.keras.layers.Dropout``, the same class there and the one the
script's layers come from on any TensorFlow. The corpus harness puts the original ``call`` back after a run.
"""

import tensorflow as tf

import npu_ops

Dropout = tf.keras.layers.Dropout


def dropout_call(self, inputs, training=None):
    """Make Keras Dropout execute the NPU dropout."""
    if training is None:
        training = tf.keras.backend.learning_phase()

    def dropped_inputs():
        return npu_ops.dropout(
            inputs, noise_shape=self._get_noise_shape(inputs), seed=self.seed, keep_prob=1 - self.rate
        )

    if isinstance(training, bool) or not tf.is_tensor(training):
        return dropped_inputs() if training else tf.identity(inputs)
    return tf.cond(tf.cast(training, tf.bool), dropped_inputs, lambda: tf.identity(inputs))


Dropout.call = dropout_call
