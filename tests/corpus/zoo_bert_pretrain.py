"""BERT-base pre-training (MLM + NSP) as the NVIDIA-derived Ascend script builds it under NPURunConfig.

Carried over from the zoo script: 12 Transformer encoder layers (post-LN, GELU tanh approximation
since ``use_fast_gelu`` defaults on), word/position/token-type embeddings, pooler, the masked-LM head
gathering ``masked_lm_positions`` with its transform + LayerNorm and an output bias over the tied
embedding table, the next-sentence head; ``manual_fp16=True`` (the 1p test script's flag): float32
master weights, the encoder computing in float16; the optimizer step of ``optimization.py``:
polynomial decay with linear warm-up, AdamWeightDecayOptimizer (decay 0.01 except LayerNorm/bias,
epsilon 1e-6), NPULossScaleOptimizer with ExponentialUpdateLossScaleManager
(init 2**32, incr 1000, decr every 1 overflow by 0.5; ``npu_bert_loss_scale=0``), per-gradient
``clip_by_norm(1.0)`` (``npu_bert_clip_by_global_norm=False``); and the NPURunConfig keyword arguments
``run_pretraining.py`` passes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import dense, dynamic_loss_scale_step, layer_norm, tf1, tf1_control_flow

NAME = "bert_pretrain"
ARCHITECTURE = "BERT/Transformer"
SOURCE = (
    "TensorFlow/built-in/nlp/BertNV_Series_for_TensorFlow (src/run_pretraining.py, src/optimization.py, "
    "src/modeling.py, test/train_ID0060_BertBase_performance_1p.sh)"
)
IDIOMS = (
    "loss_scaling_isfinite",
    "gradient_clipping",
    "cond_in_training",
    "tfdata_initializable_iterator",
    "nested_fetches",
    "where_in_training",
)

BATCH, SEQ, VOCAB, HIDDEN, LAYERS, HEADS, INTER, MAX_PRED = 2, 16, 128, 32, 12, 4, 128, 4


def _gelu(x: Any) -> Any:
    """GELU, tanh approximation (the script's fast_gelu)."""
    v1 = tf1()
    return 0.5 * x * (1.0 + v1.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * v1.pow(x, 3))))


def _fp16_dense(x: Any, units: int, name: str, activation: Any = None) -> Any:
    """A dense layer with a float32 master kernel cast to float16, as fp16_utils' variable getter does."""
    v1 = tf1()
    with v1.variable_scope(name):
        kernel = v1.get_variable(
            "kernel", [int(x.shape[-1]), units], initializer=v1.truncated_normal_initializer(stddev=0.02)
        )
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        out = v1.nn.bias_add(v1.matmul(x, v1.cast(kernel, v1.float16)), v1.cast(bias, v1.float16))
        return activation(out) if activation is not None else out


def _attention(x: Any, mask_bias: Any, name: str) -> Any:
    """Multi-head self-attention over [BATCH*SEQ, HIDDEN] float16 rows, with the additive mask bias."""
    v1 = tf1()
    head = HIDDEN // HEADS
    with v1.variable_scope(name):

        def split(t: Any) -> Any:
            return v1.transpose(v1.reshape(t, [BATCH, SEQ, HEADS, head]), [0, 2, 1, 3])

        q = split(_fp16_dense(x, HIDDEN, "query"))
        k = split(_fp16_dense(x, HIDDEN, "key"))
        v = split(_fp16_dense(x, HIDDEN, "value"))
        scores = v1.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(head)) + mask_bias
        probs = v1.nn.dropout(v1.nn.softmax(scores), rate=0.1)
        ctx = v1.reshape(v1.transpose(v1.matmul(probs, v), [0, 2, 1, 3]), [BATCH * SEQ, HIDDEN])
        return _fp16_dense(ctx, HIDDEN, "output")


def _encoder(emb: Any, input_mask: Any) -> Any:
    """The 12-layer post-LN encoder computing in float16 (manual_fp16), LayerNorm in float32."""
    v1 = tf1()
    mask = v1.cast(v1.reshape(input_mask, [BATCH, 1, 1, SEQ]), v1.float16)
    mask_bias = (1.0 - mask) * -10000.0
    x = v1.reshape(emb, [BATCH * SEQ, HIDDEN])
    for i in range(LAYERS):
        with v1.variable_scope("layer_%d" % i):
            h = v1.cast(x, v1.float16)
            att = v1.nn.dropout(_attention(h, mask_bias, "attention"), rate=0.1)
            x = layer_norm(v1.cast(att, v1.float32) + x, "attention_LayerNorm")
            inner = _fp16_dense(v1.cast(x, v1.float16), INTER, "intermediate", _gelu)
            out = v1.nn.dropout(_fp16_dense(inner, HIDDEN, "output"), rate=0.1)
            x = layer_norm(v1.cast(out, v1.float32) + x, "output_LayerNorm")
    return x


