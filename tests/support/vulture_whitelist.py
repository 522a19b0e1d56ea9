"""Names vulture (``make lint``) reports as unused that are used, each group with why.

Never imported or run: vulture only reads it. A name here counts as used everywhere, so keep
the list short and prefer deleting dead code to listing it.
"""

from typing import Any

_: Any = None

# Found by name at run time, never called directly.
_.__getattr__  # lazy package attributes (analysis.structured_logs, analysis.timeline, orchestrator)
_.PrintAtenExportTracer  # worker/tracers/: tracers/registry.py BUILTIN names each "module:Class"
_.PrintAtenMakeFxTracer
_.PrintFxTracer
_.TorchCompileTracer
_.TorchDispatchTracer
_.TorchProfilerTracer
_.VllmCompileTracer
_.VllmProfilerTracer
_.FxRedundancyAnalysis  # the other core.registry tables likewise (analyses, reporters, …)
_.RecordsAnalysis
_.StructuredLogsAnalysis
_.AnomaliesReporter
_.OpStatisticReporter
_.SummaryReporter
_.TracingReporter
_.ChromiumModule
_.RawModule
_.CompileDirectoryModule
_.ExportModule
_.GraphViewerModule
_.GuardsModule
_.IndexModule
_.InductorCodeModule
_.CompilationMetricsModule
_.FailuresModule
_.SymbolicShapeModule
_.RedundantOpElimination
_.readable  # io.RawIOBase protocol of inputguard's capped reader (called by io.BufferedReader)
_.readinto
_.full_matrix  # report/templates/*.j2 read these view properties
_.sort_variant
_.context_type  # ClassVar each framework loader declares: the tracers' context type
_.format_commands  # click.Group hook the CLI's root overrides (click calls it for --help)

# Read by tests/spine/test_layout.py, which fails on any of these names spelt out outside core.
_.owned_names  # core.layout

# Attributes set on other libraries' objects: the assignment is the use.
_.tempdir  # tempfile.tempdir, reset so a forked worker honours its own TMPDIR
_.use_cache  # a transformers config
_.normalizer  # a tokenizers.Tokenizer's pipeline (tiny models)
_.pre_tokenizer
_.decoder
_.post_processor

# Fields of records written out whole (dataclasses.asdict, pydantic dumps, JSON, CSV, HTML):
# the file is the reader.
_.schema_version
_.example_model  # analysis/compile_health
_.example_frame
_.example_code
_.phase_s  # analysis/compile_health: CompileIdRow, read by compile_list and the page
_.graph_ops
_.shape_env_guards
_.function
_.fail_frame
_.graph_op_count
_.guards_added
_.dynamo_before_restart_s
_.metrics_entries
_.start_line  # analysis/records
_.end_line
_.basis
_.latency_us  # costmodel/devicespec: the models' fields, dumped and read by devices._table
_.bandwidth_gbs
_.memory_bandwidth_tbs
_.vector_tflops
_.fail_payload_md5  # analysis/structured_logs: the parse stats tlparse also counts
_.fail_key_conflict
_.fail_str
_.fail_too_large
_.other_rank
_.compile_key
_.call_stack  # analysis/timeline: the InferScope model and its results
_.replays
_.unmatched
_.by_alignment  # GraphJoin: read from ops.json (vars of the join)
_.idle_us
_.non_compute_us
_.sum_us
_.mean_us
_.std_us
_.pct_of_type
_.mean_step_us
_.gpu_busy_pct
_.gpu_idle_pct
# analysis/timeline multi-rank figures: fields written by asdict into summary.json / report.json
_.communication_us
_.overlap_us
_.comm_comp_overlap_pct
_.collective_calls
_.matched_calls
_.collective_us
_.wait_us
_.wait_pct
_.waited_on_us
_.value_us
_.matched_collectives
_.unmatched_calls
_.collective_waits  # kerneltracer.api.TimelineResult: read by users
_.step_stragglers
_.communication_pct
_.ratio
_.total_cpu_time_us
_.total_h2d_us
_.total_d2h_us
_.total_idle_us
_.framework_overhead_us
_.kernel_count
_.h2d_count
_.d2h_count
_.analysis_version
_.timestamp_start_us
_.timestamp_end_us
_.timestamp_us
_.wall_clock_start
_.wall_clock_end
_.parent_id
_.child_ids
_.event_range
_.timestamp_created
_.duration_ms
_.cuda_version
_.python_version
_.torch_version
_.gpu_model
_.hostname
_.world_size
_.cpu_model
_.numa_nodes
_.ram_gb
_.format_version
_.trace_metadata
_.system_info
_.reason_before  # coverage/diff_schema.py
_.calls_before
_.calls_after
_.signatures_before
_.signatures_after
_.self_time_us_before
_.self_time_us_after
_.gpu_time
_.mean_ms  # fx: optimiser report
_.min_ms
_.max_ms
_.compute_before
_.compute_after
_.op_counts
_.max_abs_diff
_.error_location  # report: view models the templates render
_.error_phase
_.extras
_.top_kind
_.top_note
_.time_kind
_.time_chart
_.count_chart
_.timeline
_.timeline_shown
_.timeline_of
_.ready_chart
_.missing_chart
_.duration
_.files_href
_.report_href
_.worst_rank
_.submitted_at  # slurm submission record
_.processes  # process.supervisor.TreeSample: the tree's size beside its RSS (nothing reads it yet)

