"""Smoke run on the Ascend adapter's TF 1.15 (Python 3.7), by .ci/tf115_leg.sh: ConfigProto, plan(),
an emulator session with a training step, and a %%npu cell. Exits non-zero on any failure.

First every module of the package is imported: syntax or annotations newer than Python 3.7 that vermin
cannot see (a subscripted builtin as a base class, say) fail here, on the oldest Python we claim."""

import importlib
import pkgutil

import tensorflow as tf

import npu_jupyter
from npu_jupyter._options.config import NpuConfig

print("tf", tf.__version__)
modules = [m.name for m in pkgutil.walk_packages(npu_jupyter.__path__, "npu_jupyter.")]
for module in modules:
    importlib.import_module(module)
assert len(modules) > 90, modules  # the walk found the package, not an empty path
print("imports:", len(modules), "modules")
cfg = NpuConfig(precision_mode="allow_fp32_to_fp16")
proto = cfg.to_config_proto()
print("ConfigProto ok", len(proto.SerializeToString()))
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    w = tf.compat.v1.get_variable("w", [4, 2], initializer=tf.compat.v1.ones_initializer())
    y = tf.nn.relu(tf.matmul(x, w), name="y")
    loss = tf.reduce_sum(y)
    train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
    init = tf.compat.v1.global_variables_initializer()
from npu_jupyter._plan.graph.export import _export_bytes

assert _export_bytes(g) is not None, "the planner reaches TF 1.15's own GraphDef export (no second serialization)"
p = npu_jupyter.plan(g, cfg, fetches=[y])
assert p.ops["MatMul"].engine == "AI_CORE", p.ops["MatMul"].engine
print("plan MatMul:", p.ops["MatMul"].engine)
sess = npu_jupyter.session(cfg, g, backend="emulator")
with sess:
    sess.run(init)
    out = sess.run(y, {x: [[1.0, 2.0, 3.0, 4.0]]}).tolist()
    assert out == [[10.0, 10.0]], out
    print("run:", out)
    sess.run(train, {x: [[1.0, 2.0, 3.0, 4.0]]})
    print("report ops:", len(sess.last_report.plan.ops))
from IPython.core.interactiveshell import InteractiveShell

ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "npu_jupyter")
ip.user_ns.update(tf=tf, g=g, y=y, x=x, init=init)
r = ip.run_cell(
    "%%npu\nwith g.as_default():\n    with tf.compat.v1.Session() as s:\n        s.run(init)\n        out = s.run(y, {x: [[1.0, 1.0, 1.0, 1.0]]})\nprint('cell', out.tolist())\n"
)
assert r.success, (r.error_before_exec, r.error_in_exec)
assert ip.user_ns["out"].tolist() == [[4.0, 4.0]]
print("tf1 smoke: all passed")
