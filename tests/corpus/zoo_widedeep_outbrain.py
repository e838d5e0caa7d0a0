"""Wide & Deep on Outbrain (the zoo's WideDeep_ID2940 trainer/task.py) as its Estimator graph lowers it.

Carried over from the zoo script: ``DNNLinearCombinedClassifier`` with the feature columns of
``trainer/features.py``: ``categorical_column_with_hash_bucket(dtype=int32)`` for the id columns
(lowered as feature columns lower them: ``AsString`` then ``StringToHashBucketFast``), single- and
multi-hot (VarLen -> SparseTensor, mean-combined ``embedding_lookup_sparse``), identity columns as
indicator (one-hot) columns, numeric ``*_log_01scaled`` columns shared by both parts; the linear part
trained by FTRL (lr 0.2, l1 = l2 = 0) and the deep part (5 ReLU layers, dropout 0) by Adagrad
(lr 1.0, initial accumulator 0.1) whose learning rate comes from ``util/schedulers.py``'s ``tf.cond``
warm-up, built under ``tf.device('/cpu:0')`` as the script pins it; sigmoid cross-entropy; two
optimizers per step grouped with the global-step increment; the input from a TFRecord file parsed
with ``parse_example_dataset`` and iterated with the Estimator's initializable iterator; the session
``custom_op.parameter_map`` of ``task.py`` (NPU branch, default flags).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus.corpus import CorpusModel
from corpus.seq_blocks import dense, tf1, tf1_control_flow

NAME = "widedeep_outbrain"
ARCHITECTURE = "DeepFM/Wide&Deep"
SOURCE = (
    "TensorFlow/built-in/recommendation/WideDeep_ID2940_for_TensorFlow (trainer/task.py, "
    "trainer/features.py, util/dnn_linear_combined.py, util/dataloader.py, util/schedulers.py)"
)
IDIOMS = ("string_ops", "several_optimizers", "cond_in_training", "tfdata_initializable_iterator")

BATCH = 4
#: single-hot hash columns: name -> (bucket count, embedding dim); the script's sizes divided ~250x, dims /8.
HASH_SINGLE = {
    "doc_event_id": (997, 16),
    "ad_id": (991, 16),
    "doc_id": (499, 16),
    "event_country": (31, 8),
    "ad_advertiser": (97, 8),
}
#: multi-hot hash columns (VarLen in the records).
HASH_MULTI = {"doc_event_topic_id": (37, 8), "doc_ad_category_id": (17, 8)}
IDENTITY = {"event_hour": 6, "event_platform": 3, "event_weekend": 2}
NUMERIC = ("pop_document_id_conf", "user_views_log_01scaled", "doc_views_log_01scaled", "ad_views_log_01scaled")
HIDDEN = (32, 32, 32, 32, 32)  # the script's 5 x 1024


def write_tfrecords(path: Path, count: int = 32) -> None:
    """A small Outbrain-like TFRecord file: raw int ids (hashed in the graph), numerics and the click label."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(21)
    f = tf.train.Feature
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            feat = {"label": f(int64_list=tf.train.Int64List(value=[int(rng.rand() < 0.3)]))}
            for name in HASH_SINGLE:
                feat[name] = f(int64_list=tf.train.Int64List(value=[int(rng.randint(0, 10**6))]))
            for name in HASH_MULTI:
                n = int(rng.randint(1, 4))
                feat[name] = f(int64_list=tf.train.Int64List(value=[int(v) for v in rng.randint(0, 5000, n)]))
            for name, buckets in IDENTITY.items():
                feat[name] = f(int64_list=tf.train.Int64List(value=[int(rng.randint(0, buckets))]))
            for name in NUMERIC:
                feat[name] = f(float_list=tf.train.FloatList(value=[float(rng.rand())]))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feat)).SerializeToString())


def _input(path: Path) -> tuple[Any, Any]:
    """separate_input_fn: TFRecordDataset, shuffle, batch, parse_example_dataset, consolidate, prefetch."""
    v1 = tf1()
    spec = {"label": v1.FixedLenFeature([1], v1.int64)}
    spec.update({k: v1.FixedLenFeature([1], v1.int64) for k in list(HASH_SINGLE) + list(IDENTITY)})
    spec.update({k: v1.VarLenFeature(v1.int64) for k in HASH_MULTI})
    spec.update({k: v1.FixedLenFeature([1], v1.float32) for k in NUMERIC})
    dataset = v1.data.TFRecordDataset(str(path)).repeat().shuffle(16, seed=8).batch(BATCH, drop_remainder=True)
    dataset = dataset.apply(v1.data.experimental.parse_example_dataset(spec, num_parallel_calls=2))

    def consolidate(elem: Any) -> Any:
        label = elem.pop("label")
        return elem, v1.reshape(label, [-1, 1])

    dataset = dataset.map(consolidate, num_parallel_calls=2).prefetch(1)
    iterator = v1.data.make_initializable_iterator(dataset)
    return iterator, iterator.get_next()


def _hash(ids: Any, buckets: int) -> Any:
    """categorical_column_with_hash_bucket on integer ids: AsString then StringToHashBucketFast."""
    v1 = tf1()
    return v1.string_to_hash_bucket_fast(v1.as_string(ids), buckets)