class AdamWeightDecay:
    """optimization.py's AdamWeightDecayOptimizer, unfused path: Adam moments, decoupled weight decay.

    No bias correction; decay skipped for LayerNorm and bias variables; ``apply_gradients`` assigns each
    parameter and its moments and then ``global_step + 1`` (the optimizer owns the step increment).
    The moment variables are created up front so the loss-scale ``tf.cond`` branch only assigns.
    """

    EXCLUDE = ("LayerNorm", "layer_norm", "bias")

    def __init__(
        self,
        learning_rate: Any,
        var_list: Any,
        weight_decay_rate: float = 0.0,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
    ) -> None:
        v1 = tf1()
        self.learning_rate = v1.identity(learning_rate, name="learning_rate_adam")
        self.weight_decay_rate, self.beta_1, self.beta_2, self.epsilon = weight_decay_rate, beta_1, beta_2, epsilon
        self.slots = {}
        for var in var_list:
            base = var.op.name
            self.slots[var.op.name] = tuple(
                v1.get_variable(
                    base + suffix, var.shape.as_list(), v1.float32, trainable=False, initializer=v1.zeros_initializer()
                )
                for suffix in ("/adam_m", "/adam_v")
            )

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None) -> Any:
        """The per-parameter Adam-with-decay assignments, then the global step increment."""
        v1 = tf1()
        assignments = []
        for grad, param in grads_and_vars:
            with v1.name_scope("apply_one_adam"):
                m, v = self.slots[param.op.name]
                next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
                next_v = self.beta_2 * v + (1.0 - self.beta_2) * v1.square(grad)
                update = next_m / (v1.sqrt(next_v) + self.epsilon)
                if not any(word in param.op.name for word in self.EXCLUDE):
                    update += self.weight_decay_rate * param
                assignments += [
                    v1.assign(param, param - self.learning_rate * update),
                    v1.assign(m, next_m),
                    v1.assign(v, next_v),
                ]
        if global_step is not None:
            assignments.append(v1.assign(global_step, v1.identity(global_step + 1, name="step_update")))
        return v1.group(*assignments)


