"""YOLOv3 (Darknet-53) detector training from the model zoo (``YoloV3_ID0076``).

Carried over from ``train.py`` / ``model.py`` / ``utils/layer_utils.py``: a ``tf.data`` pipeline behind
a reinitializable ``Iterator.from_structure`` + ``make_initializer``; Darknet-53 (conv 3x3 then
[1, 2, 8, 8, 4] residual blocks between stride-2 convs, each conv = conv (no bias) + BN + leaky ReLU
0.1, BN moving averages in UPDATE_OPS); three YOLO heads with ``yolo_block`` s, 1x1 convs and
nearest-neighbour upsampling + concat; the loss layer with box decoding, ``box_iou`` against the
ground-truth boxes for the ignore mask, ``tf.where`` guarding ``log`` of zero widths/heights,
sigmoid cross-entropy confidence (pos/neg masks) and class terms, plus L2 regularisation;
cosine decay with a ``tf.cond`` warm-up; Momentum wrapped in ``NPULossScaleOptimizer
(FixedLossScaleManager(128))``; ``clip_by_norm(g, 100)`` on every gradient under the UPDATE_OPS
dependency; summaries; fetches ``[train_op, merged, y_true, loss, global_step, learning_rate]``
(``y_true`` and ``loss`` are lists: nested fetches); session config ``use_off_line``,
``enable_data_pre_proc``, ``iterations_per_loop=10`` with remapping off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from corpus.corpus import CorpusModel
from corpus.tf1_blocks import batch_norm, conv2d, loss_scaled_apply, tf1_control_flow

v1 = tf.compat.v1

ARCHITECTURE = "Detector"
IDIOMS = (
    "where_in_training",
    "gradient_clipping",
    "batch_norm_update_ops",
    "cond_in_training",
    "nested_fetches",
    "summaries",
    "tfdata_initializable_iterator",
)
SOURCE = "TensorFlow/built-in/cv/detection/YoloV3_ID0076_for_TensorFlow (train.py, model.py, utils/layer_utils.py)"

IMG = 64  # script: 416
W = 16  # channel divisor (script: 32..1024)
BATCH = 2  # script: 32
CLASSES = 3  # script: 80 (COCO)
MAX_BOXES = 4  # per-scale gt boxes (script: 32/64/128)
ANCHORS = np.array(
    [[10, 13], [16, 30], [33, 23], [30, 61], [62, 45], [59, 119], [116, 90], [156, 198], [373, 326]], np.float32
) * (IMG / 416.0)
SCALES = ((IMG // 32, [6, 7, 8]), (IMG // 16, [3, 4, 5]), (IMG // 8, [0, 1, 2]))


def _cbl(x, filters, kernel, pt_unused=None, stride=1, name="conv"):
    """layer_utils.conv2d: fixed padding for strided convs, conv without bias, BN (UPDATE_OPS), leaky ReLU."""
    padding = "SAME"
    if stride > 1:
        pad = kernel - 1
        x = tf.pad(x, [[0, 0], [pad // 2, pad - pad // 2], [pad // 2, pad - pad // 2], [0, 0]])
        padding = "VALID"
    y = conv2d(x, max(filters // W, 2), kernel, stride, padding, name=name, bias=False)
    return tf.nn.leaky_relu(batch_norm(y, True, name + "/BatchNorm", decay=0.99, epsilon=1e-5), 0.1)


def _darknet53(x):
    net = _cbl(x, 32, 3, name="conv0")
    net = _cbl(net, 64, 3, stride=2, name="conv1")
    routes = []
    for stage, (blocks, filters) in enumerate(((1, 32), (2, 64), (8, 128), (8, 256), (4, 512))):
        if stage:
            net = _cbl(net, filters * 2, 3, stride=2, name=f"down{stage}")
        for b in range(blocks):
            shortcut = net
            y = _cbl(net, filters, 1, name=f"res{stage}_{b}/a")
            net = _cbl(y, filters * 2, 3, name=f"res{stage}_{b}/b") + shortcut
        routes.append(net)
    return routes[2], routes[3], routes[4]


def _yolo_block(x, filters, name):
    net = x
    for i, (f, k) in enumerate(((1, 1), (2, 3), (1, 1), (2, 3), (1, 1))):
        net = _cbl(net, filters * f, k, name=f"{name}/c{i}")
    route = net
    return route, _cbl(route, filters * 2, 3, name=f"{name}/c5")


def _upsample(x, size):
    return tf.image.resize(x, (size, size), method="nearest")


def _forward(image):
    route_1, route_2, route_3 = _darknet53(image)
    inter1, net = _yolo_block(route_3, 512, "yolo1")
    fm1 = conv2d(net, 3 * (5 + CLASSES), 1, name="Conv_6")
    inter1 = _upsample(_cbl(inter1, 256, 1, name="up1"), int(route_2.shape[1]))
    inter2, net = _yolo_block(tf.concat([inter1, route_2], 3), 256, "yolo2")
    fm2 = conv2d(net, 3 * (5 + CLASSES), 1, name="Conv_14")
    inter2 = _upsample(_cbl(inter2, 128, 1, name="up2"), int(route_1.shape[1]))
    _, fm3 = _yolo_block(tf.concat([inter2, route_1], 3), 128, "yolo3")
    fm3 = conv2d(fm3, 3 * (5 + CLASSES), 1, name="Conv_22")
    return fm1, fm2, fm3


def _box_iou(pred_boxes, gt):
    """IoU of every predicted box [N,g,g,3,4] with every gt box [N,1,M,4] -> [N,g,g,3,M]."""
    p_xy, p_wh = pred_boxes[..., 0:2], pred_boxes[..., 2:4]
    p_xy, p_wh = tf.expand_dims(p_xy, -2), tf.expand_dims(p_wh, -2)
    t_xy = gt[:, tf.newaxis, tf.newaxis, ..., 0:2]  # [N,1,1,1,M,2]
    t_wh = gt[:, tf.newaxis, tf.newaxis, ..., 2:4]
    mins = tf.maximum(p_xy - p_wh / 2.0, t_xy - t_wh / 2.0)
    maxs = tf.minimum(p_xy + p_wh / 2.0, t_xy + t_wh / 2.0)
    inter = tf.maximum(maxs - mins, 0.0)
    inter_area = inter[..., 0] * inter[..., 1]
    return inter_area / (p_wh[..., 0] * p_wh[..., 1] + t_wh[..., 0] * t_wh[..., 1] - inter_area + 1e-10)


def _loss_layer(fm, y_true, anchors, gt_box):
    grid = int(fm.shape[1])
    ratio = float(IMG) / grid
    fm = tf.reshape(fm, [-1, grid, grid, 3, 5 + CLASSES])
    xy, wh, conf_logits, prob_logits = tf.split(fm, [2, 2, 1, CLASSES], axis=-1)
    gx, gy = tf.meshgrid(tf.range(grid, dtype=tf.float32), tf.range(grid, dtype=tf.float32))
    offset = tf.reshape(tf.stack([gx, gy], -1), [grid, grid, 1, 2])
    centers = (tf.nn.sigmoid(xy) + offset) * ratio
    sizes = tf.exp(wh) * anchors
    pred_boxes = tf.concat([centers, sizes], -1)
    object_mask = y_true[..., 4:5]
    iou = _box_iou(pred_boxes, gt_box)
    ignore_mask = tf.stop_gradient(tf.expand_dims(tf.cast(tf.reduce_max(iou, -1) < 0.5, tf.float32), -1))
    pred_xy = pred_boxes[..., 0:2] / ratio - offset
    true_xy = y_true[..., 0:2] / ratio - offset
    true_tw_th = y_true[..., 2:4] / anchors
    pred_tw_th = pred_boxes[..., 2:4] / anchors
    true_tw_th = tf.where(tf.equal(true_tw_th, 0), tf.ones_like(true_tw_th), true_tw_th)
    pred_tw_th = tf.where(tf.equal(pred_tw_th, 0), tf.ones_like(pred_tw_th), pred_tw_th)
    true_tw_th = tf.math.log(tf.clip_by_value(true_tw_th, 1e-9, 1e9))
    pred_tw_th = tf.math.log(tf.clip_by_value(pred_tw_th, 1e-9, 1e9))
    scale = 2.0 - (y_true[..., 2:3] / IMG) * (y_true[..., 3:4] / IMG)
    n = float(BATCH)
    mix_w = y_true[..., -1:]
    xy_loss = tf.reduce_sum(tf.square(true_xy - pred_xy) * object_mask * scale * mix_w) / n
    wh_loss = tf.reduce_sum(tf.square(true_tw_th - pred_tw_th) * object_mask * scale * mix_w) / n
    xent = tf.nn.sigmoid_cross_entropy_with_logits
    conf = object_mask * xent(labels=object_mask, logits=conf_logits) + (1 - object_mask) * ignore_mask * xent(
        labels=object_mask, logits=conf_logits
    )
    conf_loss = tf.reduce_sum(conf * mix_w) / n
    class_loss = tf.reduce_sum(object_mask * xent(labels=y_true[..., 5 : 5 + CLASSES], logits=prob_logits) * mix_w) / n
    return xy_loss, wh_loss, conf_loss, class_loss


def _random_targets(rng, count):
    """y_true per scale [count, g, g, 3, 5+C+1] with a few objects, and gt boxes [count, 1, M, 4]."""
    ys, boxes = [], []
    for grid, _ in SCALES:
        y = np.zeros((count, grid, grid, 3, 5 + CLASSES + 1), np.float32)
        b = np.zeros((count, 1, MAX_BOXES, 4), np.float32)
        for i in range(count):
            for k in range(2):
                gx, gy, a = rng.randint(grid), rng.randint(grid), rng.randint(3)
                box = [
                    (gx + 0.5) * IMG / grid,
                    (gy + 0.5) * IMG / grid,
                    rng.uniform(4, IMG / 2),
                    rng.uniform(4, IMG / 2),
                ]
                y[i, gy, gx, a, 0:4] = box
                y[i, gy, gx, a, 4] = 1.0
                y[i, gy, gx, a, 5 + rng.randint(CLASSES)] = 1.0
                y[i, gy, gx, a, -1] = 1.0
                b[i, 0, k] = box
        ys.append(y)
        boxes.append(b)
    return ys, boxes


def build(files_dir: Path) -> CorpusModel:
    rng = np.random.RandomState(4)
    count = 8
    images = rng.rand(count, IMG, IMG, 3).astype(np.float32)
    ys, boxes = _random_targets(rng, count)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(4)
        ds = tf.data.Dataset.from_tensor_slices((images, ys[0], ys[1], ys[2], boxes[0], boxes[1], boxes[2]))
        ds = ds.shuffle(count, seed=0).repeat().batch(BATCH, drop_remainder=True).prefetch(2)
        iterator = v1.data.Iterator.from_structure(v1.data.get_output_types(ds), v1.data.get_output_shapes(ds))
        train_init_op = iterator.make_initializer(ds)
        image, y13, y26, y52, gt13, gt26, gt52 = iterator.get_next()
        y_true, gt_box = [y13, y26, y52], [gt13, gt26, gt52]
        with v1.variable_scope("yolov3"):
            feature_maps = _forward(image)
        parts = [
            _loss_layer(fm, y, ANCHORS[idx], gt) for fm, (grid, idx), y, gt in zip(feature_maps, SCALES, y_true, gt_box)
        ]
        xy, wh, conf, cls = (tf.add_n([p[i] for p in parts]) for i in range(4))
        loss = [xy + wh + conf + cls, xy, wh, conf, cls]
        l2_loss = tf.add_n([5e-4 * tf.nn.l2_loss(v) for v in v1.trainable_variables() if "weights" in v.name])
        for tag, value in zip(("total_loss", "loss_xy", "loss_wh", "loss_conf", "loss_class"), loss):
            v1.summary.scalar("train_batch_statistics/" + tag, value)
        v1.summary.scalar("train_batch_statistics/loss_l2", l2_loss)
        global_step = v1.train.get_or_create_global_step()
        warmup_steps, total_steps, base_lr = 20, 200, 1e-4
        cosine = tf.maximum(v1.train.cosine_decay(base_lr, global_step - warmup_steps, total_steps - warmup_steps), 0)
        warmup = base_lr * tf.cast(global_step, tf.float32) / float(warmup_steps)
        learning_rate = tf.cond(global_step < warmup_steps, lambda: warmup, lambda: cosine)
        v1.summary.scalar("learning_rate", learning_rate)
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train_op = loss_scaled_apply(
                v1.train.MomentumOptimizer(learning_rate, 0.9),
                loss[0] + l2_loss,
                global_step=global_step,
                init_scale=128.0,
                dynamic=False,
                clip_norm=100.0,
            )
        merged = v1.summary.merge_all()
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
    return CorpusModel(
        name="yolov3_darknet53",
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=[*init, train_init_op],
        train_fetches=[train_op, merged, y_true, loss, global_step, learning_rate],
        loss=loss[0].name,
        config={
            "kind": "session",
            "parameter_map": {"use_off_line": True, "enable_data_pre_proc": True, "iterations_per_loop": 10},
            "rewrite_options": {"remapping": "OFF"},
        },
        notes=(
            "Images 64x64 (script 416), channels /16, batch 2 (script 32), 3 classes (script 80), 4 gt "
            "boxes per scale, anchors scaled by 64/416. Darknet-53 block counts kept (1,2,8,8,4). The "
            "script's TextLineDataset + py_func parsing is replaced by from_tensor_slices over random "
            "targets in the same layout (y_true [N,g,g,3,5+C+1], gt boxes [N,1,M,4]); the "
            "reinitializable from_structure iterator and its initializer are kept. The script sets "
            "iterations_per_loop=10 but loops with plain sess.run (no loop helper), as here. "
            "Loss-scale optimizer (fixed 128) rebuilt from raw ops; clip_by_norm(100) per gradient."
        ),
    )
