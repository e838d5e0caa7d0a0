"""The corpus models as zoo entries: ``fn(npu, steps) -> loss`` (the contract in npu_jupyter/_zoo_check/entry.py).

Each function builds one ``zoo_<name>.py`` model, opens ``npu.session`` on its graph with the script's
own NPU config (the zoo lays the task's precision mode or option set over it), runs the script's
training steps as ``runner.train`` does, and returns the last loss. Run them with::

    python -m npu_jupyter zoo tests/corpus/entries.py:mobilenet_v1 tests/corpus/entries.py:dcgan \
        --modes force_fp32,allow_mix_precision,force_fp16
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

TESTS = str(Path(__file__).resolve().parents[1])
if TESTS not in sys.path:  # the corpus package lives in tests/
    sys.path.insert(0, TESTS)


def run(module_name: str, npu: Any, steps: int) -> float:
    """Build ``corpus.<module_name>``, train it ``steps`` steps in the zoo's session, return the last loss."""
    from corpus import runner

    with tempfile.TemporaryDirectory(prefix=f"{module_name}-") as files:
        model = runner.build(module_name, Path(files))
        config = runner.npu_config(model)
        with npu.session(model.graph, config) as session:
            training = runner.train(model, session, steps)
    return training.losses[-1]


def bert_pretrain(npu: Any, steps: int) -> float:
    return run("zoo_bert_pretrain", npu, steps)


def crnn_ctc(npu: Any, steps: int) -> float:
    return run("zoo_crnn_ctc", npu, steps)


def dcgan(npu: Any, steps: int) -> float:
    return run("zoo_dcgan", npu, steps)


def gru4rec(npu: Any, steps: int) -> float:
    return run("zoo_gru4rec", npu, steps)


def inception_resnet_v2(npu: Any, steps: int) -> float:
    return run("zoo_inception_resnet_v2", npu, steps)


def lstm_sentiment(npu: Any, steps: int) -> float:
    return run("zoo_lstm_sentiment", npu, steps)


def mobilenet_v1(npu: Any, steps: int) -> float:
    return run("zoo_mobilenet_v1", npu, steps)


def resnet50_dynamic(npu: Any, steps: int) -> float:
    return run("zoo_resnet50_dynamic", npu, steps)


def transformer_nmt(npu: Any, steps: int) -> float:
    return run("zoo_transformer_nmt", npu, steps)


def unet2d(npu: Any, steps: int) -> float:
    return run("zoo_unet2d", npu, steps)


def widedeep_outbrain(npu: Any, steps: int) -> float:
    return run("zoo_widedeep_outbrain", npu, steps)


def yolov3(npu: Any, steps: int) -> float:
    return run("zoo_yolov3", npu, steps)


#: Every corpus model's entry, by the module it builds (tests check this covers every zoo_*.py).
ENTRIES = {
    "zoo_bert_pretrain": bert_pretrain,
    "zoo_crnn_ctc": crnn_ctc,
    "zoo_dcgan": dcgan,
    "zoo_gru4rec": gru4rec,
    "zoo_inception_resnet_v2": inception_resnet_v2,
    "zoo_lstm_sentiment": lstm_sentiment,
    "zoo_mobilenet_v1": mobilenet_v1,
    "zoo_resnet50_dynamic": resnet50_dynamic,
    "zoo_transformer_nmt": transformer_nmt,
    "zoo_unet2d": unet2d,
    "zoo_widedeep_outbrain": widedeep_outbrain,
    "zoo_yolov3": yolov3,
}
