"""The TF1 names real scripts stopped on: util, npu_convert_dropout, hccl, monitored sessions, stand-ins."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from npu_jupyter import adapter
from npu_jupyter.adapter.surface import NotEmulatedError, reasons, spec_table
from npu_jupyter.adapter.tf1 import dropout_swap

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1


# ---- names not emulated: exported, failing on use with the reason ---------------------------------


def test_after_a_star_import_a_name_not_emulated_fails_on_use_naming_itself_and_what_to_do(emulated):
    namespace: dict = {}
    exec("from npu_bridge.npu_init import *", namespace)
    optimizer = namespace["NPUOptimizer"]  # exported, as by the real module: no NameError
    with pytest.raises(
        NotEmulatedError, match=r"npu_bridge\.npu_init\.NPUOptimizer is part of .*NPULossScaleOptimizer"
    ):
        optimizer(None)
    with pytest.raises(NotEmulatedError, match=r"npu_init\.hccl_ops .*one device, rank 0 of 1"):
        namespace["hccl_ops"].allreduce  # read
    with pytest.raises(NotEmulatedError, match="KerasDistributeOptimizer"):

        class Mine(namespace["KerasDistributeOptimizer"]):  # subclassed
            pass

    assert "not emulated" in repr(optimizer) and not hasattr(optimizer, "_repr_html_")


def test_every_name_not_emulated_says_why_and_none_claims_no_cpu_equivalent(emulated):
    import importlib

    for module_name, entry in spec_table().items():
        if module_name.split(".")[0] not in ("npu_bridge", "hccl"):
            continue
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        for name, reason in reasons(entry).items():
            assert reason and "no one-device CPU equivalent" not in reason
            with pytest.raises(NotEmulatedError, match=rf"{module_name}\.{name} is part of the Ascend adapter"):
                getattr(module, name)()


def test_an_unknown_name_stays_an_attribute_error(emulated):
    from npu_bridge.estimator.npu import util

    with pytest.raises(AttributeError, match="has no attribute 'npu_magic'.*set_iteration_per_loop"):
        util.npu_magic


# ---- hccl.manage.api / hccl.split.api: one rank ------------------------------------------------


def test_hccl_manage_api_is_one_rank(emulated):
    from hccl.manage.api import create_group, destroy_group, get_local_rank_id, get_rank_id, get_rank_size
    from hccl.split.api import set_split_strategy_by_idx

    assert (get_rank_size(), get_rank_id(), get_local_rank_id()) == (1, 0, 0)
    create_group("pair", 1, [0])
    assert get_rank_size("pair") == 1
    destroy_group("pair")
    with pytest.raises(ValueError, match="one rank"):
        create_group("pair", 2, [0, 1])
    with pytest.raises(ValueError, match="does not exist"):
        get_rank_size("pair")
    set_split_strategy_by_idx([20, 100])
    with pytest.raises(ValueError, match="non-negative ints"):
        set_split_strategy_by_idx("20,100")


def test_the_hccl_package_goes_with_the_emulation(no_adapter):
    adapter.emulate_adapter()
    assert "hccl.manage.api" in sys.modules
    adapter.uninstall()
    assert not any(n.split(".")[0] in ("hccl", "npu_bridge") for n in sys.modules)
    with pytest.raises(ImportError):
        import hccl.manage.api  # noqa: F401


# ---- npu_convert_dropout: Keras 2's Dropout calls the adapter's dropout -------------------------


def test_importing_npu_convert_dropout_swaps_keras2_dropout_until_the_emulation_ends(emulated, monkeypatch):
    classes = [cls for cls, _ in dropout_swap.keras2_dropout_classes()]  # tf_keras on TF 2.16+, keras 2.6 on 2.6
    if not classes:
        pytest.skip("no Keras 2 here")
    originals = [cls.__dict__.get("call") for cls in classes]
    assert not dropout_swap.is_swapped()
    import npu_bridge.estimator.npu.npu_convert_dropout  # noqa: F401 - imported for its side effect

    assert all(cls.call is dropout_swap.dropout_call for cls in classes)
    calls = []
    from npu_jupyter.adapter.tf1 import npu_ops

    real = npu_ops.dropout
    monkeypatch.setattr(npu_ops, "dropout", lambda x, **kw: calls.append(kw) or real(x, **kw))
    dropout = classes[-1]  # the Keras 2 scripts import (tf_keras or keras 2)
    g = tf.Graph()
    with g.as_default():
        x = tf.ones([2000])
        dropped = dropout(0.25, seed=3)(x, training=True)
        kept = dropout(0.25)(x, training=False)
        shaped = dropout(0.25, noise_shape=[1])(x, training=True)
    assert [c["keep_prob"] for c in calls] == [0.75]  # only the layer without a noise shape
    with v1.Session(graph=g) as sess:
        d, k, s = sess.run([dropped, kept, shaped])
    assert np.allclose(np.unique(d), [0.0, 4 / 3], atol=1e-4) and 0.65 < np.mean(d > 0) < 0.85
    assert (k == 1.0).all() and len(np.unique(s)) == 1  # identity when not training; one mask value for [1]
    adapter.uninstall()
    assert [cls.__dict__.get("call") for cls in classes] == originals


# ---- util.set_iteration_per_loop: a step count stays what the user counted ---------------------


def _looping(steps):
    """A ConfigProto whose NpuOptimizer entry sets iterations_per_loop, which the adapter needs to loop."""
    config = v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["iterations_per_loop"].i = steps
    return config


def _train_graph():
    g = tf.Graph()
    with g.as_default():
        ds = tf.data.Dataset.range(1000).map(lambda i: tf.cast(i, tf.float32))
        batch = v1.data.make_one_shot_iterator(ds).get_next()
        w = v1.get_variable("w", [], initializer=v1.zeros_initializer())
        loss = tf.square(w - batch, name="loss")
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=step)
    return g, batch, loss, step, train_op


def test_set_iteration_per_loop_runs_that_many_steps_per_run_and_says_so(emulated):
    from npu_bridge.estimator.npu import util

    g, batch, loss, step, train_op = _train_graph()
    with v1.Session(graph=g, config=_looping(3)) as sess:
        sess.run(v1.global_variables_initializer())
        assert util.set_iteration_per_loop(sess, train_op, 1) is train_op
        loop_op = util.set_iteration_per_loop(sess, train_op, 3)
        assert loop_op.name == "IterationOp" and sess.backend == "emulator"
        with pytest.warns(UserWarning, match="runs the step 3 times per sess.run"):
            _, seen = sess.run([loop_op, batch])
        _, seen = sess.run([loop_op, batch])
        assert sess.run(step) == 6  # 2 runs x 3 steps, as on the device
        assert seen == 5.0  # the last step's batch (batches 0..5 consumed)
        sess.run(train_op)  # the plain train op stays one step
        assert sess.run(step) == 7


def test_the_loop_is_announced_when_it_runs_not_when_the_op_is_made(emulated):
    # ModelZoo DualGAN_ID1001 makes an IterationOp on every step and runs its plain train ops: six warnings
    # said "runs the step 10 times per sess.run" of ops that never ran
    from npu_bridge.estimator.npu import util

    g, _, _, step, train_op = _train_graph()
    with v1.Session(graph=g, config=_looping(3)) as sess:
        sess.run(v1.global_variables_initializer())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loop_op = util.set_iteration_per_loop(sess, train_op, 3)
            sess.run(train_op)
        assert sess.run(step) == 1
        with pytest.warns(UserWarning, match="runs the step 3 times per sess.run"):
            sess.run(loop_op)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per op and count
            sess.run(loop_op)
        assert sess.run(step) == 7


def test_a_second_iteration_op_runs_one_step_as_on_the_device(emulated):
    # the adapter's GeOp loops only a graph holding a node named exactly 'IterationOp' (geop_npu.cc); a second
    # call in one graph makes 'IterationOp_1', which the device runs once per sess.run (DualGAN_ID1001)
    from npu_bridge.estimator.npu import util

    g, _, _, step, train_op = _train_graph()
    with v1.Session(graph=g, config=_looping(3)) as sess:
        sess.run(v1.global_variables_initializer())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = util.set_iteration_per_loop(sess, train_op, 3)
        with pytest.warns(UserWarning, match="'IterationOp_1' is not named 'IterationOp'.* runs one step, not 3"):
            second = util.set_iteration_per_loop(sess, train_op, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per session
            third = util.set_iteration_per_loop(sess, train_op, 3)
            sess.run(second)
            sess.run(third)
        assert (second.name, third.name) == ("IterationOp_1", "IterationOp_2")
        assert sess.run(step) == 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sess.run(first)
        assert sess.run(step) == 5


def test_a_looped_op_fed_its_data_says_every_step_reuses_the_feed(emulated):
    # word2vec_ID0134 feeds each batch with feed_dict and loops 10 steps per sess.run
    from npu_bridge.estimator.npu import util

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        w = v1.get_variable("w", [2], initializer=v1.zeros_initializer())
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(tf.square(w - x)), global_step=step)
    with v1.Session(graph=g, config=_looping(3)) as sess:
        sess.run(v1.global_variables_initializer())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop_op = util.set_iteration_per_loop(sess, train_op, 3)
        with pytest.warns(UserWarning, match="all 3 steps train on those same fed values, not on 3 batches"):
            sess.run(loop_op, feed_dict={x: [1.0, 2.0]})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once per op and session
            sess.run(loop_op, feed_dict={x: [1.0, 2.0]})
        assert sess.run(step) == 6


def test_a_looped_op_reading_a_dataset_with_a_fed_rate_gives_no_feed_warning(emulated):
    from npu_bridge.estimator.npu import util

    g, batch, loss, step, _ = _train_graph()
    with g.as_default():
        rate = v1.placeholder_with_default(0.0, [], name="rate")
        train_op = v1.train.GradientDescentOptimizer(rate).minimize(loss, global_step=step)
    with v1.Session(graph=g, config=_looping(2)) as sess:
        sess.run(v1.global_variables_initializer())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop_op = util.set_iteration_per_loop(sess, train_op, 2)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _, seen = sess.run([loop_op, batch], feed_dict={rate: 0.0})
        assert [str(w.message) for w in said if "same fed values" in str(w.message)] == []
        assert any("runs the step 2 times per sess.run" in str(w.message) for w in said)
        assert seen == 1.0 and sess.run(step) == 2  # each step read its own batch


def test_without_the_sessions_loop_option_the_iteration_op_runs_one_step_as_on_the_device(emulated):
    # the GeOp loops only when the session's iterations_per_loop option is above 1 (geop_npu.cc); the
    # emulator looped 10 steps per run of a session that never set it
    from npu_bridge.estimator.npu import util

    g, _, _, step, train_op = _train_graph()
    with v1.Session(graph=g) as sess:
        sess.run(v1.global_variables_initializer())
        with pytest.warns(UserWarning, match="iterations_per_loop option is 1 .not set.* runs one step, not 10"):
            loop_op = util.set_iteration_per_loop(sess, train_op, 10)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no loop to announce
            sess.run(loop_op)
        assert sess.run(step) == 1


def test_set_iteration_per_loop_checks_its_arguments_as_the_adapter(emulated):
    from npu_bridge.estimator.npu import util

    g, _, loss, _, train_op = _train_graph()
    with v1.Session(graph=g) as sess:
        with pytest.raises(ValueError, match="need type is 'Operation'"):
            util.set_iteration_per_loop(sess, loss, 2)
        with pytest.raises(ValueError, match="must be positive"):
            util.set_iteration_per_loop(sess, train_op, 0)
        with pytest.raises(TypeError, match="must be int"):
            util.set_iteration_per_loop(sess, train_op, 2.0)


def test_iteration_per_loop_object_loads_the_count_for_a_session(emulated):
    from npu_bridge.estimator.npu.util import IterationPerLoop

    g, _, _, step, train_op = _train_graph()
    loop = IterationPerLoop()
    op = loop.create_iteration_per_loop_var(train_op)
    with v1.Session(graph=g, config=_looping(4)) as sess:
        sess.run(v1.global_variables_initializer())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop.load_iteration_per_loop_var(sess, 4)
        sess.run(op)
        assert sess.run(step) == 4


# ---- util.set_graph_exec_config: the adapter's attributes -------------------------------------


def test_set_graph_exec_config_sets_the_adapters_attributes(emulated):
    from npu_bridge.estimator.npu import util
    from npu_bridge.estimator.npu.npu_config import ExperimentalConfig, GraphMemoryOptimizeConfig

    g = tf.Graph()
    with g.as_default():
        out = tf.identity(tf.ones([2]), name="out")
        config = ExperimentalConfig(graph_memory_optimize_config=GraphMemoryOptimizeConfig(recompute="manual"))
        marked = util.set_graph_exec_config(
            "out:0", dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile",
            dynamic_inputs_shape_range="data:[1~4]", is_train_graph=True, experimental_config=config,
        )  # fmt: skip
        with pytest.raises(ValueError, match="lazy_recompile or dynamic_execute"):
            util.set_graph_exec_config(out, dynamic_graph_execute_mode="lazy")
        with pytest.raises(ValueError, match="fetch is invalid"):
            util.set_graph_exec_config(3)
    assert marked is out
    op = out.op
    assert op.get_attr("_graph_dynamic_input") is True and op.get_attr("_is_train_graph") is True
    assert op.get_attr("_graph_dynamic_graph_execute_mode") == b"lazy_recompile"
    assert op.get_attr("_graph_dynamic_inputs_shape_range") == b"data:[1~4]"
    assert op.get_attr("_recompute_mode") == b"manual"


def test_a_marked_graph_runs_on_the_emulator_with_the_lazy_recompile_plan(emulated):
    from npu_bridge.estimator.npu import util

    from npu_jupyter.scope import without_npu_compile_scope

    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4, 4], name="x")
        a = tf.matmul(x, x, name="mm1")
        with without_npu_compile_scope():
            h = tf.identity(a, name="host")
        out = tf.matmul(h, h, name="mm2")
        util.set_graph_exec_config(out, dynamic_input=True, dynamic_graph_execute_mode="lazy_recompile")
    with v1.Session(graph=g) as sess:
        sess.run(out, {x: np.eye(4, dtype=np.float32)})
        report = sess.last_report
    assert len({report.plan.ops[n].cluster for n in ("mm1", "mm2")}) == 2  # both GeOps kept, none cut off


# ---- MonitoredTrainingSession: emulator sessions -----------------------------------------------


def test_monitored_training_session_runs_on_the_emulator_with_the_scripts_npu_options(emulated, tmp_path):
    g, _, loss, step, train_op = _train_graph()
    config = v1.ConfigProto()
    custom = config.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["precision_mode"].s = b"allow_mix_precision"
    with g.as_default():
        hooks = [v1.train.StopAtStepHook(last_step=3)]
        with v1.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks, config=config) as mon:
            while not mon.should_stop():
                mon.run(train_op)
            raw = mon._tf_sess()
            assert type(raw).__name__ == "EmulatorSession"
            assert raw.config.precision_mode == "allow_mix_precision"
    adapter.uninstall()
    from tensorflow.python.client import session
    from tensorflow.python.training import session_manager

    assert session_manager.session is session


def test_a_tensorflow_without_a_reachable_session_manager_gets_a_visible_warning(no_adapter, monkeypatch):
    from tensorflow.python.training import session_manager

    monkeypatch.delattr(session_manager, "session")
    with pytest.warns(UserWarning, match="MonitoredTrainingSession.*NOT swapped"):
        adapter.emulate_adapter()
    adapter.uninstall()


# ---- NPUEstimator: where TensorFlow has no Estimator, one clear error --------------------------


def test_without_tf_estimator_the_estimator_names_import_and_fail_clearly_on_use(emulated):
    from npu_jupyter.adapter.tf1.estimator import estimator_module

    if estimator_module() is not None:
        pytest.skip("this TensorFlow has tf.estimator: tests/legacy_adapter runs the emulated NPUEstimator")
    from npu_bridge.npu_init import NPUEstimator, NPUEstimatorSpec, npu_run_config_init

    for name, obj in (("NPUEstimator", NPUEstimator), ("NPUEstimatorSpec", NPUEstimatorSpec)):
        with pytest.raises(NotEmulatedError, match=rf"{name} needs TensorFlow's Estimator.*2\.16.*≤ 2\.15"):
            obj(model_fn=None)
    with pytest.raises(NotEmulatedError, match="npu_run_config_init needs TensorFlow's Estimator"):
        npu_run_config_init()


# ---- NPUEstimator where TensorFlow has tf.estimator (the legacy leg) ----------------------------


def _estimator_or_skip():
    from npu_jupyter.adapter.tf1.estimator import estimator_module

    module = estimator_module()
    if module is None:
        pytest.skip("TensorFlow >= 2.16 has no tf.estimator: the legacy leg (TF 2.6.5) runs this test")
    return module


class _RunCounter(v1.train.SessionRunHook):
    """Counts the session runs a hook sees."""

    runs = 0

    def after_run(self, run_context, run_values):
        self.runs += 1


def test_npu_estimator_trains_in_emulator_sessions_with_the_run_configs_options(emulated, tmp_path):
    estimator = _estimator_or_skip()
    from npu_bridge.npu_init import NPUEstimator, NPUEstimatorSpec, NPURunConfig

    seen = []

    class See(v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            seen.append(session)

    def model_fn(features, labels, mode, config):
        w = v1.get_variable("w", [3, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        assert isinstance(config, NPURunConfig)  # the adapter passes its run config
        return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    def input_fn():
        x = np.ones([16, 3], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(4)

    config = NPURunConfig(model_dir=str(tmp_path), precision_mode="allow_mix_precision", iterations_per_loop=2)
    # ModelZoo VGG19_ID0374's logging hook computes its FPS as batch x iterations_per_loop per hook call
    with pytest.warns(UserWarning, match="iterations_per_loop=2 runs 2 steps per session run on the device") as said:
        est = NPUEstimator(model_fn=model_fn, config=config)
    assert "hooks (a logging or FPS hook) are called after every step here, after every 2 steps on the device" in str(
        said[0].message
    )
    counter = _RunCounter()
    est.train(input_fn=input_fn, steps=5, hooks=[See(), counter])
    assert counter.runs == 5  # one hook call per step here
    assert [type(s).__name__ for s in seen] == ["EmulatorSession"]
    assert seen[0].config.precision_mode == "allow_mix_precision" and seen[0].config.iterations_per_loop == 2
    assert est.get_variable_value("global_step") == 5  # one step per session run: the steps asked for
    with pytest.raises(ValueError, match="must be provided with type `NPUConfigs`"):
        NPUEstimator(model_fn=model_fn, config=estimator.RunConfig())
    with pytest.raises(NotEmulatedError, match="host_call.*outfeed"):
        NPUEstimatorSpec(mode=estimator.ModeKeys.TRAIN, host_call=(lambda: None, []))


def test_npu_estimator_without_a_model_fn_says_it_needs_one(emulated, tmp_path):
    _estimator_or_skip()
    from npu_bridge.npu_init import NPUEstimator, NPURunConfig

    with pytest.raises(ValueError, match="NPUEstimator: model_fn must be provided"):
        NPUEstimator(config=NPURunConfig(model_dir=str(tmp_path)))


def test_npu_run_config_init_gives_a_run_config_the_npu_session_options(emulated):
    estimator = _estimator_or_skip()
    from npu_bridge.npu_init import npu_run_config_init

    config = npu_run_config_init()
    assert isinstance(config, estimator.RunConfig)
    names = [c.name for c in config.session_config.graph_options.rewrite_options.custom_optimizers]
    assert names == ["NpuOptimizer"] and config.session_config.allow_soft_placement


def test_an_emulated_re_export_this_tensorflow_lacks_fails_on_use_not_at_emulation(no_adapter, monkeypatch):
    import copy

    from npu_jupyter.adapter import surface

    table = copy.deepcopy(surface.spec_table())
    table["npu_bridge.npu_init"]["emulated"]["backend"] = "tensorflow.python.no_such_module"
    monkeypatch.setattr(surface, "_table", lambda: table)
    adapter.emulate_adapter()
    try:
        from npu_bridge.npu_init import backend

        with pytest.raises(
            NotEmulatedError, match="re-exports tensorflow.python.no_such_module, which this TensorFlow"
        ):
            backend.set_session(None)
    finally:
        adapter.uninstall()
