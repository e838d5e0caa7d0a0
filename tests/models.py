"""Shared, cached builders of real TensorFlow training graphs for tests and benchmarks.

Every area (ops coverage, planner, runtime, benches) needs the same handful of realistic graphs:
a TF1 MLP and CNN, a tf.data-fed TF1 graph, and Keras 3 / tf.function training steps of ResNet-50,
a BERT-style encoder and an LSTM. Building them costs seconds (ResNet-50 tracing most of all), so
each builder is wrapped in ``functools.lru_cache``: callers share one instance per process and
must treat the returned graphs as read-only (copy the GraphDef before mutating anything).

Two shapes of result:
- TF1 builders return :class:`V1Model` (a ``tf.Graph`` plus placeholder/fetch names and a
  deterministic ``feed_dict_fn``); run ``init_ops`` once before ``fetches``.
- tf.function builders return the traced ``ConcreteFunction`` (forward, loss, gradients and the
  optimizer update in one graph; the ops live in ``fn.graph`` and its function library). Use
  :func:`train_step_inputs` for matching numpy inputs.

TensorFlow is imported inside the builders so that collecting tests stays cheap. Keras 3 is
imported as ``keras`` (not ``tf.keras``) so a ``TF_USE_LEGACY_KERAS`` setting elsewhere cannot
swap the implementation under us; TF1 layers are written with raw ops for the same reason.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, NamedTuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# A notebook cell defining ``fit()``: a Keras 3 Dense layer whose float16 MatMul overflows on its first
# call (4 x 60 x 300 = 72000 > 65504), trained for two calls of batch 16. Run it, then call ``fit()``
# inside a ``%%npu`` cell.
OVERFLOWING_KERAS_FIT_CELL = (
    "import numpy as np, keras\n"
    "def fit():\n"
    "    keras.utils.set_random_seed(0)\n"
    "    init = keras.initializers.Constant(300.0)\n"
    "    m = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(4, kernel_initializer=init)])\n"
    "    m.compile(optimizer='sgd', loss='mse')\n"
    "    x = np.full((32, 4), 60.0, 'float32')\n"
    "    return m.fit(x, x, epochs=1, batch_size=16, verbose=0).history['loss']\n"
)


class V1Model(NamedTuple):
    """A tf.compat.v1 training graph and the names needed to run it with a Session."""

    graph: Any  # tf.Graph
    feeds: tuple[str, ...]  # placeholder tensor names ("x:0", ...)
    fetches: tuple[str, ...]  # (loss tensor name, train op name)
    feed_dict_fn: Callable[[int], dict[str, Any]]  # batch size -> {placeholder name: ndarray}
    init_ops: tuple[str, ...] = ()  # op names to run once before training (variables, iterators)

    @property
    def loss(self) -> str:
        return self.fetches[0]

    @property
    def train_op(self) -> str:
        return self.fetches[1]


def _rng(seed: int = 0):
    import numpy as np

    return np.random.default_rng(seed)


def _one_hot(labels, classes: int):
    import numpy as np

    return np.eye(classes, dtype=np.float32)[labels]


# --------------------------------------------------------------------------------------------
# TF1 graphs
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _keras3():
    """Keras 3, or a skip: the TF2 training-step builders and their recorded digests are Keras 3's.

    On TF 2.6.5 (the Ascend adapter's TF 2, run by .ci/legacy_leg.sh) Keras 2.6 builds different
    graphs, so these models exist only on TF >= 2.16.
    """
    import keras
    import pytest

    if int(keras.__version__.split(".")[0]) < 3:
        pytest.skip(f"needs Keras 3 (TensorFlow >= 2.16); this is Keras {keras.__version__}")
    return keras


def mlp_v1(use_resource: bool = False) -> V1Model:
    """Two-layer MLP, softmax + hand-written cross-entropy, GradientDescent.

    Ref variables (VariableV2) by default because the adapter's ref-tensor rules only apply to
    them; ``use_resource=True`` gives the same model on VarHandleOp/ReadVariableOp.
    """
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 32], name="x")
        y = v1.placeholder(tf.float32, [None, 10], name="y")
        init = v1.glorot_uniform_initializer(seed=1)
        with v1.variable_scope("mlp", use_resource=use_resource):
            w1 = v1.get_variable("w1", [32, 64], initializer=init)
            b1 = v1.get_variable("b1", [64], initializer=v1.zeros_initializer())
            w2 = v1.get_variable("w2", [64, 10], initializer=init)
            b2 = v1.get_variable("b2", [10], initializer=v1.zeros_initializer())
            hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="hidden")
            logits = tf.nn.bias_add(tf.matmul(hidden, w2), b2, name="logits")
            probs = tf.nn.softmax(logits, name="probs")
        loss = tf.reduce_mean(-tf.reduce_sum(y * tf.math.log(probs + 1e-7), axis=1), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init_all = v1.global_variables_initializer()

    def feed_dict_fn(batch: int) -> dict[str, Any]:
        rng = _rng(batch)
        return {
            "x:0": rng.standard_normal((batch, 32), dtype=np.float32),
            "y:0": _one_hot(rng.integers(0, 10, batch), 10),
        }

    return V1Model(graph, ("x:0", "y:0"), (loss.name, train.name), feed_dict_fn, (init_all.name,))


@functools.lru_cache(maxsize=None)
def cnn_v1() -> V1Model:
    """Conv2D -> FusedBatchNormV3 -> Relu -> MaxPool -> MatMul -> softmax CE, Momentum optimizer.

    Resource variables (TF2 default for get_variable); NHWC 16x16x3 input, any batch size.
    """
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 16, 16, 3], name="images")
        y = v1.placeholder(tf.float32, [None, 10], name="labels")
        init = v1.glorot_uniform_initializer(seed=2)
        with v1.variable_scope("cnn", use_resource=True):
            kernel = v1.get_variable("conv/kernel", [3, 3, 3, 8], initializer=init)
            scale = v1.get_variable("bn/gamma", [8], initializer=v1.ones_initializer())
            offset = v1.get_variable("bn/beta", [8], initializer=v1.zeros_initializer())
            w = v1.get_variable("fc/w", [8 * 8 * 8, 10], initializer=init)
            b = v1.get_variable("fc/b", [10], initializer=v1.zeros_initializer())
            conv = tf.nn.conv2d(x, kernel, strides=1, padding="SAME", name="conv")
            bn, _, _ = v1.nn.fused_batch_norm(conv, scale, offset, is_training=True, name="bn")
            act = tf.nn.relu(bn, name="relu")
            pool = tf.nn.max_pool2d(act, ksize=2, strides=2, padding="VALID", name="pool")
            flat = tf.reshape(pool, [-1, 8 * 8 * 8], name="flatten")
            logits = tf.nn.bias_add(tf.matmul(flat, w), b, name="logits")
        xent = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits, name="xent")
        loss = tf.reduce_mean(xent, name="loss")
        train = v1.train.MomentumOptimizer(0.05, momentum=0.9).minimize(loss, name="train")
        init_all = v1.global_variables_initializer()

    def feed_dict_fn(batch: int) -> dict[str, Any]:
        rng = _rng(batch)
        return {
            "images:0": rng.standard_normal((batch, 16, 16, 3), dtype=np.float32),
            "labels:0": _one_hot(rng.integers(0, 10, batch), 10),
        }

    return V1Model(graph, ("images:0", "labels:0"), (loss.name, train.name), feed_dict_fn, (init_all.name,))


def _scale_by_two(values):
    """The py_func body of the input pipeline: host-only Python the device can never run."""
    return (values * 2.0).astype(values.dtype)


@functools.lru_cache(maxsize=None)
def dataset_pipeline_v1() -> V1Model:
    """tf.data input (slices -> map with py_func -> batch -> initializable iterator) into a model.

    No placeholders: ``feed_dict_fn`` returns ``{}``. ``init_ops`` holds the iterator initializer
    (MakeIterator) and the variables initializer; the training fetches use IteratorGetNext. The
    dataset repeats forever, so any number of steps can run.
    """
    import numpy as np
    import tensorflow as tf

    v1 = tf.compat.v1
    rng = _rng(3)
    features = rng.standard_normal((64, 8), dtype=np.float32)
    labels = rng.integers(0, 4, 64).astype(np.int32)
    graph = tf.Graph()
    with graph.as_default():

        def preprocess(feature, label):
            scaled = v1.py_func(_scale_by_two, [feature], tf.float32, name="scale_py")
            scaled.set_shape([8])
            return tf.nn.l2_normalize(scaled, axis=0), label

        dataset = (
            tf.data.Dataset.from_tensor_slices((features, labels))
            .map(preprocess)
            .batch(16, drop_remainder=True)
            .repeat()
        )
        iterator = v1.data.make_initializable_iterator(dataset)
        batch_x, batch_y = iterator.get_next(name="next_batch")
        init = v1.glorot_uniform_initializer(seed=4)
        with v1.variable_scope("head", use_resource=True):
            w = v1.get_variable("w", [8, 4], initializer=init)
            b = v1.get_variable("b", [4], initializer=v1.zeros_initializer())
            logits = tf.nn.bias_add(tf.matmul(batch_x, w), b, name="logits")
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch_y, logits=logits)
        loss = tf.reduce_mean(xent, name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        init_all = v1.global_variables_initializer()

    def feed_dict_fn(batch: int) -> dict[str, Any]:
        return {}

    return V1Model(graph, (), (loss.name, train.name), feed_dict_fn, (iterator.initializer.name, init_all.name))


# --------------------------------------------------------------------------------------------
# tf.function training steps (Keras 3)
# --------------------------------------------------------------------------------------------


def _trace_train_step(model, optimizer, loss_fn, input_specs):
    """Trace forward + loss + gradients + optimizer apply into one ConcreteFunction.

    The optimizer is built before tracing so its slot variables exist outside the function, as
    they would in a real training loop after the first step.
    """
    import tensorflow as tf

    optimizer.build(model.trainable_variables)

    @tf.function(input_signature=input_specs, reduce_retracing=True)
    def train_step(inputs, labels):
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)
            loss = loss_fn(labels, outputs)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    train_step.model = model  # keep the variables alive as long as the function is cached
    return train_step.get_concrete_function()


def _sparse_xent(labels, logits):
    import tensorflow as tf

    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


@functools.lru_cache(maxsize=None)
def resnet50_train_step():
    """Keras 3 ResNet-50 (random weights, 64x64 RGB, 10 classes, batch 2), SGD with momentum."""
    keras = _keras3()
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10, classifier_activation=None)
    optimizer = keras.optimizers.SGD(learning_rate=1e-3, momentum=0.9)
    specs = (tf.TensorSpec([2, 64, 64, 3], tf.float32), tf.TensorSpec([2], tf.int32))
    return _trace_train_step(model, optimizer, _sparse_xent, specs)


def _bert_encoder(vocab: int, seq: int, width: int, heads: int, layers: int, classes: int):
    """A small BERT-style classifier written with Keras layers plus explicit attention math.

    Attention is spelled with ``tf.matmul`` on 4-D tensors (BatchMatMulV2) rather than
    ``keras.layers.MultiHeadAttention`` (Einsum) because BatchMatMul is what BERT graphs on the
    device are made of; GELU is the erf form used by the original BERT.
    """
    keras = _keras3()
    import tensorflow as tf

    head_dim = width // heads

    class SelfAttention(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.qkv = keras.layers.Dense(3 * width, name="qkv")
            self.out = keras.layers.Dense(width, name="out")

        def call(self, x, mask):
            batch = tf.shape(x)[0]
            qkv = tf.reshape(self.qkv(x), [batch, seq, 3, heads, head_dim])
            qkv = tf.transpose(qkv, [2, 0, 3, 1, 4])
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = tf.matmul(q, k, transpose_b=True) * (head_dim**-0.5)
            scores += (1.0 - mask[:, None, None, :]) * -10000.0
            probs = tf.nn.softmax(scores, axis=-1)
            context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
            return self.out(tf.reshape(context, [batch, seq, width]))

    class Block(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.attention = SelfAttention(name="attention")
            self.norm1 = keras.layers.LayerNormalization(epsilon=1e-12, name="norm1")
            self.ffn_in = keras.layers.Dense(4 * width, name="ffn_in")
            self.ffn_out = keras.layers.Dense(width, name="ffn_out")
            self.norm2 = keras.layers.LayerNormalization(epsilon=1e-12, name="norm2")
            self.dropout = keras.layers.Dropout(0.1)

        def call(self, x, mask, training=False):
            x = self.norm1(x + self.dropout(self.attention(x, mask), training=training))
            hidden = tf.nn.gelu(self.ffn_in(x), approximate=False)
            return self.norm2(x + self.dropout(self.ffn_out(hidden), training=training))

    class Bert(keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.token_embedding = keras.layers.Embedding(vocab, width, name="token_embedding")
            self.position_embedding = keras.layers.Embedding(seq, width, name="position_embedding")
            self.embed_norm = keras.layers.LayerNormalization(epsilon=1e-12, name="embed_norm")
            self.blocks = [Block(name=f"layer_{i}") for i in range(layers)]
            self.pooler = keras.layers.Dense(width, activation="tanh", name="pooler")
            self.classifier = keras.layers.Dense(classes, name="classifier")

        def call(self, token_ids, training=False):
            mask = tf.cast(tf.not_equal(token_ids, 0), tf.float32)
            positions = tf.range(seq)[None, :]
            x = self.embed_norm(self.token_embedding(token_ids) + self.position_embedding(positions))
            for block in self.blocks:
                x = block(x, mask, training=training)
            return self.classifier(self.pooler(x[:, 0]))

    model = Bert(name="bert")
    model(tf.zeros([1, seq], tf.int32))  # create the variables eagerly, outside the trace
    return model


@functools.lru_cache(maxsize=None)
def bert_train_step():
    """BERT-style encoder (2 layers, width 64, 4 heads, seq 16, batch 2), Adam optimizer."""
    keras = _keras3()
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = _bert_encoder(vocab=128, seq=16, width=64, heads=4, layers=2, classes=2)
    optimizer = keras.optimizers.Adam(learning_rate=1e-4)
    specs = (tf.TensorSpec([2, 16], tf.int32), tf.TensorSpec([2], tf.int32))
    return _trace_train_step(model, optimizer, _sparse_xent, specs)


@functools.lru_cache(maxsize=None)
def lstm_train_step():
    """Keras 3 LSTM (10 steps x 8 features, 16 units, batch 2) -> Dense, RMSprop optimizer.

    On CPU Keras lowers the recurrence to a ``While`` op whose body is a library function, so
    this graph exercises function bodies and loop control flow.
    """
    keras = _keras3()
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((10, 8)), keras.layers.LSTM(16, name="lstm"), keras.layers.Dense(3, name="head")],
        name="lstm_model",
    )
    optimizer = keras.optimizers.RMSprop(learning_rate=1e-3)
    specs = (tf.TensorSpec([2, 10, 8], tf.float32), tf.TensorSpec([2], tf.int32))
    return _trace_train_step(model, optimizer, _sparse_xent, specs)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def train_step_inputs(concrete_fn, seed: int = 0) -> tuple[Any, ...]:
    """Deterministic numpy arguments for a traced train step: floats ~N(0,1), ints in {0, 1}.

    Integers stay below 2 so they are valid token ids and class labels for every model here.
    """

    rng = _rng(seed)
    args = []
    for spec in concrete_fn.structured_input_signature[0]:
        shape = tuple(spec.shape)
        if spec.dtype.is_floating:
            args.append(rng.standard_normal(shape).astype(spec.dtype.as_numpy_dtype))
        else:
            args.append(rng.integers(0, 2, shape).astype(spec.dtype.as_numpy_dtype))
    return tuple(args)


def graph_def_of(model: Any):
    """The GraphDef (with its function library) of a V1Model, tf.Graph or ConcreteFunction."""
    if isinstance(model, V1Model):
        model = model.graph
    graph = getattr(model, "graph", model)  # ConcreteFunction -> its FuncGraph
    return graph.as_graph_def()


def op_types(model: Any) -> frozenset[str]:
    """Every op type in the graph, including nodes inside library functions (loop/cond bodies)."""
    graph_def = graph_def_of(model)
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types.update(node.op for node in function.node_def)
    return frozenset(types)


def node_count(model: Any) -> int:
    """Nodes in the top-level graph plus in every library function body."""
    graph_def = graph_def_of(model)
    return len(graph_def.node) + sum(len(f.node_def) for f in graph_def.library.function)


ALL_MODELS: dict[str, Callable[[], Any]] = {
    "mlp_v1": mlp_v1,
    "cnn_v1": cnn_v1,
    "dataset_pipeline_v1": dataset_pipeline_v1,
    "resnet50_train_step": resnet50_train_step,
    "bert_train_step": bert_train_step,
    "lstm_train_step": lstm_train_step,
}
