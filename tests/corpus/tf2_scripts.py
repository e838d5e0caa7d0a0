"""The TF2 corpus: real ModelZoo TF2 scripts in ``tests/corpus/tf2/``, and what a run of each must show.

Each script keeps its adapter imports and calls as written (``import npu_device``, its ``npu_config()``
setting ``global_options()``, ``npu_device.open().as_default()``, ``npu_device.train.optimizer`` ...);
only data and sizes are shrunk (each file's docstring says what). The flags below switch on some of the
script's own adapter options so a run shows that they reach the effective config.
"""

from __future__ import annotations

from pathlib import Path

from corpus.corpus import Tf2Script

SCRIPT_DIR = Path(__file__).resolve().parent / "tf2"
FIT = "Keras fit (train function)"

SCRIPTS = (
    Tf2Script(
        name="zoo2_sgan",
        source="TensorFlow2/built-in/cv/image_synthesis/tf_v2_01_SGAN_ID3999_for_TensorFlow2.X/train.py",
        idioms=("gan_nested_functions", "several_optimizers"),
        argv=("--over_dump", "True", "--over_dump_path", "{tmp}"),
        options={
            "precision_mode": "allow_mix_precision",
            "enable_dump_debug": True,
            "dump_path": "{tmp}",
            "dump_debug_mode": "all",
        },
        training="train_step",
        entry="train_step",
        steps=4,  # 32 images, batch 8, one epoch
    ),
    Tf2Script(
        name="zoo2_siamese_contrastive",
        source="TensorFlow2/built-in/keras_sample/cv/siamese_contrastive_ID2538_for_TensorFlow2.X/siamese_contrastive.py",
        idioms=("keras_fit_metrics_validation",),
        argv=("--precision_mode", "must_keep_origin_dtype"),
        options={"precision_mode": "must_keep_origin_dtype"},
        training=FIT,
        entry="train_function",
        steps=12,  # 96 pairs, batch 8
    ),
    Tf2Script(
        name="zoo2_knowledge_distillation",
        source="TensorFlow2/built-in/keras_sample/cv/knowledge_disti_ID2517_for_TensorFlow2.X/knowledge_distillation.py",
        idioms=("train_step_override", "keras_fit_metrics_validation"),
        argv=("--data_dump_flag", "True", "--data_dump_path", "{tmp}", "--data_dump_step", "0"),
        options={
            "precision_mode": "allow_mix_precision",
            "enable_dump": True,
            "dump_path": "{tmp}",
            "dump_step": "0",
            "dump_mode": "all",
        },
        training=FIT,
        entry="train_function",
        steps=3,  # each of the three fits: 96 images, batch 32
    ),
    Tf2Script(
        name="zoo2_pointnet",
        source="TensorFlow2/built-in/cv/image_classification/pointnet_ID2531_for_TensorFlow2.X/pointnet.py",
        idioms=("loss_scale_optimizer", "dropout_conversion", "keras_fit_metrics_validation"),
        argv=(),  # its largest graph (two T-nets, ~2900 ops): no dump, so the run stays short
        options={"precision_mode": "allow_mix_precision"},
        training=FIT,
        entry="train_function",
        steps=3,  # 24 clouds, batch 8
    ),
)