def _inputs(graph: Any) -> tuple[Any, dict[str, Any]]:
    """The pre-training features from an initializable tf.data iterator (NPUEstimator's input path)."""
    import numpy as np

    v1 = tf1()
    rng = np.random.RandomState(11)
    n = BATCH * 8
    data = {
        "input_ids": rng.randint(1, VOCAB, (n, SEQ)).astype("int32"),
        "input_mask": (np.arange(SEQ)[None, :] < rng.randint(SEQ // 2, SEQ + 1, (n, 1))).astype("int32"),
        "segment_ids": (np.arange(SEQ)[None, :] >= SEQ // 2).astype("int32").repeat(n, 0),
        "masked_lm_positions": np.sort(rng.randint(1, SEQ // 2, (n, MAX_PRED)), 1).astype("int32"),
        "masked_lm_ids": rng.randint(1, VOCAB, (n, MAX_PRED)).astype("int32"),
        "masked_lm_weights": (rng.rand(n, MAX_PRED) > 0.2).astype("float32"),
        "next_sentence_labels": rng.randint(0, 2, (n, 1)).astype("int32"),
    }
    dataset = v1.data.Dataset.from_tensor_slices(data).repeat().batch(BATCH, drop_remainder=True)
    iterator = v1.data.make_initializable_iterator(dataset)
    return iterator, iterator.get_next()


def build(files_dir: Path) -> CorpusModel:
    """Build the BERT pre-training graph with the script's NPURunConfig arguments."""
    import tensorflow as tf

    v1 = tf1()
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(7)
        iterator, f = _inputs(graph)
        with v1.variable_scope("bert"):
            with v1.variable_scope("embeddings"):
                table = v1.get_variable(
                    "word_embeddings", [VOCAB, HIDDEN], initializer=v1.truncated_normal_initializer(stddev=0.02)
                )
                emb = v1.gather(table, f["input_ids"])
                token_type = v1.get_variable("token_type_embeddings", [2, HIDDEN])
                emb += v1.reshape(
                    v1.matmul(v1.one_hot(v1.reshape(f["segment_ids"], [-1]), 2), token_type), [BATCH, SEQ, HIDDEN]
                )
                position = v1.get_variable("position_embeddings", [64, HIDDEN])
                emb += v1.slice(position, [0, 0], [SEQ, -1])[None]
                emb = v1.nn.dropout(layer_norm(emb, "LayerNorm"), rate=0.1)
            with v1.variable_scope("encoder"):
                seq_out = _encoder(emb, f["input_mask"])
            with v1.variable_scope("pooler"):
                first = v1.reshape(seq_out, [BATCH, SEQ, HIDDEN])[:, 0, :]
                pooled = dense(first, HIDDEN, "dense", v1.tanh)
        with v1.variable_scope("cls/predictions"):
            flat_pos = v1.reshape(f["masked_lm_positions"] + v1.range(BATCH)[:, None] * SEQ, [-1])
            picked = v1.gather(seq_out, flat_pos)
            picked = layer_norm(dense(picked, HIDDEN, "transform", _gelu), "transform_LayerNorm")
            out_bias = v1.get_variable("output_bias", [VOCAB], initializer=v1.zeros_initializer())
            log_probs = v1.nn.log_softmax(v1.nn.bias_add(v1.matmul(picked, table, transpose_b=True), out_bias))
            ids = v1.reshape(f["masked_lm_ids"], [-1])
            weights = v1.reshape(f["masked_lm_weights"], [-1])
            per_example = -v1.reduce_sum(log_probs * v1.one_hot(ids, VOCAB), axis=-1)
            mlm_loss = v1.reduce_sum(weights * per_example) / (v1.reduce_sum(weights) + 1e-5)
        with v1.variable_scope("cls/seq_relationship"):
            nsp_logits = dense(pooled, 2, "output")
            nsp_log_probs = v1.nn.log_softmax(nsp_logits)
            labels = v1.one_hot(v1.reshape(f["next_sentence_labels"], [-1]), 2)
            nsp_loss = v1.reduce_mean(-v1.reduce_sum(labels * nsp_log_probs, axis=-1))
        mlm_loss = v1.identity(mlm_loss, name="mlm_loss")
        nsp_loss = v1.identity(nsp_loss, name="nsp_loss")
        total_loss = v1.identity(mlm_loss + nsp_loss, name="total_loss")

        global_step = v1.train.get_or_create_global_step()
        init_lr, train_steps, warmup = 1e-4, 100, 2
        lr = v1.train.polynomial_decay(init_lr, global_step, train_steps, end_learning_rate=0.0, power=1.0)
        step_f = v1.cast(global_step, v1.float32)
        is_warmup = v1.cast(v1.cast(global_step, v1.int32) < warmup, v1.float32)
        lr = (1.0 - is_warmup) * lr + is_warmup * (init_lr * step_f / warmup)
        lr = v1.identity(lr, name="learning_rate")
        optimizer = AdamWeightDecay(lr, v1.trainable_variables(), weight_decay_rate=0.01, epsilon=1e-6)
        train_op, scale = dynamic_loss_scale_step(
            optimizer,
            total_loss,
            v1.trainable_variables(),
            init_loss_scale=2.0**32,
            incr_every_n_steps=1000,
            decr_every_n_nan_or_inf=1,
            decr_ratio=0.5,
            clip_norm=1.0,
            clip_global=False,
            global_step=global_step,
        )
        scale = v1.identity(scale, name="loss_scale")
        init = [v1.global_variables_initializer(), iterator.initializer]
        # MonitoredSession merges the caller's fetches with each hook's SessionRunArgs into one run:
        # the Estimator asks for [train_op, loss], the script's _LogSessionRunHook for tensor names.
        hook_fetches = [global_step, "total_loss:0", "learning_rate:0", "nsp_loss:0", "mlm_loss:0", scale.name]
        train_fetches = {"caller": [train_op, total_loss], "_LogSessionRunHook": hook_fetches}

    kwargs = {
        "dump_config": {"enable_dump_debug": False, "dump_path": None, "dump_debug_mode": "all"},
        "model_dir": str(files_dir / "model_dir"),
        "save_summary_steps": 0,
        "save_checkpoints_steps": 1000,
        "log_step_count_steps": 1,
        "enable_data_pre_proc": True,
        "iterations_per_loop": 100,
        "is_tailing_optimization": False,
        "graph_memory_max_size": 26 * 1024 * 1024 * 1024,
        "variable_memory_max_size": 5 * 1024 * 1024 * 1024,
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
        loss=total_loss.name,
        config={"kind": "estimator", "kwargs": kwargs},
        notes="Shrunk: hidden 768->32, heads 12->4, intermediate 3072->128, vocab 30522->128, seq 128->16, "
        "max_predictions 20->4, batch 2, all 12 layers kept. AdamWeightDecayOptimizer takes its unfused "
        "path (npu_bert_use_fused_adam_momentum's fused NPU ops do not exist off the device). The Estimator's per-step sess.run is the "
        "caller's [train_op, loss] plus the logging hook's tensor names, rebuilt as the one nested "
        "dict MonitoredSession runs; 'global_step:0' is fetched as the variable itself because on TF 2 "
        "graphs it is a resource handle, not the TF 1.15 ref tensor. num_warmup_steps 0 in the 1p script; 2 here so the warm-up branch is in the graph. "
        "session_config (a plain ConfigProto) and TDT infeed are left out: they carry no NPU option. "
        "The loss-scale all-finite check's skip/shrink uses tf.where inside the tf.cond branches. With the "
        "script's initial scale 2**32 the float16 gradients overflow for the first ~11 steps (measured "
        "on this CPU, plain session): those steps are skipped and the scale halves each time, as on the "
        "device, so three steps exercise the skip branch and global_step stays 0.",
    )
