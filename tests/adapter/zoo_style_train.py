# A model-zoo style TF1 training script, used as a test fixture: it is written the way the Ascend
# ModelZoo train scripts are (e.g. TensorFlow/built-in/cv/detection/CRNN_Kernel_ID0055_for_TensorFlow/
# tools/train_npu.py): npu_bridge imports at the top, a hand-written ConfigProto with an NpuOptimizer
# custom optimizer, npu_config_proto, npu_ops.dropout, a dynamic NPULossScaleOptimizer, tf.Session.
# It must run UNCHANGED under npu_jupyter's emulated adapter (tests/adapter/test_zoo_script.py) and would
# run as is on an Ascend server with TF 1.15 and the real adapter.
import os

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npu_bridge.npu_init import *  # noqa: F403 - as the zoo scripts do
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu import npu_scope
from npu_bridge.estimator.npu.npu_loss_scale_manager import ExponentialUpdateLossScaleManager
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer
from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer

BATCH, STEPS = 8, 4


def _weights(name, shape):
    return tf.get_variable(name, shape, initializer=tf.truncated_normal_initializer(stddev=0.1))


def build_model(images, labels, keep_prob):
    """A small CNN classifier: conv, pool, dense with npu_ops.dropout; the loss kept in float32."""
    conv = tf.nn.relu(tf.nn.conv2d(images, _weights("conv1_w", [3, 3, 1, 8]), [1, 1, 1, 1], "SAME"), name="conv1")
    pool = tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", name="pool1")
    flat = tf.reshape(pool, [BATCH, 4 * 4 * 8], name="flatten")
    hidden = tf.nn.relu(tf.matmul(flat, _weights("fc1_w", [128, 32])) + tf.get_variable("fc1_b", [32]), name="fc1")
    hidden = npu_ops.dropout(hidden, keep_prob)
    logits = tf.matmul(hidden, _weights("logits_w", [32, 10]), name="logits")
    with npu_scope.keep_dtype_scope():
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")


def session_config():
    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["enable_data_pre_proc"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
    custom_op.parameter_map["mix_compile_mode"].b = False
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    return npu_config_proto(config_proto=config)


def main():
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    images_np = rng.rand(BATCH, 8, 8, 1).astype(np.float32)
    labels_np = rng.randint(0, 10, size=BATCH).astype(np.int64)
    with tf.Graph().as_default():  # graph mode, as TF 1.15 is by default
        images = tf.placeholder(tf.float32, [BATCH, 8, 8, 1], name="images")
        labels = tf.placeholder(tf.int64, [BATCH], name="labels")
        keep_prob = tf.placeholder_with_default(0.9, [], name="keep_prob")
        loss = build_model(images, labels, keep_prob)
        global_step = tf.train.get_or_create_global_step()
        optimizer = tf.train.MomentumOptimizer(learning_rate=0.05, momentum=0.9)
        optimizer = NPUDistributedOptimizer(optimizer)
        loss_scale_manager = ExponentialUpdateLossScaleManager(
            init_loss_scale=2**10, incr_every_n_steps=2, decr_every_n_nan_or_inf=2, decr_ratio=0.5
        )
        optimizer = NPULossScaleOptimizer(optimizer, loss_scale_manager)
        update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        with tf.control_dependencies(update_ops):
            train_op = optimizer.minimize(loss, global_step=global_step)
        losses = []
        sess = tf.Session(config=session_config())
        sess.run(tf.global_variables_initializer())
        for _ in range(STEPS):
            _, loss_value = sess.run([train_op, loss], feed_dict={images: images_np, labels: labels_np})
            losses.append(float(loss_value))
        scale, step = sess.run([loss_scale_manager.get_loss_scale(), global_step])
        result = {
            "losses": losses,
            "loss_scale": float(scale),
            "global_step": int(step),
            "session_type": type(sess).__name__,
            "rank_size": get_npu_rank_size(),
            "pid": os.getpid(),
        }
        sess.close()
        return result


if __name__ == "__main__":
    print(main())
