"""Typed view of NpuConfig's options, generated from catalogue.json by tools/build_option_types.py.

Do not edit: rebuild with ``python tools/build_option_types.py``. Used under ``TYPE_CHECKING`` only.
"""

from __future__ import annotations


class OptionAttributes:
    """Every session option as an attribute: ``None`` = unset (the adapter default applies)."""

    use_off_line: bool | None
    """Run the graph on the Ascend device (True) or keep everything on the host CPU (False)."""
    iterations_per_loop: int | None
    """Training iterations the device runs per sess.run() (loop offload); must match set_iteration_per_loop."""
    graph_run_mode: int | None
    """Graph run mode: 0 = online inference, 1 = training."""
    session_device_id: int | None
    """Logical device id for this session; takes precedence over ASCEND_DEVICE_ID."""
    deterministic: int | None
    """Deterministic computing: 0 = off, 1 = on (slower, reproducible)."""
    device_type: str | None
    """Device type passed to GE as ge.deviceType."""
    enable_data_pre_proc: bool | None
    """Offload the GetNext (dataset) operator to the device; a prerequisite for loop offload."""
    mix_compile_mode: bool | None
    """Mixed computing: keep operators the device cannot run on the host instead of one full-offload graph."""
    in_out_pair_flag: bool | None
    """With in_out_pair: True offloads exactly the nodes between the pairs, False keeps them on the host."""
    in_out_pair: str | None
    """Online inference: str() of a list of [[input node names], [output node names]] pairs that bound the
    offloaded (or kept) region; needs mix_compile_mode.
    """
    min_group_size: bool | None
    """Old cluster-size setting; NPUEstimator still writes True but the adapter never reads it."""
    precision_mode: str | None
    """Global operator precision mode (unset: GE picks allow_fp32_to_fp16 for training on Ascend910, force_fp16
    for inference, must_keep_origin_dtype on Atlas A2).
    """
    precision_mode_v2: str | None
    """Newer precision mode spelling (fp16, origin, cube_fp16in_fp32out, mixed_float16, ...); exclusive with
    precision_mode.
    """
    modify_mixlist: str | None
    """Path of a JSON file that moves operators between the mixed-precision allow/deny/gray lists."""
    customize_dtypes: str | None
    """Path of a file fixing input/output dtypes of named operators or operator types."""
    op_precision_mode: str | None
    """Path of an .ini file giving per-operator implementation modes (high_precision, high_performance, ...)."""
    op_select_implmode: str | None
    """Operator implementation mode: high_precision, high_performance or their *_for_all variants."""
    optypelist_for_implmode: str | None
    """Comma-separated operator types that use op_select_implmode; needs op_select_implmode."""
    enable_reduce_precision: bool | None
    """Reserved; NPUEstimator writes it but the adapter never reads it."""
    enable_dump: bool | None
    """Data dump of operator inputs/outputs; needs dump_path."""
    dump_path: str | None
    """Existing, writable directory for dump files (absolute or relative to the working directory)."""
    dump_step: str | None
    """Steps to dump, e.g. '0|5|10' or '0|3-5|10' (at most 100 items); unset dumps every step."""
    dump_mode: str | None
    """What to dump: input, output or all."""
    enable_dump_debug: bool | None
    """Overflow detection dump; needs dump_path."""
    dump_debug_mode: str | None
    """Overflow detection mode: aicore_overflow, atomic_overflow or all."""
    dump_data: str | None
    """Dump full tensors ('tensor') or statistics only ('stats')."""
    dump_layer: str | None
    """Space-separated node names to dump (default: all nodes)."""
    quant_dumpable: str | None
    """'1' keeps tensors before AMCT quantization dumpable (online inference), '0' lets them be optimized away."""
    profiling_mode: bool | None
    """Collect a profile; options come from profiling_options."""
    profiling_options: str | None
    """JSON object of profiling switches (output, training_trace, task_trace, aicpu, fp_point, bp_point,
    aic_metrics, ...).
    """
    graph_memory_max_size: str | int | None
    """Bytes of static plus dynamic graph memory (older versions only; no effect today)."""
    variable_memory_max_size: str | int | None
    """Bytes of variable memory (older versions; the NPURunConfig table says it no longer takes effect)."""
    atomic_clean_policy: int | None
    """0 = clean atomic-operator memory centrally, 1 = per operator."""
    static_memory_policy: int | None
    """Static memory allocation policy: 0 (dynamic), 2, 3 or 4 (1 behaves as 2)."""
    memory_optimization_policy: str | None
    """GE memory optimization policy name."""
    variable_use_1g_huge_page: int | None
    """Place variables in 1 GiB huge pages: 0, 1 or 2."""
    graph_slice: str | None
    """Graph slicing for memory: auto or manual."""
    external_weight: bool | None
    """Store Const weights in external files so several models in a session can share them."""
    input_fusion_size: int | None
    """Host-to-device inputs up to this many bytes are fused into one copy (0 disables)."""
    input_batch_cpy: bool | None
    """Copy several inputs to the device in one batch."""
    variable_placement: str | None
    """Where variables live: Device, or Host (saves device memory; needs mix_compile_mode)."""
    input_shape: str | None
    """Input shapes for dynamic gears, e.g. 'data:1,1,40,-1;label:1,-1' (-1 marks a geared dimension)."""
    dynamic_dims: str | None
    """Gears for the -1 dimensions of input_shape, e.g. '20,20;40,40' (at least two gears)."""
    dynamic_node_type: int | None
    """Which inputs are geared: 0 = dataset, 1 = placeholder."""
    compile_hybrid_mode: int | None
    """1 compiles geared and fully dynamic graphs together (needs dynamic_node_type 1)."""
    dynamic_input: bool | None
    """The graph's inputs have dynamic shapes."""
    dynamic_graph_execute_mode: str | None
    """Execution mode for dynamic inputs: dynamic_execute or lazy_recompile (only read with dynamic_input)."""
    dynamic_inputs_shape_range: str | None
    """Shape ranges, e.g. 'getnext:[128,3~5,-1];data:[1,2~8]' (getnext = dataset inputs, data = placeholders)."""
    compile_dynamic_mode: bool | None
    """Generalize every input shape to -1 (static graphs compile as dynamic ones)."""
    shape_generalization_mode: str | None
    """Shape generalization: STRICT, FULL or ADAPTIVE."""
    all_tensor_not_empty: bool | None
    """Promise GE that no tensor is empty (skips checks)."""
    ac_parallel_enable: str | None
    """'1' lets AI CPU and AI Core operators of a dynamic-shape graph run in parallel, '0' (default) does not."""
    enable_exception_dump: int | None
    """Dump inputs/outputs of a failing operator: 0 off, 1 full exception dump, 2 lite exception dump."""
    op_debug_level: int | None
    """Operator debug level 0-4 (1/2 keep .cce files for AI Core error analysis)."""
    op_debug_config: str | None
    """Path of a .cfg file of operator debug switches (oom, dump_cce, dump_loc, ccec_O0, ccec_g, check_flag)."""
    debug_dir: str | None
    """Directory for operator-compilation debug files (.o/.json/.cce)."""
    export_compile_stat: int | None
    """Write fusion_result.json: 0 never, 1 at normal exit, 2 right after graph compilation."""
    jit_compile: str | None
    """Compile operators online ('true'), prefer prebuilt binaries ('false') or decide per graph ('auto')."""
    enable_scope_fusion_passes: str | None
    """Comma-separated non-general scope fusion passes to enable, e.g. 'ScopeLayerNormPass'."""
    fusion_switch_file: str | None
    """Path of a JSON file switching graph/UB fusion passes on or off."""
    buffer_optimize: str | None
    """Buffer optimization: l2_optimize or off_optimize."""
    enable_small_channel: int | None
    """Small-channel convolution optimization: 0 off, 1 on (forced on for graph_run_mode 0)."""
    enable_compress_weight: bool | None
    """Compress weights; exclusive with compress_weight_conf."""
    compress_weight_conf: str | None
    """Path of a weight-compression config file; exclusive with enable_compress_weight."""
    op_compiler_cache_mode: str | None
    """Operator compile disk cache: enable, disable or force (clear and rebuild)."""
    op_compiler_cache_dir: str | None
    """Directory of the operator compile cache (default $HOME/atc_data)."""
    stream_max_parallel_num: str | None
    """Engine parallelism, e.g. 'DNN_VM_AICPU:10,AIcoreEngine:1'."""
    variable_format_optimize: bool | None
    """Convert variables to device-friendly formats during initialization (older adapters)."""
    soc_config: str | None
    """SoC version to compile for, e.g. Ascend910 or Ascend910B."""
    topo_sorting_mode: int | None
    """Topological sort order of the graph: 0 or 1."""
    insert_op_file: str | None
    """Path of an AIPP insert-op configuration file."""
    oo_constant_folding: bool | None
    """GE constant folding on or off."""
    oo_level: str | None
    """GE graph optimization level O0 to O3."""
    optimization_switch: str | None
    """GE optimization pass switches ('pass:on;pass:off'); the adapter appends forbidden_close_pass:on."""
    auto_multistream_parallel_mode: str | None
    """Automatic multi-stream parallelism: cv, LoadBalance[:n] or MainStream:n (1<=n<=64)."""
    graph_max_parallel_model_num: int | None
    """Online inference: threads executing the graph in parallel."""
    aicore_num: str | None
    """AI Core numbers to use as 'cube|vector'."""
    frozen_variable: bool | None
    """Inference: turn variables into constants before compiling."""
    lower_functional_ops: bool | None
    """Let TensorFlow lower functional control flow (If/While) instead of keeping it for GE."""
    const_input: str | None
    """Session-level const input description read by the adapter's pass options."""
    aoe_mode: str | None
    """AOE tuning: '1' subgraph, '2' operator, '4' gradient split."""
    work_path: str | None
    """AOE working directory (only read with aoe_mode)."""
    distribute_config: str | None
    """AOE distributed tuning config (only read with aoe_mode)."""
    aoe_config_file: str | None
    """AOE: file naming the operators to tune."""
    auto_tune_mode: str | None
    """Old TBE Auto Tune modes ('RL', 'GA', 'RL,GA'); superseded by aoe_mode."""
    hcom_parallel: bool | None
    """Run AllReduce gradient updates in parallel with forward/backward."""
    hcom_multi_mode: bool | None
    """Multiple collective-communication modes in one process."""
    is_tailing_optimization: bool | None
    """Communication tail optimization (BERT); must match NPUOptimizer's is_tailing_optimization."""
    local_rank_id: int | None
    """Rank of this process on its server, for recommendation-network data parallelism."""
    local_device_list: str | None
    """Devices the main process sends data to, e.g. '0,1' (used with local_rank_id)."""
    HCCL_algorithm: str | None
    """Collective communication algorithm selection string."""
    job: str | None
    """Job name of this process (from TF_CONFIG); 'ps' makes the adapter skip the graph."""
    task_index: int | None
    """Task index of this process (from TF_CONFIG)."""
    hccl_timeout: int | None
    """Collective communication timeout in seconds (Atlas training: up to 17340, default 1836)."""
    op_wait_timeout: int | None
    """Operator wait timeout in seconds (default 120)."""
    op_execute_timeout: int | None
    """Operator execution timeout in seconds."""
    stream_sync_timeout: int | None
    """Stream synchronization timeout in ms (-1: wait forever); must exceed hccl_timeout in clusters."""
    event_sync_timeout: int | None
    """Event synchronization timeout in ms (-1: wait forever)."""
    graph_exec_timeout: int | None
    """Graph execution timeout in ms."""
    experimental_accelerate_train_mode: str | None
    """Train part of the run in reduced precision: 'fast|step|0.9' (fast/fast1, step 0.2-0.9 or loss 1.01-1.5)."""
    graph_compiler_cache_dir: str | None
    """Existing directory for the graph compilation disk cache."""
    experimental_logical_device_cluster_deploy_mode: str | None
    """Logical device cluster deploy mode (NPUEstimator writes 'LB')."""
    experimental_logical_device_id: str | None
    """Logical device id list for cluster deployment."""
    experimental_model_deploy_mode: str | None
    """Model deploy mode."""
    experimental_model_deploy_devicelist: str | None
    """Devices to deploy the model on."""
    resource_config_path: str | None
    """Path of a resource configuration file."""
    graph_parallel_option_path: str | None
    """Path of a graph-parallel options file."""
    enable_graph_parallel: bool | None
    """Enable graph parallelism (model splitting)."""