def _columns(features: Any) -> tuple[list[Any], list[Any]]:
    """The wide logit terms and the deep input blocks, per feature column."""
    v1 = tf1()
    wide, deep = [], []
    with v1.variable_scope("linear"):
        for name, (buckets, _) in list(HASH_SINGLE.items()) + list(HASH_MULTI.items()):
            weights = v1.get_variable(name + "/weights", [buckets, 1], initializer=v1.zeros_initializer())
            ids = features[name]
            if isinstance(ids, v1.SparseTensor):
                hashed = v1.SparseTensor(ids.indices, _hash(ids.values, buckets), ids.dense_shape)
                wide.append(v1.nn.embedding_lookup_sparse(weights, hashed, None, combiner="sum"))
            else:
                wide.append(v1.reduce_sum(v1.gather(weights, _hash(ids, buckets)), axis=1))
        for name, buckets in IDENTITY.items():
            weights = v1.get_variable(name + "/weights", [buckets, 1], initializer=v1.zeros_initializer())
            wide.append(v1.reduce_sum(v1.gather(weights, features[name]), axis=1))
        for name in NUMERIC:
            weights = v1.get_variable(name + "/weights", [1, 1], initializer=v1.zeros_initializer())
            wide.append(v1.matmul(features[name], weights))
    with v1.variable_scope("dnn/input_from_feature_columns"):
        for name, (buckets, dim) in list(HASH_SINGLE.items()) + list(HASH_MULTI.items()):
            table = v1.get_variable(
                name + "_embedding/embedding_weights",
                [buckets, dim],
                initializer=v1.truncated_normal_initializer(stddev=dim**-0.5),
            )
            ids = features[name]
            if not isinstance(ids, v1.SparseTensor):
                ids = v1.sparse.from_dense(ids)
            hashed = v1.SparseTensor(ids.indices, _hash(ids.values, buckets), ids.dense_shape)
            deep.append(v1.nn.embedding_lookup_sparse(table, hashed, None, combiner="mean"))
        for name, buckets in IDENTITY.items():
            deep.append(v1.one_hot(v1.reshape(features[name], [-1]), buckets))
        deep.extend(features[name] for name in NUMERIC)
    return wide, deep


def build(files_dir: Path) -> CorpusModel:
    """Build the Wide & Deep training graph over a TFRecord file written into ``files_dir``."""
    import tensorflow as tf

    v1 = tf1()
    record = Path(files_dir) / "outbrain_train.tfrecord"
    write_tfrecords(record)
    graph = tf.Graph()
    with graph.as_default(), tf1_control_flow():
        v1.set_random_seed(4)
        global_step = v1.train.get_or_create_global_step()
        iterator, (features, label) = _input(record)
        wide, deep = _columns(features)
        with v1.variable_scope("linear"):
            bias = v1.get_variable("bias_weights", [1], initializer=v1.zeros_initializer())
            linear_logits = v1.add_n(wide) + bias
        with v1.variable_scope("dnn"):
            net = v1.concat(deep, axis=1)
            for i, units in enumerate(HIDDEN):
                net = dense(net, units, "hiddenlayer_%d" % i, v1.nn.relu, stddev=0.1)
            dnn_logits = dense(net, 1, "logits")
        logits = linear_logits + dnn_logits
        loss = v1.reduce_mean(
            v1.nn.sigmoid_cross_entropy_with_logits(labels=v1.cast(label, v1.float32), logits=logits), name="loss"
        )
        with v1.device("/cpu:0"):
            lr_init, warmup_steps = 1.0, 0
            warmup_lr = lr_init * v1.cast(global_step, v1.float32) / v1.cast(warmup_steps, v1.float32)
            deep_lr = v1.cond(global_step < warmup_steps, lambda: warmup_lr, lambda: v1.constant(lr_init))
        linear_vars = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope="linear")
        dnn_vars = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, scope="dnn")
        dnn_opt = v1.train.AdagradOptimizer(learning_rate=deep_lr, initial_accumulator_value=0.1)
        linear_opt = v1.train.FtrlOptimizer(
            learning_rate=0.2, l1_regularization_strength=0.0, l2_regularization_strength=0.0
        )
        train_ops = [dnn_opt.minimize(loss, var_list=dnn_vars), linear_opt.minimize(loss, var_list=linear_vars)]
        train_op = v1.group(*train_ops)
        with v1.control_dependencies([train_op]):
            train_op = v1.assign_add(global_step, 1).op
        init = [v1.global_variables_initializer(), v1.local_variables_initializer(), iterator.initializer]
        train_fetches = [train_op, loss]

    parameter_map = {"use_off_line": True, "precision_mode": "allow_mix_precision"}
    return CorpusModel(
        name=NAME,
        architecture=ARCHITECTURE,
        source=SOURCE,
        idioms=IDIOMS,
        graph=graph,
        init=init,
        train_fetches=train_fetches,
        loss=loss.name,
        config={
            "kind": "session",
            "parameter_map": parameter_map,
            "rewrite_options": {"remapping": "OFF", "memory_optimization": "OFF"},
        },
        notes="Shrunk: 12 of the script's categorical/numeric columns kept (5 single-hot hash, 2 multi-hot "
        "hash, 3 identity, 4 numeric), hash buckets ~/250, embedding dims /8, hidden 5x1024 -> 5x32, "
        "batch 131072 (prebatched 4096) -> 4 single examples; feature columns are written out as the "
        "ops they lower to (tf.feature_column needs Keras 2 on TF >= 2.16). iteration_per_loop "
        "defaults to 0 in task.py, so enable_data_pre_proc/iterations_per_loop are not set; "
        "remapping/memory_optimization OFF (grappler switches, not NPU options) are kept in "
        "config['rewrite_options'].",
    )
