"""CRNN (ShadowNet) text recognition trained with CTC, as the zoo's CRNN_Kernel_ID0055 tools/train_npu.py.

Carried over from the zoo script: the tfrecords pipeline (TFRecordDataset -> batch -> map
``parse_example`` with string features ``images``/``imagepaths``, ``decode_raw`` of the image bytes,
normalise to [-1, 1], shuffle, repeat, prefetch, ``make_one_shot_iterator``) for a train and a val
reader; the dense labels turned into a SparseTensor over every (row, position) index; ShadowNet's
VGG-style feature extractor (7 convs, BN with UPDATE_OPS on convs 1-7 as ``layerbn`` does, max-pools
2x2, 2x2, 2x1, 2x1, a 2x2 conv with stride [2,1]) down to a height-1 feature map, squeezed to a
sequence of width 25; two bidirectional LSTM layers built as forward and time-reversed ``dynamic_rnn``
passes (while loops) concatenated; dropout 0.5; a bias-free projection to 37 classes (blank 36);
``ctc_loss_v2`` with the label lengths and logit lengths 25; greedy CTC decoders for train and val;
warm-up via ``tf.range``/``gather`` and a ``tf.cond`` against the cosine-decayed rate; Momentum 0.9
under NPULossScaleOptimizer(ExponentialUpdateLossScaleManager(2**32, 1000, 2, 0.5)) inside the
UPDATE_OPS control dependencies; summaries merged; the step fetches
``[optimizer, train_ctc_loss, merge_summary_op, learning_rate]``; the session parameter_map.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import LSTMCell, batch_norm, dynamic_loss_scale_step, tf1, tf1_control_flow

NAME = "crnn_ctc"
ARCHITECTURE = "CRNN+CTC"
SOURCE = (
    "TensorFlow/built-in/cv/detection/CRNN_Kernel_ID0055_for_TensorFlow (tools/train_npu.py, "
    "crnn_model/crnn_net.py, data_provider/tf_io_pipline_fast_tools.py, config/global_config.py)"
)
IDIOMS = (
    "while_loop",
    "string_ops",
    "tfdata_one_shot_iterator",
    "batch_norm_update_ops",
    "summaries",
    "cond_in_training",
    "loss_scaling_isfinite",
)

BATCH, HEIGHT, WIDTH, CHANNELS = 2, 32, 100, 3
SEQ_LENGTH, MAX_LENGTH, NUM_CLASSES, HIDDEN = 25, 8, 37, 16
WIDTHS = (8, 16, 32, 32, 64, 64, 64)  # the script's 64, 128, 256, 256, 512, 512, 512 divided by 8


def write_tfrecords(path: Path, count: int = 8) -> None:
    """A tiny synth90k-style tfrecords file: raw uint8 image bytes, image path, int labels and length."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(9)
    feature = tf.train.Feature
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            length = int(rng.randint(3, MAX_LENGTH + 1))
            labels = list(rng.randint(0, NUM_CLASSES - 1, length)) + [NUM_CLASSES - 1] * (MAX_LENGTH - length)
            image = rng.randint(0, 256, (HEIGHT, WIDTH, CHANNELS)).astype("uint8").tobytes()
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "images": feature(bytes_list=tf.train.BytesList(value=[image])),
                        "imagepaths": feature(bytes_list=tf.train.BytesList(value=[b"synth/%d_word.jpg" % i])),
                        "labels": feature(int64_list=tf.train.Int64List(value=[int(x) for x in labels])),
                        "labels_length": feature(int64_list=tf.train.Int64List(value=[length])),
                    }
                )
            )
            writer.write(example.SerializeToString())


def _reader(path: Path, flag: str) -> Any:
    """CrnnFeatureReader.inputs: batch serialized records, parse, decode, normalise, one-shot iterate."""
    v1 = tf1()

    def extract(serialized: Any) -> Any:
        features = v1.parse_example(
            serialized,
            features={
                "images": v1.FixedLenFeature([], v1.string),
                "imagepaths": v1.FixedLenFeature([], v1.string),
                "labels": v1.VarLenFeature(v1.int64),
                "labels_length": v1.FixedLenFeature([], v1.int64),
            },
        )
        images = v1.cast(v1.decode_raw(features["images"], v1.uint8), v1.float32)
        images = v1.reshape(images, [BATCH, HEIGHT, WIDTH, CHANNELS])
        labels = v1.cast(v1.sparse.to_dense(features["labels"], default_value=NUM_CLASSES - 1), v1.int32)
        labels = v1.reshape(labels, [BATCH, MAX_LENGTH])
        return images, labels, features["imagepaths"], v1.cast(features["labels_length"], v1.int32)

    def normalize(images: Any, labels: Any, paths: Any, lengths: Any) -> Any:
        return v1.subtract(v1.divide(images, 127.5), 1.0), labels, paths, lengths

    dataset = v1.data.TFRecordDataset(str(path)).batch(BATCH, drop_remainder=True)
    dataset = dataset.map(extract, num_parallel_calls=2).map(normalize, num_parallel_calls=2)
    dataset = dataset.shuffle(buffer_size=128, seed=4).repeat().prefetch(2)
    return v1.data.make_one_shot_iterator(dataset).get_next(name="%s_IteratorGetNext" % flag)