# Plug-in self-descriptions (analyses, record reporters, render modules): the docs of each
# plug-in, kept beside its name; no command lists them yet.
_.description

# Public API of the analysis libraries (seed contracts and their tests), not called by the CLI.
_.TraceIndex  # timeline: "index by type, time range and scope" (seed 004)
_.of_type
_.between
_.in_scope
_.roots
_.to_inferscope  # timeline: convert / parse / validate the InferScope model as a library
_.parse_inferscope
_.validate
_.optimize_for_memory  # fx: GraphOptimizer's seed-003 interface
_.optimize_for_speed
_.verify_correctness
_.pure  # fx.purity.Classification
_.ridge  # costmodel.roofline.Roofline
_.flops_per_s
_.bytes_per_s
_.with_tracers  # tracers registry: how a plug-in tracer is added
_.format_log  # corpus: writes operator_inp logs (the parser's inverse)
_.load_schema  # structured_logs: the intermediate files' JSON Schemas
_.schema_for
_.fingerprint  # analysis/records: digest showing readers leave ProfilingData unchanged
_.kernel_sequences  # timeline: per-op kernel sequences, HTA's view (parity-tested)
_.launched_before_last_step
_.mean_runtime_delay_us
_.last_record_line  # structured_logs: manifest "tail" fields, written via asdict()
_.line_ended
_.last_line_cut

# Run-dir paths about to move into core/'s typed paths with the rest of the layout names.
_.status_path
_.analysis_dir
_.JOB_TMP_DIR

# The Python API (kerneltracer.api): read by users' notebooks, never called by the package.
_.__dir__  # kerneltracer/__init__: dir() lists the lazily exported API names
_.out_dirs
_.parse_failures

# The parallel records (core.parallel): what the worker's rank simulation writes with them
# (to_json_line) and asks of a layout; and fields only the per-rank page's template reads.
_.is_parallel
_.to_json_line
_.why_unknown  # costmodel.comm.CommCost: shown in the ranks page's collectives table
_.ops_left_out  # report.ranks_view.JobRanks
_.missing_files
# worker.parallel.simulate: what transformers reads of the objects it is handed (its FSDP's
# mesh manager, its DistributedConfig set after validation, the config's distributed_config).
_.get_mesh
_.ep_size
_.enable_expert_parallel
_.fsdp_size
_.distributed_config
_.auto_reload  # analysis/structured_logs/rendering/html.py: read by jinja2
_.head_dim  # worker/frameworks/huggingface/tiny.py: read by transformers' Qwen3-MoE attention
