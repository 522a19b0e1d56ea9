"""A request checked against a partition before submitting (no cluster: captured sinfo and
scontrol output; tests/slurm/test_real_limits.py runs the real commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kerneltracer.config import SlurmSettings
from kerneltracer.errors import UsageError
from kerneltracer.slurm import submit as sub
from kerneltracer.slurm.fit import fit
from kerneltracer.slurm.partition import (
    Partition,
    build,
    choose,
    gpu_count,
    parse_nodes,
    parse_partitions,
    size_mb,
    time_seconds,
)

SCONTROL = (
    "PartitionName=cpu AllowGroups=ALL Default=YES MaxNodes=UNLIMITED MaxTime=1-00:00:00 "
    "MaxCPUsPerNode=UNLIMITED MaxMemPerNode=UNLIMITED State=UP TotalCPUs=96 TotalNodes=3\n"
    "PartitionName=gpu Default=NO MaxTime=04:00:00 MaxCPUsPerNode=16 MaxMemPerNode=120000 "
    "State=UP TotalNodes=2\n"
    "PartitionName=old Default=NO MaxTime=UNLIMITED State=INACTIVE TotalNodes=1\n"
)
SINFO_CPU = "c1|32|128000|(null)|idle\nc2|32|128000|(null)|mixed\nc3|2|4000|(null)|drained*\n"
SINFO_GPU = "g1|64|256000|gpu:a100:4(S:0-1)|idle\ng2|8|64000|gpu:2,gpu:v100:2|down*\n"


def _part(name: str, sinfo: str) -> Partition:
    return build(parse_partitions(SCONTROL)[name], parse_nodes(sinfo))


def _settings(**fields: Any) -> SlurmSettings:
    return SlurmSettings.model_validate(fields)


def test_parsers_read_captured_output() -> None:
    cpu, gpu = _part("cpu", SINFO_CPU), _part("gpu", SINFO_GPU)
    assert (cpu.max_time_s, cpu.max_cpus_per_node, cpu.max_mem_per_node_mb) == (86400, None, None)
    assert (gpu.max_time_s, gpu.max_cpus_per_node, gpu.max_mem_per_node_mb) == (14400, 16, 120000)
    assert [(n.name, n.cpus, n.mem_mb, n.gpus, n.available) for n in gpu.nodes] == [
        ("g1", 64, 256000, 4, True),
        ("g2", 8, 64000, 4, False),
    ]
    assert [n.available for n in cpu.nodes] == [True, True, False]
    assert gpu_count("(null)") == 0 and gpu_count("gpu:a100:2(S:0-1),mps:100") == 2
    assert [time_seconds(t) for t in ("45", "10:30", "1:00:00", "1-2", "1-2:30", "2-00:00:05")] == [
        2700, 630, 3600, 93600, 95400, 172805,
    ]  # fmt: skip
    assert time_seconds("UNLIMITED") is None and time_seconds("infinite") is None
    assert [size_mb(s) for s in ("500", "500M", "64G", "1T", "2048K")] == [
        500, 500, 65536, 1048576, 2,
    ]  # fmt: skip


def test_default_partition_and_unknown_names() -> None:
    parts = parse_partitions(SCONTROL)
    assert choose(parts, None)["PartitionName"] == "cpu"
    with pytest.raises(UsageError, match=r"'nope': no such partition; choose from cpu, gpu, old"):
        choose(parts, "nope")
    no_default = {k: {**v, "Default": "NO"} for k, v in parts.items()}
    with pytest.raises(UsageError, match=r"no default partition: set slurm\.partition"):
        choose(no_default, None)


@pytest.mark.parametrize(
    ("partition", "fields", "message"),
    [
        ("cpu", {"cpus_per_task": 48}, "slurm.cpus_per_task 48: partition cpu offers at most 32 "
         "CPUs per node"),
        # MaxCPUsPerNode caps what the 64-CPU node can give one task.
        ("gpu", {"cpus_per_task": 32}, "slurm.cpus_per_task 32: partition gpu offers at most 16"),
        ("cpu", {"mem": "200G"}, "slurm.mem 200G: partition cpu offers at most 128000M"),
        ("gpu", {"mem": "200G"}, "slurm.mem 200G: partition gpu offers at most 120000M"),
        ("cpu", {"gpus": 1}, "slurm.gpus 1: partition cpu offers no GPUs"),
        ("gpu", {"gpus": 8}, "slurm.gpus 8: partition gpu offers at most 4 GPU"),
        ("cpu", {"mem": "lots"}, "slurm.mem 'lots': expected a size"),
        ("cpu", {"time": "2-00:00:00"}, "slurm.time 2-00:00:00: partition cpu's MaxTime is "
         "1-00:00:00"),
    ],
)  # fmt: skip
def test_requests_no_node_can_run_are_refused_in_one_line(
    partition: str, fields: dict[str, Any], message: str
) -> None:
    part = _part(partition, SINFO_CPU if partition == "cpu" else SINFO_GPU)
    task_time = fields.get("time", "0-01:00:00")
    with pytest.raises(UsageError) as info:
        fit(_settings(**fields), part, task_time, "0-00:30:00")
    text = str(info.value)
    assert "\n" not in text and text.startswith(message), text


def test_request_split_across_nodes_is_refused() -> None:
    """Each value fits some node, but no node has them all."""
    mixed = build(
        parse_partitions(SCONTROL)["cpu"],
        parse_nodes("big|32|500000|(null)|idle\nsmall|4|16000|gpu:1|idle\n"),
    )
    assert fit(_settings(gpus=1, mem="15G"), mixed, "1:00:00", "30").settings.cpus_per_task == 4
    assert fit(_settings(mem="100G"), mixed, "1:00:00", "30").settings.cpus_per_task == 4
    with pytest.raises(UsageError) as info:
        fit(_settings(gpus=1, mem="100G"), mixed, "1:00:00", "30")
    assert str(info.value) == (
        "slurm: no node of partition cpu offers 4 CPUs, 100G, 1 GPU(s) together (nodes offer: "
        "32 CPUs, 500000M (488.3G), 0 GPU(s); 4 CPUs, 16000M (15.6G), 1 GPU(s))"
    )


def test_closed_or_empty_partitions_are_refused() -> None:
    with pytest.raises(UsageError, match="partition old is INACTIVE: it accepts no new jobs"):
        fit(_settings(), _part("old", SINFO_CPU), "1:00:00", "30")
    with pytest.raises(UsageError, match="partition cpu has no nodes"):
        fit(_settings(), _part("cpu", ""), "1:00:00", "30")


def test_unset_values_are_fitted_and_said() -> None:
    small = build(parse_partitions(SCONTROL)["cpu"], parse_nodes("n1|2|4000|(null)|idle\n"))
    fitted = fit(_settings(), small, "0-00:21:00", "0-01:05:00")
    assert fitted.settings.cpus_per_task == 2
    assert fitted.notes == [
        "slurm.cpus_per_task not set: using 2 (the default 4 is more than partition cpu's "
        "largest node has)"
    ]
    # The default fits a large node: kept, nothing to say.
    fitted = fit(_settings(), _part("cpu", SINFO_CPU), "0-00:21:00", "30")
    assert (fitted.settings.cpus_per_task, fitted.notes) == (4, [])
    # Derived time limits longer than MaxTime are capped, with a note each.
    fitted = fit(_settings(), _part("gpu", SINFO_GPU), "0-09:00:00", "0-05:00:00")
    assert (fitted.task_time, fitted.download_time) == ("0-04:00:00", "0-04:00:00")
    assert len(fitted.notes) == 2
    assert "capped to partition gpu's MaxTime 0-04:00:00" in fitted.notes[0]
    # An explicit value the partition can give is never changed.
    explicit = _settings(cpus_per_task=3, time="2:00:00")
    fitted = fit(explicit, _part("gpu", SINFO_GPU), "2:00:00", "30")
    assert (fitted.settings.cpus_per_task, fitted.task_time, fitted.notes) == (3, "2:00:00", [])


def test_only_unavailable_nodes_fit_is_a_note() -> None:
    fitted = fit(_settings(cpus_per_task=2, mem="3G"), _part("cpu", SINFO_CPU), "1:00", "30")
    assert fitted.notes == []
    part = _part("gpu", SINFO_GPU)
    fitted = fit(_settings(cpus_per_task=8, gpus=4, mem="60G"), part, "1:00:00", "30")
    assert fitted.notes == []  # g1 is up and fits
    down_only = build(parse_partitions(SCONTROL)["gpu"], (part.nodes[1],))
    fitted = fit(_settings(cpus_per_task=8, gpus=4), down_only, "1:00:00", "30")
    assert fitted.notes and "unavailable (down, drained or reserved)" in fitted.notes[0]


def test_prepare_writes_the_fitted_request(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"models": [{"id": "a/b"}], "output_dir": "run"}))
    tiny = build(parse_partitions(SCONTROL)["gpu"], parse_nodes("t|1|900|(null)|idle\n"))
    asked: list[str | None] = []

    def lookup(name: str | None) -> Partition:
        asked.append(name)
        return tiny

    prepared = sub.prepare(config, partition="gpu", lookup=lookup)
    assert asked == ["gpu"]
    assert "#SBATCH --cpus-per-task=1\n" in prepared.array_script
    assert prepared.partition_option == "gpu" and len(prepared.notes) == 1
    config.write_text(yaml.safe_dump({"models": [{"id": "a/b"}], "slurm": {"cpus_per_task": 2}}))
    with pytest.raises(UsageError, match=r"slurm\.cpus_per_task 2: partition gpu offers at most 1"):
        sub.prepare(config, lookup=lookup)