def _conv(
    x: Any, out: int, name: str, kernel: int = 3, strides: Any = (1, 1), padding: str = "SAME", use_bias: bool = False
) -> Any:
    """cnn_basenet.conv2d: a square kernel conv, optional bias."""
    v1 = tf1()
    with v1.variable_scope(name):
        w = v1.get_variable("W", [kernel, kernel, int(x.shape[-1]), out], initializer=v1.glorot_uniform_initializer())
        y = v1.nn.conv2d(x, w, [1, strides[0], strides[1], 1], padding)
        if use_bias:
            y = v1.nn.bias_add(y, v1.get_variable("b", [out], initializer=v1.zeros_initializer()))
        return y


def _pool(x: Any, size: Any, padding: str = "VALID") -> Any:
    return tf1().nn.max_pool(x, [1, size[0], size[1], 1], [1, size[0], size[1], 1], padding)


def _shadownet(images: Any, training: bool) -> Any:
    """Feature extraction, map-to-sequence and the 2-layer BiLSTM; returns time-major logits [T, B, C]."""
    v1 = tf1()
    relu = v1.nn.relu
    with v1.variable_scope("feature_extraction_module"):
        x = _pool(relu(batch_norm(_conv(images, WIDTHS[0], "conv1", use_bias=True), training, "bn1")), (2, 2))
        x = _pool(relu(batch_norm(_conv(x, WIDTHS[1], "conv2", use_bias=True), training, "bn2")), (2, 2))
        x = relu(batch_norm(_conv(x, WIDTHS[2], "conv3"), training, "bn3"))
        x = _pool(relu(batch_norm(_conv(x, WIDTHS[3], "conv4"), training, "bn4")), (2, 1))
        x = relu(batch_norm(_conv(x, WIDTHS[4], "conv5"), training, "bn5"))
        x = _pool(relu(batch_norm(_conv(x, WIDTHS[5], "conv6"), training, "bn6")), (2, 1))
        x = relu(batch_norm(_conv(x, WIDTHS[6], "conv7", kernel=2, strides=(2, 1), padding="VALID"), training, "bn7"))
    with v1.variable_scope("map_to_sequence_module"):
        x = v1.squeeze(x, axis=1)  # [B, W', C]
        x = v1.pad(x, [[0, 0], [0, SEQ_LENGTH - int(x.shape[1])], [0, 0]])
    with v1.variable_scope("sequence_rnn_module"):
        seq = v1.transpose(x, [1, 0, 2], name="transpose_inputdata")
        for layer in (1, 2):
            fw, bw = LSTMCell(HIDDEN, "fw_cell%d" % layer), LSTMCell(HIDDEN, "bw_cell%d" % layer)
            zero = fw.zero_state(BATCH, v1.float32)
            with v1.variable_scope("fw%d" % layer):
                fw_y, _ = v1.nn.dynamic_rnn(fw, seq, initial_state=zero, time_major=True)
            with v1.variable_scope("bw%d" % layer):
                bw_y, _ = v1.nn.dynamic_rnn(bw, v1.reverse(seq, axis=[0]), initial_state=zero, time_major=True)
            seq = v1.concat((fw_y, v1.reverse(bw_y, axis=[0])), axis=2)
        if training:
            seq = v1.nn.dropout(seq, rate=0.5)
        flat = v1.reshape(seq, [SEQ_LENGTH * BATCH, 2 * HIDDEN])
        w = v1.get_variable("w", [2 * HIDDEN, NUM_CLASSES], initializer=v1.truncated_normal_initializer(stddev=0.2))
        return v1.reshape(v1.matmul(flat, w, name="logits"), [SEQ_LENGTH, BATCH, NUM_CLASSES])


def _sparse_labels(dense: Any) -> Any:
    """train_npu.py's SparseTensor over every (row, position) of the padded dense labels."""
    import numpy as np

    v1 = tf1()
    x, y = np.meshgrid(np.arange(MAX_LENGTH), np.arange(BATCH))
    indexes = np.concatenate([y.flatten()[:, None], x.flatten()[:, None]], axis=1)
    return v1.SparseTensor(
        v1.constant(indexes, v1.int64), v1.reshape(dense, [-1]), np.array([BATCH, MAX_LENGTH], "int64")
    )


