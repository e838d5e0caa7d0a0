"""GRU4Rec session-based recommender (the zoo's GRU4Rec_ID0128 gru4rec_BP), with its shipped mixlist file.

Carried over from the zoo script: one GRU layer (tanh) stepped once per minibatch on the item
embedding, the hidden state passed in and out through placeholders (one per layer, fed every step),
in-batch negative sampling (the target items' softmax rows and biases gathered, logits
[batch, batch]), softmax final activation and the cross-entropy loss on the diagonal,
``tf.maximum(1e-5, exponential_decay(lr, step, 1e4, 0.96, staircase=True))``, Adam under
NPULossScaleOptimizer(ExponentialUpdateLossScaleManager(2**32, 1000, 2, 0.5)), ``grad_cap`` 0 (no
clipping); the step's fetches ``[cost, global_step, lr, train_op]``; the session parameter_map of
``main.py`` with ``modify_mixlist`` pointing at the ``ops_info.json`` the model ships (black list
additions Reciprocal, Log, Add), written into ``files_dir``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import GRUCell, dynamic_loss_scale_step, tf1, tf1_control_flow

NAME = "gru4rec"
ARCHITECTURE = "LSTM/GRU"
SOURCE = (
    "TensorFlow/built-in/nlp/GRU4Rec_ID0128_for_TensorFlow (gru4rec_BP/main.py, gru4rec_BP/model.py, "
    "gru4rec_BP/ops_info.json)"
)
IDIOMS = ("loss_scaling_isfinite", "cond_in_training")

BATCH, RNN_SIZE, N_ITEMS, LAYERS = 16, 32, 500, 1

#: gru4rec_BP/ops_info.json as shipped: the mixed-precision black list gains three ops.
OPS_INFO = {"black-list": {"to-remove": [], "to-add": ["Reciprocal", "Log", "Add"]}}


def build(files_dir: Path) -> CorpusModel:
    """Build the GRU4Rec training graph; ``feed_fn`` feeds item ids, next items and the GRU state."""
    import numpy as np
    import tensorflow as tf

    v1 = tf1()
    mixlist = Path(files_dir) / "ops_info.json"
    mixlist.write_text(json.dumps(OPS_INFO, indent=1))
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(6)
        x = v1.placeholder(v1.int32, [BATCH], name="input")
        y = v1.placeholder(v1.int32, [BATCH], name="output")
        state = [v1.placeholder(v1.float32, [BATCH, RNN_SIZE], name="rnn_state") for _ in range(LAYERS)]
        global_step = v1.Variable(0, name="global_step", trainable=False)
        with v1.variable_scope("gru_layer"):
            sigma = float(np.sqrt(6.0 / (N_ITEMS + RNN_SIZE)))
            initializer = v1.random_uniform_initializer(minval=-sigma, maxval=sigma)
            embedding = v1.get_variable("embedding", [N_ITEMS, RNN_SIZE], initializer=initializer)
            softmax_w = v1.get_variable("softmax_w", [N_ITEMS, RNN_SIZE], initializer=initializer)
            softmax_b = v1.get_variable("softmax_b", [N_ITEMS], initializer=v1.constant_initializer(0.0))
            output = v1.nn.embedding_lookup(embedding, x)
            final_state = []
            for layer in range(LAYERS):
                output, new_state = GRUCell(RNN_SIZE, "cell_%d" % layer, activation=v1.tanh)(output, state[layer])
                final_state.append(new_state)
        sampled_w = v1.nn.embedding_lookup(softmax_w, y)
        sampled_b = v1.nn.embedding_lookup(softmax_b, y)
        logits = v1.matmul(output, sampled_w, transpose_b=True) + sampled_b
        yhat = v1.nn.softmax(logits)
        cost = v1.reduce_mean(-v1.log(v1.diag_part(yhat) + 1e-24), name="cost")
        lr = v1.maximum(1e-05, v1.train.exponential_decay(0.001, global_step, 1e4, 0.96, staircase=True))
        optimizer = v1.train.AdamOptimizer(lr)
        train_op, _ = dynamic_loss_scale_step(
            optimizer,
            cost,
            v1.trainable_variables(),
            init_loss_scale=2.0**32,
            incr_every_n_steps=1000,
            decr_every_n_nan_or_inf=2,
            decr_ratio=0.5,
            global_step=global_step,
        )
        init = [v1.global_variables_initializer()]
        train_fetches = [cost, global_step, lr, train_op]

    def feed_fn(step: int) -> dict[Any, Any]:
        """Session-parallel minibatch: current items, next items, and the carried GRU state."""
        r = np.random.RandomState(40 + step)
        feed = {x: r.randint(0, N_ITEMS, BATCH).astype("int32"), y: r.randint(0, N_ITEMS, BATCH).astype("int32")}
        for ph in state:
            feed[ph] = (r.rand(BATCH, RNN_SIZE).astype("float32") - 0.5) * 0.2 * min(step, 1)
        return feed

    parameter_map = {"precision_mode": "allow_mix_precision", "modify_mixlist": str(mixlist)}
    return CorpusModel(
        name=NAME,
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=train_fetches,
        loss=cost.name,
        config={"kind": "session", "parameter_map": parameter_map, "rewrite_options": {"remapping": "OFF"}},
        feed_fn=feed_fn,
        extra={"final_state": final_state},
        notes="Shrunk: items ~37k (rsc15) -> 500, rnn_size 100 -> 32, batch 4096 -> 16. The script feeds back "
        "the fetched final state, reset per ended session; feed_fn cannot see fetched values, so step 0 "
        "feeds zeros and later steps a small random state. rnn_cell.GRUCell/MultiRNNCell (Keras 2 only "
        "on TF >= 2.16) is replaced by an equivalent raw-op GRU cell; the DropoutWrapper is commented "
        "out in the script. The session's global_jit_level OFF and allow_growth are not NPU options.",
    )
