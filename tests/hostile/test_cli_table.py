"""The tested property: no hostile input makes any command print ``internal error``.

One row per (command, hostile input): the exit code and the one line it must print. The
inputs are what an adversarial new user tried (issue 29): missing paths, folders, FIFOs and
devices where files are expected, empty, binary and sparse files, truncated gzips, foreign
folders where run dirs are expected, damaged run dirs, and configs that break each rule.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltracer.analysis.structured_logs.records import MAX_LINE_BYTES
from tests.conftest import REPO_ROOT
from tests.helpers import KT
from tests.report.runs import make_run, status
from tests.timeline.traces import kernel, write_trace, x

KEY = "tiny/torch_dispatch"
GLOG = b"V1206 15:18:20.254000 1500233 torch/_dynamo/convert_frame.py:961] "
NOT_REGULAR = r"is not a regular file \(a device, FIFO or socket\)"
NOT_RUN_DIR = r"is not a (kerneltracer )?run dir"

# id: (arguments, exit code, regex the last stderr line must match). {t} is the test's dir.
TABLE: dict[str, tuple[str, int, str]] = {
    # timeline: trace files
    "timeline-missing": (
        "timeline {t}/nope.json -o {t}/o",
        2,
        r"trace file .*nope.json does not exist",
    ),
    "timeline-folder": ("timeline {t}/folder -o {t}/o", 2, r"folder: no chrome trace under it"),
    "timeline-fifo": ("timeline {t}/fifo -o {t}/o", 2, NOT_REGULAR),
    "timeline-device": ("timeline /dev/zero -o {t}/o", 2, NOT_REGULAR),
    "timeline-empty": ("timeline {t}/empty -o {t}/o", 1, r"empty, not a JSON document"),
    "timeline-binary": ("timeline {t}/binary -o {t}/o", 1, r"not a JSON document \(starts with"),
    "timeline-sparse": (
        "timeline {t}/sparse -o {t}/o",
        1,
        r"not a JSON document \(starts with b'\\x00",
    ),
    "timeline-truncated-gzip": (
        "timeline {t}/cut.json.gz -o {t}/o",
        1,
        r"cut.json.gz: truncated gzip file \(it ends before its compressed stream does",
    ),
    # issue 38: its last bytes read as a trailer declaring more than the 2 GiB limit
    "timeline-truncated-gzip-huge-tail": (
        "timeline {t}/cut-tail.json.gz -o {t}/o",
        1,
        r"cut-tail.json.gz: truncated gzip file",
    ),
    "timeline-capture-truncated-gzip": (
        "timeline {t}/trace.json --capture-trace {t}/cut-tail.json.gz -o {t}/o",
        1,
        r"cut-tail.json.gz: truncated gzip file",
    ),
    "timeline-corrupt-gzip": ("timeline {t}/crc.json.gz -o {t}/o", 1, r"corrupt gzip data \(CRC"),
    # attribution: launches sharing correlation ids (linked by time: test_attribution.py)
    "timeline-repeated-correlation-ids": (
        "timeline {t}/trace.json -o {t}/o",
        0,
        r"^wrote \d+ files",
    ),
    "timeline-absurd-times": (
        "timeline {t}/absurd.json -o {t}/o",
        0,
        r"^wrote \d+ files",
    ),
    "timeline-no-events": ("timeline {t}/noevents.json -o {t}/o", 1, r"no traceEvents array"),
    "timeline-bad-limit": (
        "timeline {t}/empty -o {t}/o --max-input-size lots",
        2,
        r"is not a size",
    ),
    # logs and records: text logs
    "logs-fifo": ("logs {t}/fifo -o {t}/o", 2, NOT_REGULAR),
    "logs-device": ("logs /dev/zero -o {t}/o", 2, NOT_REGULAR),
    "logs-sparse": (
        "logs {t}/sparse -o {t}/o",
        1,
        r"binary data with no line break, not a TORCH_TRACE log",
    ),
    "logs-binary": ("logs {t}/binary -o {t}/o", 1, r"binary data with no line break"),
    "logs-empty": ("logs {t}/empty -o {t}/o", 1, r"no TORCH_TRACE records \(0 lines read"),
    "logs-long-line": ("logs {t}/long.log -o {t}/o", 1, r"line 1 is longer than 64 MiB"),
    # compile-health: logs that cannot be trusted are states, then exit 1 naming them
    **{
        f"compile-health-{case}": (
            f"compile-health {path} -o {{t}}/health-{case}",
            1,
            rf"1 of 1 compile log\(s\) cannot be trusted: .*{name}: {state} \(.*{why}",
        )
        for case, path, name, state, why in (
            ("binary", "{t}/binary", "binary", "unusable", "binary data with no line break"),
            ("sparse", "{t}/sparse", "sparse", "unusable", "binary data with no line break"),
            ("fifo", "{t}/fifo", "fifo", "unusable", NOT_REGULAR),
            ("device", "/dev/zero", "zero", "unusable", NOT_REGULAR),
            ("long-line", "{t}/long.log", "long.log", "unusable", "longer than 64 MiB"),
            ("truncated", "{t}/cut.log", "cut.log", "truncated", r"\[0/0\] started and never"),
        )
    },
    "compile-health-logs-without-out": (
        "compile-health {t}/cut.log",
        2,
        r"compile-health on logs needs --out DIR",
    ),
    # device files (--devices): strict, finite, plausible numbers, refused before any work
    "timeline-devices-subnormal": (
        "timeline {t}/noevents.json -o {t}/o --devices {t}/subnormal.yaml",
        2,
        r"memory_bandwidth_tbs: 1e-310 is out of range \(valid: a number from 0.001 to 10000",
    ),
    "corpus-devices-inf": (
        "corpus {t}/damaged --devices {t}/inf.yaml",
        2,
        r"peak_tflops.fp32: inf is out of range \(valid: a number from 0.001 to 1e\+06 TFLOP/s",
    ),
    "coverage-devices-bool": (
        "coverage {t}/damaged --devices {t}/bool.yaml",
        2,
        r"memory_bandwidth_tbs: true is not a number",
    ),
    "corpus-devices-fifo": ("corpus {t}/damaged --devices {t}/fifo.yaml", 2, NOT_REGULAR),
    "corpus-devices-binary": (
        "corpus {t}/damaged --devices {t}/binary",
        2,
        r"binary:1: not UTF-8 text",
    ),
    "records-missing": ("records {t}/nope -o {t}/o", 2, r"record log .*nope does not exist"),
    "records-folder": ("records {t}/folder -o {t}/o", 2, r"record log .*folder is a directory"),
    "records-fifo": ("records {t}/fifo -o {t}/o", 2, NOT_REGULAR),
    "records-sparse": (
        "records {t}/sparse -o {t}/o",
        1,
        r"binary data with no line break, not a record log",
    ),
    "records-empty": (
        "records {t}/empty -o {t}/o",
        1,
        r"no Start/End records found \(0 lines read\)",
    ),
    # run-dir commands
    **{
        f"{cmd}-{case}": (f"{cmd} {{t}}/{case}", 1, rx)
        for cmd in ("status", "report", "analyze", "coverage", "corpus")
        for case, rx in (
            ("nope", r"run dir .*nope does not exist"),
            ("folder", NOT_RUN_DIR),
            ("foreign", NOT_RUN_DIR),
        )
    },
    "status-proc-self": ("status /proc/self", 1, NOT_RUN_DIR),
    "analyze-proc-self": ("analyze /proc/self", 1, NOT_RUN_DIR),
    "status-damaged-run": ("status {t}/damaged", 0, r"1 jobs: 1 unreadable"),
    "diff-foreign": ("diff {t}/damaged {t}/foreign", 1, NOT_RUN_DIR),
    # replay and readiness inputs
    "replay-empty-log": (
        "replay {t}/empty.txt -o {t}/o",
        1,
        r"no op signature in it, nothing to replay",
    ),
    "replay-binary-parquet": (
        "replay {t}/binary.parquet -o {t}/o",
        2,
        r"not a readable Parquet file",
    ),
    "replay-fifo": ("replay {t}/fifo -o {t}/o", 1, NOT_REGULAR),
    "replay-device": ("replay /dev/zero -o {t}/o", 1, NOT_REGULAR),
    "readiness-support-fifo": ("readiness {t}/damaged --support {t}/fifo.yaml", 2, NOT_REGULAR),
    "readiness-support-utf8": (
        "readiness {t}/damaged --support {t}/bad.yaml",
        2,
        r"bad.yaml:2: not UTF-8 text",
    ),
    "readiness-support-sparse": (
        "readiness {t}/damaged --support {t}/sparse.csv",
        2,
        r"too large for a support list",
    ),
    "readiness-support-csv-field": (
        "readiness {t}/damaged --support {t}/wide.csv",
        2,
        r"not valid CSV \(field larger",
    ),
    # configs
    **{
        f"{cmd}-config-{case}": (f"{cmd} {{t}}/{case}", 2, rx)
        for cmd in ("config validate", "run", "download", "slurm submit --dry-run")
        for case, rx in (
            ("nope.yaml", r"config file not found"),
            ("fifo", NOT_REGULAR),
            ("binary", r"binary:1: not UTF-8 text \(byte 0xff at column 1\)"),
            ("sparse", r"too large for a config file"),
            ("dup.yaml", r"dup.yaml:3: duplicate key 'models' \(first at line 1"),
            ("longname.yaml", r"longname.yaml:3: models\[0\].name: String should have at most 128"),
            (
                "devnull.yaml",
                r"devnull.yaml:1: output_dir: run dir /dev/null: it exists and is not",
            ),
        )
    },
    "run-into-foreign-dir": (
        "run {t}/ok.yaml --output-dir {t}/foreign",
        2,
        r"non-empty directory that is not a kerneltracer run dir",
    ),
    # Only validated, never run: a regression must not be able to write into "/".
    "config-output-dir-root": (
        "config validate {t}/root.yaml",
        2,
        r"output_dir: run dir /: it is a non-empty directory",
    ),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("hostile")
    os.mkfifo(t / "fifo")
    os.mkfifo(t / "fifo.yaml")
    (t / "empty").write_bytes(b"")
    (t / "empty.txt").write_bytes(b"")
    (t / "binary").write_bytes(b"\xff\xfe\x00\x01garbage\x00")
    (t / "binary.parquet").write_bytes(b"\xff\xfe\x00\x01garbage\x00")
    for name in ("sparse", "sparse.csv"):
        with open(t / name, "wb") as fh:
            fh.truncate(1 << 30)
    data = gzip.compress(b'{"traceEvents": [' + b'{"ph": "X"}, ' * 5000 + b"]}")
    (t / "cut.json.gz").write_bytes(data[: len(data) // 2])
    (t / "crc.json.gz").write_bytes(data[:-8] + bytes(4) + data[-4:])
    body = b"".join(b'{"ph": "X", "ts": %d, "name": "k%d"},' % (i * 7919, i) for i in range(9000))
    data = gzip.compress(b'{"traceEvents": [' + body + b"{}]}")
    end = next(e for e in range(len(data) // 2, len(data)) if data[e - 1] > 0x80)
    (t / "cut-tail.json.gz").write_bytes(data[:end])
    events = [x("aten::mm", "cpu_op", 0, 10), x("cudaLaunchKernel", "cuda_runtime", 2, 1)]
    events += [x("aten::add", "cpu_op", 20, 10), x("cudaLaunchKernel", "cuda_runtime", 22, 1)]
    for e in events[1::2]:
        e["args"] = {"correlation": 5}
    events += [kernel("k1", 30, 5, corr=5), kernel("k2", 40, 5, corr=5)]
    write_trace(t / "trace.json", events)
    absurd = [*events, x("aten::a", "cpu_op", 1e300, 1), x("aten::b", "cpu_op", 1, 1e308)]
    write_trace(t / "absurd.json", absurd)
    (t / "noevents.json").write_text('{"schemaVersion": 1}')
    (t / "bad.yaml").write_bytes(b"ops:\n  - aten.add\xff\n")
    (t / "wide.csv").write_text("op\n" + "a" * 200_000 + "\n")
    with open(t / "long.log", "wb") as fh:  # one line just over the limit, then more
        fh.write(b"V" * (MAX_LINE_BYTES + 1) + b"\n")
    start = b'{"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}'
    (t / "cut.log").write_bytes(GLOG + start + b"\n")  # a compile that never ends
    (t / "subnormal.yaml").write_text("devices:\n  H100: {memory_bandwidth_tbs: 1.0e-310}\n")
    (t / "inf.yaml").write_text("devices:\n  H100: {peak_tflops: {fp32: .inf}}\n")
    (t / "bool.yaml").write_text("devices:\n  H100: {memory_bandwidth_tbs: true}\n")
    (t / "folder").mkdir()
    (t / "foreign").mkdir()
    (t / "foreign" / "notes.txt").write_text("not a run")
    damaged = make_run(t / "damaged", {KEY: status(KEY, "tiny")})
    (damaged / "jobs" / KEY / "_TRACE_STATUS.json").write_bytes(b'{"schema_version": 1, "st')
    (t / "m").mkdir()
    models = "models:\n  - path: m\n"
    (t / "ok.yaml").write_text(models)
    (t / "dup.yaml").write_text(models + models)
    (t / "longname.yaml").write_text(models + "    name: " + "n" * 5000 + "\n")
    (t / "devnull.yaml").write_text("output_dir: /dev/null\n" + models)
    (t / "root.yaml").write_text("output_dir: /\n" + models)
    return t


@pytest.mark.parametrize("case", sorted(TABLE))
def test_hostile_input(hostile: Path, case: str) -> None:
    args, code, pattern = TABLE[case]
    argv = [a.replace("{t}", str(hostile)) for a in args.split()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    done = subprocess.run(
        [*KT, *argv], capture_output=True, text=True, timeout=60, cwd=hostile, env=env
    )
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    stream = done.stdout if code == 0 else done.stderr
    lines = stream.strip().splitlines()
    assert lines, f"nothing printed (exit {done.returncode})"
    assert done.returncode == code, done.stderr
    assert re.search(pattern, lines[-1]), lines[-1]
    if code:
        assert lines[-1].startswith(("error: ", "Error: ")), lines[-1]