def _ctc(images: Any, labels: Any, lengths: Any, training: bool, reuse: bool) -> tuple[Any, Any]:
    """ShadowNet.compute_loss: inference then mean ctc_loss_v2 (blank = NUM_CLASSES - 1)."""
    import numpy as np

    v1 = tf1()
    with v1.variable_scope("shadow_net", reuse=reuse):
        logits = _shadownet(images, training)
    loss = v1.reduce_mean(
        v1.nn.ctc_loss_v2(
            labels=labels,
            logits=logits,
            label_length=lengths,
            logit_length=SEQ_LENGTH * np.ones(BATCH, dtype=np.int32),
            blank_index=NUM_CLASSES - 1,
        ),
        name="ctc_loss",
    )
    return logits, loss


def build(files_dir: Path) -> CorpusModel:
    """Build the CRNN training graph over a tfrecords file written into ``files_dir``."""
    import numpy as np
    import tensorflow as tf

    v1 = tf1()
    record = Path(files_dir) / "synth90k_train.tfrecords"
    write_tfrecords(record)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(2)
        images, dense_labels, _paths, lengths = _reader(record, "train")
        val_images, val_dense, _vpaths, val_lengths = _reader(record, "val")
        train_labels, val_labels = _sparse_labels(dense_labels), _sparse_labels(val_dense)
        train_logits, train_ctc_loss = _ctc(images, train_labels, lengths, True, False)
        val_logits, val_ctc_loss = _ctc(val_images, val_labels, val_lengths, False, True)
        seq_len = SEQ_LENGTH * np.ones(BATCH)
        train_decoded, _ = v1.nn.ctc_greedy_decoder(train_logits, seq_len, merge_repeated=False)
        val_decoded, _ = v1.nn.ctc_greedy_decoder(val_logits, seq_len, merge_repeated=False)

        global_step = v1.train.get_or_create_global_step()
        lr0, warmup_steps, num_iters = 0.01, 10, 240000
        warmup_lr = v1.range(0, lr0, lr0 / warmup_steps)
        warmup = v1.cast(warmup_steps, v1.int64)
        wp_lr = v1.gather(warmup_lr, v1.minimum(warmup, global_step))
        decayed_lr = v1.train.cosine_decay(learning_rate=lr0, global_step=global_step, decay_steps=num_iters)
        learning_rate = v1.cond(v1.less(global_step, warmup), lambda: wp_lr, lambda: decayed_lr)
        optimizer = v1.train.MomentumOptimizer(learning_rate=learning_rate, momentum=0.9, use_nesterov=False)
        with v1.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train_op, _ = dynamic_loss_scale_step(
                optimizer,
                train_ctc_loss,
                v1.trainable_variables(),
                init_loss_scale=2.0**32,
                incr_every_n_steps=1000,
                decr_every_n_nan_or_inf=2,
                decr_ratio=0.5,
                global_step=global_step,
            )
        optimizer_op = v1.group(train_op)
        v1.summary.scalar(name="train_ctc_loss", tensor=train_ctc_loss)
        v1.summary.scalar(name="learning_rate", tensor=learning_rate)
        merge_summary_op = v1.summary.merge_all()
        init = [v1.global_variables_initializer()]
        train_fetches = [optimizer_op, train_ctc_loss, merge_summary_op, learning_rate]

    parameter_map = {
        "enable_dump": False,
        "dump_path": str(files_dir / "dump"),
        "dump_step": "0-5",
        "dump_mode": "all",
        "use_off_line": True,
        "enable_data_pre_proc": True,
        "precision_mode": "allow_mix_precision",
        "mix_compile_mode": False,
    }
    return CorpusModel(
        name=NAME,
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=train_fetches,
        loss=train_ctc_loss.name,
        config={"kind": "session", "parameter_map": parameter_map},
        extra={"val_fetches": [val_ctc_loss, val_decoded, val_labels], "train_decoded": train_decoded},
        notes="Shrunk: conv widths /8, LSTM 256->16 units, max label length 23->8, batch 64->2, 8 records; "
        "image 32x100 and sequence length 25 kept (the conv stack gives width 24, padded to 25 so the "
        "script's logit_length holds). npu_bridge's DynamicRNN becomes tf.compat.v1.nn.dynamic_rnn. "
        "_augment_for_train is an identity reshape in the script and is left out. The script's "
        "hard-coded dump_path is replaced by files_dir/dump (enable_dump stays False as shipped).",
    )
