"""Random MNIST-shaped data in place of ``tensorflow.examples.tutorials.mnist.input_data`` (not in TF 2.x).

``read_data_sets(path, one_hot=True)`` returns what the zoo scripts read: ``.train`` / ``.test`` with
``images`` (float32, [n, 784] in [0, 1]), one-hot ``labels`` and ``num_examples``. Sizes are small so a
test trains in seconds: ZOO_MNIST_TRAIN / ZOO_MNIST_TEST examples (default 64 / 64).
"""

import os
from types import SimpleNamespace

import numpy as np


def _split(rng, n):
    labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, size=n)]
    return SimpleNamespace(images=rng.rand(n, 784).astype(np.float32), labels=labels, num_examples=n)


def read_data_sets(path, one_hot=True):
    rng = np.random.RandomState(0)
    train = _split(rng, int(os.environ.get("ZOO_MNIST_TRAIN", "64")))
    test = _split(rng, int(os.environ.get("ZOO_MNIST_TEST", "64")))
    return SimpleNamespace(train=train, test=test)
