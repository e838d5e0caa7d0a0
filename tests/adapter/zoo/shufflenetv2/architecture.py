"""npu_jupyter stand-in for ModelZoo shufflenetv2_ID0185's architecture.py, which needs tf.contrib.slim (TF 1.15 only).

The same entry point and structure, shrunk: a stem convolution with batch norm, one ShuffleNet v2 stage
(a downsampling unit and a basic unit: channel split, 1x1 conv, 3x3 depthwise conv, 1x1 conv, concat,
channel shuffle), a 1x1 conv, global average pooling and the classifier. Conv kernels are named
``weights`` as slim names them, so model.py's weight decay finds them.
"""

import tensorflow.compat.v1 as tf

BATCH_NORM_MOMENTUM = 0.997
BATCH_NORM_EPSILON = 1e-3


def shufflenet_v2(images, is_training, num_classes=1000, depth_multiplier='1.0'):
    possibilities = {'0.5': 8, '1.0': 16, '1.5': 24, '2.0': 32}  # the original: 48, 116, 176, 224
    depth = possibilities[depth_multiplier]

    def conv(x, channels, kernel, stride, scope, relu=True):
        with tf.variable_scope(scope):
            w = tf.get_variable('weights', [kernel, kernel, x.shape[-1], channels],
                                initializer=tf.glorot_uniform_initializer())
            x = tf.nn.conv2d(x, w, [1, stride, stride, 1], 'SAME')
            x = tf.layers.batch_normalization(x, axis=3, training=is_training, momentum=BATCH_NORM_MOMENTUM,
                                              epsilon=BATCH_NORM_EPSILON, fused=True, name='batch_norm')
            return tf.nn.relu(x) if relu else x

    def depthwise(x, stride, scope):
        with tf.variable_scope(scope):
            w = tf.get_variable('depthwise_weights', [3, 3, x.shape[-1], 1],
                                initializer=tf.glorot_uniform_initializer())
            return tf.nn.depthwise_conv2d(x, w, [1, stride, stride, 1], 'SAME')

    def shuffle(x, y):
        z = tf.stack([x, y], axis=4)  # [b, h, w, c, 2]
        shape = tf.shape(z)
        z = tf.reshape(z, [shape[0], shape[1], shape[2], 2 * x.shape[-1]])
        return tf.split(z, 2, axis=3)

    with tf.variable_scope('ShuffleNetV2'):
        x = (2.0 * images) - 1.0
        x = conv(x, 24, 3, 2, 'Conv1')
        x = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], 'SAME')
        with tf.variable_scope('Stage2/unit_1'):
            y = conv(depthwise(conv(x, depth, 1, 1, 'conv1x1_before'), 2, 'depthwise'), depth, 1, 1, 'conv1x1_after')
            x = conv(depthwise(x, 2, 'second_branch/depthwise'), depth, 1, 1, 'second_branch/conv1x1_after')
            x, y = shuffle(x, y)
        with tf.variable_scope('Stage2/unit_2'):
            y = conv(depthwise(conv(y, depth, 1, 1, 'conv1x1_before'), 1, 'depthwise'), depth, 1, 1, 'conv1x1_after')
            x = tf.concat(shuffle(x, y), axis=3)
        x = conv(x, 64, 1, 1, 'Conv5')  # the original: 1024
    x = tf.reduce_mean(x, axis=[1, 2])
    with tf.variable_scope('classifier'):
        w = tf.get_variable('weights', [x.shape[-1], num_classes], initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable('biases', [num_classes], initializer=tf.zeros_initializer())
    return tf.nn.xw_plus_b(x, w, b)
