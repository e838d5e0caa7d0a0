"""npu_jupyter stand-in for ModelZoo shufflenetv2_ID0185's input_pipeline.py, which needs tf.contrib.data (TF 1.15).

The same ``Pipeline(filenames, is_training, batch_size, num_epochs).dataset`` of ``({'images': ...},
{'labels': ...})`` batches, read from the given tfrecords files; the records hold a raw uint8 image of
IMAGE_SIZE x IMAGE_SIZE x 3 (the original: JPEG with boxes, augmented to 224 x 224) and an int64 label.
"""

import tensorflow.compat.v1 as tf

IMAGE_SIZE = 32  # the original: 224


class Pipeline:
    def __init__(self, filenames, is_training, batch_size, num_epochs):
        self.is_training = is_training
        dataset = tf.data.TFRecordDataset(filenames)
        if is_training:
            dataset = dataset.shuffle(buffer_size=64, seed=0)
        dataset = dataset.repeat(num_epochs)
        dataset = dataset.map(self.parse_and_preprocess).batch(batch_size, drop_remainder=True)
        self.dataset = dataset.prefetch(buffer_size=1)

    def parse_and_preprocess(self, example_proto):
        features = {
            'image': tf.FixedLenFeature([], tf.string),
            'label': tf.FixedLenFeature([], tf.int64),
        }
        parsed = tf.parse_single_example(example_proto, features)
        image = tf.reshape(tf.decode_raw(parsed['image'], tf.uint8), [IMAGE_SIZE, IMAGE_SIZE, 3])
        image = (1.0 / 255.0) * tf.to_float(image)
        if self.is_training:
            image = tf.image.random_flip_left_right(image, seed=0)
        return {'images': image}, {'labels': tf.to_int32(parsed['label'])}


def write_records(path, count, seed=0):
    """npu_jupyter: the test's data, ``count`` random images with labels 0..9, in the format above."""
    import numpy as np

    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            image = rng.randint(0, 256, size=(IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.uint8)
            feature = {
                'image': tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
                'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.randint(0, 10))])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
