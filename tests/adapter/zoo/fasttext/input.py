"""npu_jupyter stand-in for ModelZoo fasttext's input.py (which needs nltk and fnvhash to build the batches file).

The test writes the batches file itself (``write_batches``); model.py and inference.py use only
``words_to_ngramhashes``, for validation words, which the test does not set.
"""

import numpy as np
import tensorflow.compat.v1 as tf

NGRAMS_PER_WORD = 46  # model.py reshapes each word's n-gram hashes to this width


def words_to_ngramhashes(words, num_buckets):
    raise NotImplementedError("npu_jupyter's input.py stand-in has no n-gram hashing (validation words are not used)")


def write_batches(path, batches, batch_size, num_buckets, vocabulary_size, seed=0):
    """``batches`` records, each a batch of words (their n-gram hashes) and the context words to predict."""
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(batches):
            feature = {
                "inputs": tf.train.Feature(int64_list=tf.train.Int64List(
                    value=rng.randint(0, num_buckets, size=batch_size * NGRAMS_PER_WORD).tolist())),
                "labels": tf.train.Feature(int64_list=tf.train.Int64List(
                    value=rng.randint(0, vocabulary_size, size=batch_size).tolist())),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
