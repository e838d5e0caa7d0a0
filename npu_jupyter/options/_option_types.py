"""Typed view of NpuConfig's options, generated from catalogue.json by tools/build_option_types.py.

Do not edit: rebuild with ``python tools/build_option_types.py``. Used under ``TYPE_CHECKING`` only.
"""

from __future__ import annotations

from typing import Optional, Union


class OptionAttributes:
    """Every session option as an attribute: ``None`` = unset (the adapter default applies)."""

    use_off_line: Optional[bool]
    """Run the graph on the Ascend device (True) or keep everything on the host CPU (False)."""
    iterations_per_loop: Optional[int]
    """Training iterations the device runs per sess.run() (loop offload); must match set_iteration_per_loop."""
    graph_run_mode: Optional[int]
    """Graph run mode: 0 = online inference, 1 = training."""
    session_device_id: Optional[int]
    """Logical device id for this session; takes precedence over ASCEND_DEVICE_ID."""
    deterministic: Optional[int]
    """Deterministic computing: 0 = off, 1 = on (slower, reproducible)."""
    device_type: Optional[str]
    """Device type passed to GE as ge.deviceType."""
    enable_data_pre_proc: Optional[bool]
    """Offload the GetNext (dataset) operator to the device; a prerequisite for loop offload."""
    mix_compile_mode: Optional[bool]
    """Mixed computing: keep operators the device cannot run on the host instead of one full-offload graph."""
    in_out_pair_flag: Optional[bool]
    """With in_out_pair: True offloads exactly the nodes between the pairs, False keeps them on the host."""
    in_out_pair: Optional[str]
    """Online inference: str() of a list of [[input node names], [output node names]] pairs that bound the
    offloaded (or kept) region; needs mix_compile_mode.
    """
    min_group_size: Optional[bool]
    """Old cluster-size setting; NPUEstimator still writes True but the adapter never reads it."""
    precision_mode: Optional[str]
    """Global operator precision mode (unset: GE picks allow_fp32_to_fp16 for training on Ascend910, force_fp16
    for inference, must_keep_origin_dtype on Atlas A2).
    """
    precision_mode_v2: Optional[str]
    """Newer precision mode spelling (fp16, origin, cube_fp16in_fp32out, mixed_float16, ...); exclusive with
    precision_mode.
    """
    modify_mixlist: Optional[str]
    """Path of a JSON file that moves operators between the mixed-precision allow/deny/gray lists."""
    customize_dtypes: Optional[str]
    """Path of a file fixing input/output dtypes of named operators or operator types."""
    op_precision_mode: Optional[str]
    """Path of an .ini file giving per-operator implementation modes (high_precision, high_performance, ...)."""
    op_select_implmode: Optional[str]
    """Operator implementation mode: high_precision, high_performance or their *_for_all variants."""
    optypelist_for_implmode: Optional[str]
    """Comma-separated operator types that use op_select_implmode; needs op_select_implmode."""
    enable_reduce_precision: Optional[bool]
    """Reserved; NPUEstimator writes it but the adapter never reads it."""
    enable_dump: Optional[bool]
    """Data dump of operator inputs/outputs; needs dump_path."""
    dump_path: Optional[str]
    """Existing, writable directory for dump files (absolute or relative to the working directory)."""
    dump_step: Optional[str]
    """Steps to dump, e.g. '0|5|10' or '0|3-5|10' (at most 100 items); unset dumps every step."""
    dump_mode: Optional[str]
    """What to dump: input, output or all."""
    enable_dump_debug: Optional[bool]
    """Overflow detection dump; needs dump_path."""
    dump_debug_mode: Optional[str]
    """Overflow detection mode: aicore_overflow, atomic_overflow or all."""
    dump_data: Optional[str]
    """Dump full tensors ('tensor') or statistics only ('stats')."""
    dump_layer: Optional[str]
    """Space-separated node names to dump (default: all nodes)."""
    quant_dumpable: Optional[str]
    """'1' keeps tensors before AMCT quantization dumpable (online inference), '0' lets them be optimized away."""
    profiling_mode: Optional[bool]
    """Collect a profile; options come from profiling_options."""
    profiling_options: Optional[str]
    """JSON object of profiling switches (output, training_trace, task_trace, aicpu, fp_point, bp_point,
    aic_metrics, ...).
    """
    graph_memory_max_size: Optional[Union[str, int]]
    """Bytes of static plus dynamic graph memory (older versions only; no effect today)."""
    variable_memory_max_size: Optional[Union[str, int]]
    """Bytes of variable memory (older versions; the NPURunConfig table says it no longer takes effect)."""
    atomic_clean_policy: Optional[int]
    """0 = clean atomic-operator memory centrally, 1 = per operator."""
    static_memory_policy: Optional[int]
    """Static memory allocation policy: 0 (dynamic), 2, 3 or 4 (1 behaves as 2)."""
    memory_optimization_policy: Optional[str]
    """GE memory optimization policy name."""
    variable_use_1g_huge_page: Optional[int]
    """Place variables in 1 GiB huge pages: 0, 1 or 2."""
    graph_slice: Optional[str]
    """Graph slicing for memory: auto or manual."""
    external_weight: Optional[bool]
    """Store Const weights in external files so several models in a session can share them."""
    input_fusion_size: Optional[int]
    """Host-to-device inputs up to this many bytes are fused into one copy (0 disables)."""
    input_batch_cpy: Optional[bool]
    """Copy several inputs to the device in one batch."""
    variable_placement: Optional[str]
    """Where variables live: Device, or Host (saves device memory; needs mix_compile_mode)."""
    input_shape: Optional[str]
    """Input shapes for dynamic gears, e.g. 'data:1,1,40,-1;label:1,-1' (-1 marks a geared dimension)."""
    dynamic_dims: Optional[str]
    """Gears for the -1 dimensions of input_shape, e.g. '20,20;40,40' (at least two gears)."""
    dynamic_node_type: Optional[int]
    """Which inputs are geared: 0 = dataset, 1 = placeholder."""
    compile_hybrid_mode: Optional[int]
    """1 compiles geared and fully dynamic graphs together (needs dynamic_node_type 1)."""
    dynamic_input: Optional[bool]
    """The graph's inputs have dynamic shapes."""
    dynamic_graph_execute_mode: Optional[str]
    """Execution mode for dynamic inputs: dynamic_execute or lazy_recompile (only read with dynamic_input)."""
    dynamic_inputs_shape_range: Optional[str]
    """Shape ranges, e.g. 'getnext:[128,3~5,-1];data:[1,2~8]' (getnext = dataset inputs, data = placeholders)."""
    compile_dynamic_mode: Optional[bool]
    """Generalize every input shape to -1 (static graphs compile as dynamic ones)."""
    shape_generalization_mode: Optional[str]
    """Shape generalization: STRICT, FULL or ADAPTIVE."""
    all_tensor_not_empty: Optional[bool]
    """Promise GE that no tensor is empty (skips checks)."""
    ac_parallel_enable: Optional[str]
    """'1' lets AI CPU and AI Core operators of a dynamic-shape graph run in parallel, '0' (default) does not."""
    enable_exception_dump: Optional[int]
    """Dump inputs/outputs of a failing operator: 0 off, 1 full exception dump, 2 lite exception dump."""
    op_debug_level: Optional[int]
    """Operator debug level 0-4 (1/2 keep .cce files for AI Core error analysis)."""
    op_debug_config: Optional[str]
    """Path of a .cfg file of operator debug switches (oom, dump_cce, dump_loc, ccec_O0, ccec_g, check_flag)."""
    debug_dir: Optional[str]
    """Directory for operator-compilation debug files (.o/.json/.cce)."""
    export_compile_stat: Optional[int]
    """Write fusion_result.json: 0 never, 1 at normal exit, 2 right after graph compilation."""
    jit_compile: Optional[str]
    """Compile operators online ('true'), prefer prebuilt binaries ('false') or decide per graph ('auto')."""
    enable_scope_fusion_passes: Optional[str]
    """Comma-separated non-general scope fusion passes to enable, e.g. 'ScopeLayerNormPass'."""
    fusion_switch_file: Optional[str]
    """Path of a JSON file switching graph/UB fusion passes on or off."""
    buffer_optimize: Optional[str]
    """Buffer optimization: l2_optimize or off_optimize."""
    enable_small_channel: Optional[int]
    """Small-channel convolution optimization: 0 off, 1 on (forced on for graph_run_mode 0)."""
    enable_compress_weight: Optional[bool]
    """Compress weights; exclusive with compress_weight_conf."""
    compress_weight_conf: Optional[str]
    """Path of a weight-compression config file; exclusive with enable_compress_weight."""
    op_compiler_cache_mode: Optional[str]
    """Operator compile disk cache: enable, disable or force (clear and rebuild)."""
    op_compiler_cache_dir: Optional[str]
    """Directory of the operator compile cache (default $HOME/atc_data)."""
    stream_max_parallel_num: Optional[str]
    """Engine parallelism, e.g. 'DNN_VM_AICPU:10,AIcoreEngine:1'."""
    variable_format_optimize: Optional[bool]
    """Convert variables to device-friendly formats during initialization (older adapters)."""
    soc_config: Optional[str]
    """SoC version to compile for, e.g. Ascend910 or Ascend910B."""
    topo_sorting_mode: Optional[int]
    """Topological sort order of the graph: 0 or 1."""
    insert_op_file: Optional[str]
    """Path of an AIPP insert-op configuration file."""
    oo_constant_folding: Optional[bool]
    """GE constant folding on or off."""
    oo_level: Optional[str]
    """GE graph optimization level O0 to O3."""
    optimization_switch: Optional[str]
    """GE optimization pass switches ('pass:on;pass:off'); the adapter appends forbidden_close_pass:on."""
    auto_multistream_parallel_mode: Optional[str]
    """Automatic multi-stream parallelism: cv, LoadBalance[:n] or MainStream:n (1<=n<=64)."""
    graph_max_parallel_model_num: Optional[int]
    """Online inference: threads executing the graph in parallel."""
    aicore_num: Optional[str]
    """AI Core numbers to use as 'cube|vector'."""
    frozen_variable: Optional[bool]
    """Inference: turn variables into constants before compiling."""
    lower_functional_ops: Optional[bool]
    """Let TensorFlow lower functional control flow (If/While) instead of keeping it for GE."""
    const_input: Optional[str]
    """Session-level const input description read by the adapter's pass options."""
    aoe_mode: Optional[str]
    """AOE tuning: '1' subgraph, '2' operator, '4' gradient split."""
    work_path: Optional[str]
    """AOE working directory (only read with aoe_mode)."""
    distribute_config: Optional[str]
    """AOE distributed tuning config (only read with aoe_mode)."""
    aoe_config_file: Optional[str]
    """AOE: file naming the operators to tune."""
    auto_tune_mode: Optional[str]
    """Old TBE Auto Tune modes ('RL', 'GA', 'RL,GA'); superseded by aoe_mode."""
    hcom_parallel: Optional[bool]
    """Run AllReduce gradient updates in parallel with forward/backward."""
    hcom_multi_mode: Optional[bool]
    """Multiple collective-communication modes in one process."""
    is_tailing_optimization: Optional[bool]
    """Communication tail optimization (BERT); must match NPUOptimizer's is_tailing_optimization."""
    local_rank_id: Optional[int]
    """Rank of this process on its server, for recommendation-network data parallelism."""
    local_device_list: Optional[str]
    """Devices the main process sends data to, e.g. '0,1' (used with local_rank_id)."""
    HCCL_algorithm: Optional[str]
    """Collective communication algorithm selection string."""
    job: Optional[str]
    """Job name of this process (from TF_CONFIG); 'ps' makes the adapter skip the graph."""
    task_index: Optional[int]
    """Task index of this process (from TF_CONFIG)."""
    hccl_timeout: Optional[int]
    """Collective communication timeout in seconds (Atlas training: up to 17340, default 1836)."""
    op_wait_timeout: Optional[int]
    """Operator wait timeout in seconds (default 120)."""
    op_execute_timeout: Optional[int]
    """Operator execution timeout in seconds."""
    stream_sync_timeout: Optional[int]
    """Stream synchronization timeout in ms (-1: wait forever); must exceed hccl_timeout in clusters."""
    event_sync_timeout: Optional[int]
    """Event synchronization timeout in ms (-1: wait forever)."""
    graph_exec_timeout: Optional[int]
    """Graph execution timeout in ms."""
    experimental_accelerate_train_mode: Optional[str]
    """Train part of the run in reduced precision: 'fast|step|0.9' (fast/fast1, step 0.2-0.9 or loss 1.01-1.5)."""
    graph_compiler_cache_dir: Optional[str]
    """Existing directory for the graph compilation disk cache."""
    experimental_logical_device_cluster_deploy_mode: Optional[str]
    """Logical device cluster deploy mode (NPUEstimator writes 'LB')."""
    experimental_logical_device_id: Optional[str]
    """Logical device id list for cluster deployment."""
    experimental_model_deploy_mode: Optional[str]
    """Model deploy mode."""
    experimental_model_deploy_devicelist: Optional[str]
    """Devices to deploy the model on."""
    resource_config_path: Optional[str]
    """Path of a resource configuration file."""
    graph_parallel_option_path: Optional[str]
    """Path of a graph-parallel options file."""
    enable_graph_parallel: Optional[bool]
    """Enable graph parallelism (model splitting)."""
