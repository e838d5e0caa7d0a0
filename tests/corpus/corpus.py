"""The real-model corpus: what one corpus model is, and the idioms the corpus must cover together.

Each ``tests/corpus/zoo_<name>.py`` module reproduces one public Ascend model-zoo TF1 training script:
its architecture, shapes and idioms (carried over, not copied), its real NPU configuration and the
option files it ships, shrunk so three training steps run in seconds on random data. The module
exposes ``build(files_dir) -> CorpusModel``; ``files_dir`` is an empty directory where the builder
writes the option files the script ships (fusion switch, mixlist, customize_dtypes ...) and which
the config refers to. The test runner (``test_corpus.py``) discovers every ``zoo_*.py`` module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

#: The TF1 idioms real Ascend scripts use; every entry must be covered by at least one model.
IDIOMS = frozenset(
    {
        "tfdata_initializable_iterator",  # make_initializable_iterator + MakeIterator in the training graph
        "tfdata_one_shot_iterator",
        "queue_runner",  # tf.train.*batch / QueueRunner threads
        "cond_in_training",  # tf.cond in the training step (LR warm-up, train/eval switch)
        "where_in_training",
        "while_loop",  # dynamic_rnn, CTC, tf.while_loop
        "batch_norm_update_ops",  # UPDATE_OPS collection + control_dependencies
        "ema",  # tf.train.ExponentialMovingAverage
        "loss_scaling_isfinite",  # loss scale with IsFinite / all-finite check on gradients
        "gradient_clipping",
        "several_optimizers",  # GAN-style: two or more train ops per step
        "summaries",
        "nested_fetches",  # sess.run([a, [b, c], {"d": d}])
        "mixed_computing_scope",  # without_npu_compile_scope in a mix_compile_mode graph
        "dynamic_input_shapes",  # dynamic_input / dynamic_graph_execute_mode
        "string_ops",
        "large_graph",  # ~40k ops (Inception-ResNet class)
    }
)

#: Architectures the corpus must include (one model may count for one entry).
ARCHITECTURES = frozenset(
    {
        "ResNet",
        "Inception-ResNet",
        "MobileNet/VGG",
        "BERT/Transformer",
        "LSTM/GRU",
        "CRNN+CTC",
        "DeepFM/Wide&Deep",
        "DCGAN",
        "Detector",
        "Segmentation",
    }
)


@dataclass
class CorpusModel:
    """One real training script, rebuilt as a tf.compat.v1 graph plus everything needed to run it.

    ``config`` is the script's own NPU configuration, exactly as the script sets it:
    ``{"kind": "session", "parameter_map": {key: value}}`` for scripts that fill
    ``custom_op.parameter_map`` (values typed as the script types them: bool for ``.b``, int for
    ``.i``, str for ``.s``), or ``{"kind": "estimator", "kwargs": {...}}`` for scripts that build an
    ``NPURunConfig``. Paths to shipped option files point into ``files_dir``.
    """

    name: str  # short id, e.g. "resnet50_dynamic"
    architecture: str  # one of ARCHITECTURES
    source: str  # model-zoo path the script was read from (for the reader, not used by code)
    idioms: tuple[str, ...]  # entries of IDIOMS this model exercises
    graph: Any  # tf.Graph holding the whole training graph
    init: list[Any]  # what the script runs once before training (variables, tables, iterator init)
    train_fetches: Any  # the script's per-step sess.run fetches, nested exactly as the script nests them
    loss: str  # tensor name of the training loss (a scalar)
    config: dict[str, Any]  # see above
    feed_fn: Callable[[int], dict[str, Any]] | None = None  # step -> feed_dict (placeholders), or None
    queue_runners: bool = False  # start tf.compat.v1.train queue runners before training
    notes: str = ""  # what was shrunk or changed from the script, and why
    extra: dict[str, Any] = field(default_factory=dict)  # anything a model-specific test needs


#: The TF2 idioms real Ascend TF2 scripts use; every entry must be covered by at least one TF2 script.
TF2_IDIOMS = frozenset(
    {
        "gan_nested_functions",  # a @tf.function train step calling models whose call is a @tf.function
        "keras_fit_metrics_validation",  # Model.fit with metrics and validation data
        "train_step_override",  # a keras.Model subclass overriding train_step / test_step
        "loss_scale_optimizer",  # npu_device.train.optimizer.NpuLossScaleOptimizer (or Keras' own)
        "dropout_conversion",  # the shipped npu_convert_dropout / npu_ops on gen_npu_ops dropout ops
        "several_optimizers",  # two optimizers per step (GAN)
    }
)


@dataclass
class Tf2Script:
    """One real TF2 ModelZoo training script, kept as a script (``tests/corpus/tf2/<name>.py``).

    Unlike the TF1 models (graphs rebuilt from a script), a TF2 script runs as written: its ``import
    npu_device``, ``global_options()`` settings and ``npu_device.open().as_default()`` are the script's
    own, only data and sizes shrink. ``argv`` are the flags a run passes (``{tmp}`` is the run's scratch
    folder); ``options`` the effective options those flags make the script set through
    ``global_options()`` (catalogue keys; ``{tmp}`` as in ``argv``); ``training`` the report title of its
    training function (the Keras entry point or the ``tf.function``'s Python name) and ``entry`` the
    traced function that title belongs to; ``steps`` the calls of it the script makes.
    """

    name: str
    source: str  # ModelZoo path the script was written from
    idioms: tuple[str, ...]  # entries of TF2_IDIOMS
    argv: tuple[str, ...]
    options: dict[str, Any]
    training: str
    entry: str
    steps: int
    notes: str = ""
