"""LSTM sentiment classifier (the zoo's LSTM_ID0111 train.py): dynamic RNN over fixed word vectors.

Carried over from the zoo script: pre-trained word vectors held as a graph constant (padded by 14
columns to 64), cast to float16 for the ``embedding_lookup`` and back to float32; the batch made
time-major with a transpose and a strided slice; one LSTM layer of 64 units run as a dynamic RNN
(the script uses npu_bridge's ``DynamicRNN``; here ``tf.compat.v1.nn.dynamic_rnn``, i.e. a
``while_loop``); the last time step through a dense layer, softmax cross-entropy, Adam at 1e-3
wrapped in NPULossScaleOptimizer with ExponentialUpdateLossScaleManager(init 2**32, incr 1000,
decr every 2 overflows by 0.5); placeholders fed each step; the step runs only the train op
(``sess.run(optimizer, feed)``); the session parameter_map with the script's default flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import LSTMCell, dynamic_loss_scale_step, tf1, tf1_control_flow

NAME = "lstm_sentiment"
ARCHITECTURE = "LSTM/GRU"
SOURCE = "TensorFlow/built-in/nlp/LSTM_ID0111_for_TensorFlow (train.py)"
IDIOMS = ("while_loop", "loss_scaling_isfinite", "cond_in_training")

BATCH, MAX_LEN, VOCAB, DIMS, UNITS, CLASSES = 4, 24, 200, 50, 64, 2


def build(files_dir: Path) -> CorpusModel:
    """Build the LSTM training graph; ``feed_fn`` makes the script's alternating-label batches."""
    import numpy as np
    import tensorflow as tf

    v1 = tf1()
    rng = np.random.RandomState(1)
    word_vectors = np.pad(rng.uniform(-1, 1, (VOCAB, DIMS)).astype("float32"), ((0, 0), (0, 14)))
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(1)
        labels = v1.placeholder(v1.float32, [BATCH, CLASSES])
        input_data = v1.placeholder(v1.int32, [BATCH, MAX_LEN])
        vectors16 = v1.cast(word_vectors, v1.float16)
        data = v1.nn.embedding_lookup(vectors16, input_data)
        data = v1.transpose(data, [1, 0, 2], name="transpose_time_major")
        data = v1.strided_slice(data, [0, 0, 0], [MAX_LEN, BATCH, DIMS + 14])
        data = v1.cast(data, v1.float32)
        cell = LSTMCell(UNITS, "lstm", forget_bias=1.0)
        value, _ = v1.nn.dynamic_rnn(cell, data, initial_state=cell.zero_state(BATCH, v1.float32), time_major=True)
        weight = v1.Variable(v1.truncated_normal([UNITS, CLASSES]))
        bias = v1.Variable(v1.constant(0.1, shape=[CLASSES]))
        last = v1.gather(value, MAX_LEN - 1)
        prediction = v1.matmul(last, weight) + bias
        correct = v1.equal(v1.argmax(prediction, 1), v1.argmax(labels, 1))
        accuracy = v1.reduce_mean(v1.cast(correct, v1.float32), name="accuracy")
        loss = v1.reduce_mean(v1.nn.softmax_cross_entropy_with_logits_v2(logits=prediction, labels=labels), name="loss")
        optimizer = v1.train.AdamOptimizer(0.001)
        train_op, _ = dynamic_loss_scale_step(
            optimizer,
            loss,
            v1.trainable_variables(),
            init_loss_scale=2.0**32,
            incr_every_n_steps=1000,
            decr_every_n_nan_or_inf=2,
            decr_ratio=0.5,
        )
        init = [v1.global_variables_initializer()]

    def feed_fn(step: int) -> dict[Any, Any]:
        """Even rows positive, odd rows negative, random word ids (getTrainBatch's layout)."""
        r = np.random.RandomState(100 + step)
        batch_labels = np.array([[1, 0] if i % 2 == 0 else [0, 1] for i in range(BATCH)], "float32")
        return {input_data: r.randint(0, VOCAB, (BATCH, MAX_LEN)).astype("int32"), labels: batch_labels}

    parameter_map = {"use_off_line": True, "precision_mode": "allow_mix_precision"}
    return CorpusModel(
        name=NAME,
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=train_op,
        loss=loss.name,
        config={"kind": "session", "parameter_map": parameter_map, "rewrite_options": {"remapping": "OFF"}},
        feed_fn=feed_fn,
        extra={"eval_fetches": [loss, accuracy]},
        notes="Shrunk: vocabulary 400k GloVe rows->200 random rows (still 50+14 columns), max length 250->24, "
        "batch 24->4. npu_bridge's fused DynamicRNN op becomes tf.compat.v1.nn.dynamic_rnn with an "
        "equivalent LSTM cell (forget bias 1.0). The script's rewrite_options.remapping=OFF is kept in "
        "config['rewrite_options'] (a grappler switch, not an NPU option); dump/profiling flags "
        "default off.",
    )
