"""Transformer-base NMT (noahnmt seq2seq) trained through an Estimator whose session_config fills parameter_map.

Carried over from the zoo script: encoder and decoder of 6 post-LN layers each (self-attention,
encoder-decoder attention, ReLU FFN), one embedding table shared by source, target and the output
projection (``embedding.share`` + ``weight_tying``), embeddings scaled by sqrt(depth), sinusoid
positions, dropout 0.3, label smoothing 0.1, word-level loss, the learning-rate schedule
``constant*rsqrt_hidden_size*linear_warmup*rsqrt_decay``; the padded batches come from a tf.data
``make_one_shot_iterator`` as noahnmt's input pipeline does; ``trainer_lib.create_run_config``'s
``custom_op.parameter_map`` values exactly as typed there (``min_group_size`` is set with ``.b = 1``).
Padding and causal masks are applied with ``tf.where`` on the attention logits.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import dense, layer_norm, tf1, tf1_control_flow

NAME = "transformer_nmt"
ARCHITECTURE = "BERT/Transformer"
SOURCE = (
    "TensorFlow/built-in/nlp/Transformer_ID0004_for_TensorFlow (noahnmt/utils/trainer_lib.py, "
    "configs/transformer_base.yml, noahnmt/layers, noahnmt/inputs)"
)
IDIOMS = ("where_in_training", "tfdata_one_shot_iterator")

BATCH, SRC_LEN, TGT_LEN, VOCAB, HIDDEN, HEADS, FFN, LAYERS = 3, 10, 9, 64, 32, 4, 64, 6
NEG_INF = -1e9


def _positions(length: int) -> Any:
    """Sinusoid position encodings (timing signal), a constant [length, HIDDEN]."""
    import numpy as np

    pos = np.arange(length)[:, None]
    inv = 1.0 / (10000.0 ** (np.arange(0, HIDDEN, 2) / HIDDEN))
    table = np.zeros((length, HIDDEN), "float32")
    table[:, 0::2] = np.sin(pos * inv)
    table[:, 1::2] = np.cos(pos * inv)
    return tf1().constant(table)


def _attention(query: Any, memory: Any, mask: Any, name: str) -> Any:
    """Multi-head attention; ``mask`` [B, 1|Lq, Lk] bool, masked logits set to -1e9 with tf.where."""
    v1 = tf1()
    head = HIDDEN // HEADS
    with v1.variable_scope(name):

        def split(t: Any, length: int) -> Any:
            return v1.transpose(v1.reshape(t, [BATCH, length, HEADS, head]), [0, 2, 1, 3])

        lq, lk = int(query.shape[1]), int(memory.shape[1])
        q = split(dense(query, HIDDEN, "q", use_bias=False), lq)
        k = split(dense(memory, HIDDEN, "k", use_bias=False), lk)
        v = split(dense(memory, HIDDEN, "v", use_bias=False), lk)
        logits = v1.matmul(q, k, transpose_b=True) * (head**-0.5)
        full_mask = v1.broadcast_to(v1.expand_dims(mask, 1), v1.shape(logits))
        logits = v1.where(full_mask, logits, v1.fill(v1.shape(logits), NEG_INF))
        weights = v1.nn.dropout(v1.nn.softmax(logits), rate=0.3)
        ctx = v1.reshape(v1.transpose(v1.matmul(weights, v), [0, 2, 1, 3]), [BATCH, lq, HIDDEN])
        return dense(ctx, HIDDEN, "output", use_bias=False)


def _ffn(x: Any, name: str) -> Any:
    """Position-wise feed-forward block (ReLU)."""
    v1 = tf1()
    with v1.variable_scope(name):
        return dense(v1.nn.dropout(dense(x, FFN, "dense1", v1.nn.relu), rate=0.3), HIDDEN, "dense2")


def _residual(x: Any, y: Any, name: str) -> Any:
    """Post-LN residual with dropout, as transformer_base configures."""
    return layer_norm(x + tf1().nn.dropout(y, rate=0.3), name)


def _inputs() -> tuple[Any, ...]:
    """Padded (src, tgt_in, tgt_out, src_len, tgt_len) batches from a one-shot tf.data iterator."""
    import numpy as np

    v1 = tf1()
    rng = np.random.RandomState(5)
    n = BATCH * 6
    src_len = rng.randint(4, SRC_LEN + 1, n).astype("int32")
    tgt_len = rng.randint(3, TGT_LEN + 1, n).astype("int32")
    src = rng.randint(3, VOCAB, (n, SRC_LEN)) * (np.arange(SRC_LEN)[None] < src_len[:, None])
    tgt = rng.randint(3, VOCAB, (n, TGT_LEN)) * (np.arange(TGT_LEN)[None] < tgt_len[:, None])
    tgt_in = np.concatenate([np.ones((n, 1), int), tgt[:, :-1]], 1)  # 1 = <s>
    data = (src.astype("int32"), tgt_in.astype("int32"), tgt.astype("int32"), src_len, tgt_len)
    dataset = v1.data.Dataset.from_tensor_slices(data).shuffle(16, seed=3).repeat().batch(BATCH, drop_remainder=True)
    return v1.data.make_one_shot_iterator(dataset).get_next(name="train_IteratorGetNext")


def build(files_dir: Path) -> CorpusModel:
    """Build the Transformer training graph with the script's session parameter_map."""
    import tensorflow as tf

    v1 = tf1()
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(3)
        src, tgt_in, tgt_out, src_len, tgt_len = _inputs()
        src_mask = v1.sequence_mask(src_len, SRC_LEN)  # [B, Ls]
        tgt_mask = v1.sequence_mask(tgt_len, TGT_LEN)
        causal = v1.cast(v1.linalg.band_part(v1.ones([TGT_LEN, TGT_LEN]), -1, 0), v1.bool)
        self_mask = v1.logical_and(causal[None], tgt_mask[:, None, :])
        with v1.variable_scope("seq2seq"):
            table = v1.get_variable(
                "shared_embedding", [VOCAB, HIDDEN], initializer=v1.random_normal_initializer(stddev=HIDDEN**-0.5)
            )
            x = v1.gather(table, src) * math.sqrt(HIDDEN) + _positions(SRC_LEN)
            x = v1.nn.dropout(x, rate=0.3)
            with v1.variable_scope("encoder"):
                for i in range(LAYERS):
                    with v1.variable_scope("layer_%d" % i):
                        x = _residual(x, _attention(x, x, src_mask[:, None, :], "self_attention"), "ln1")
                        x = _residual(x, _ffn(x, "ffn"), "ln2")
            memory = x
            y = v1.gather(table, tgt_in) * math.sqrt(HIDDEN) + _positions(TGT_LEN)
            y = v1.nn.dropout(y, rate=0.3)
            with v1.variable_scope("decoder"):
                for i in range(LAYERS):
                    with v1.variable_scope("layer_%d" % i):
                        y = _residual(y, _attention(y, y, self_mask, "self_attention"), "ln1")
                        y = _residual(y, _attention(y, memory, src_mask[:, None, :], "encdec_attention"), "ln2")
                        y = _residual(y, _ffn(y, "ffn"), "ln3")
            logits = v1.matmul(v1.reshape(y, [-1, HIDDEN]), table, transpose_b=True)
        smoothing = 0.1
        labels = v1.one_hot(
            v1.reshape(tgt_out, [-1]), VOCAB, on_value=1.0 - smoothing, off_value=smoothing / (VOCAB - 1)
        )
        xent = v1.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        weights = v1.cast(v1.reshape(tgt_mask, [-1]), v1.float32)
        loss = v1.identity(v1.reduce_sum(xent * weights) / v1.reduce_sum(weights), name="loss")

        global_step = v1.train.get_or_create_global_step()
        step = v1.cast(global_step, v1.float32) + 1.0
        warmup = 16.0
        lr = 1.0 * HIDDEN**-0.5 * v1.minimum(1.0, step / warmup) * v1.rsqrt(v1.maximum(step, warmup))
        optimizer = v1.train.AdamOptimizer(lr, beta1=0.9, beta2=0.98, epsilon=1e-9)
        train_op = optimizer.minimize(loss, global_step=global_step)
        init = [v1.global_variables_initializer()]
        train_fetches = [train_op, loss, global_step]

    parameter_map = {
        "enable_data_pre_proc": False,
        "mix_compile_mode": False,
        "use_off_line": True,
        "min_group_size": True,  # the script writes parameter_map["min_group_size"].b = 1
        "enable_auto_mix_precision": False,
        "hcom_parallel": True,
    }
    return CorpusModel(
        name=NAME,
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=train_fetches,
        loss=loss.name,
        config={"kind": "session", "parameter_map": parameter_map},
        notes="Shrunk: hidden 512->32, heads 8->4, ffn 2048->64, vocab 32k BPE->64, lengths ~10, batch 3; all 6+6 "
        "layers kept. LazyAdam replaced by Adam (dense gradients here). Warm-up 16000->16 steps. noahnmt "
        "multiplies by a float mask and adds -INF; here the same masking is a tf.where on the logits. "
        "The session_config's allow_soft_placement=True is not an NPU option and is left out.",
    )
