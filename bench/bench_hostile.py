"""How fast and how lean `kerneltracer timeline` refuses hostile traces (issue 29).

Inputs, built in a temp dir:

- ``bomb-events``: a gzip of ~11 MB whose events expand to 3 GiB (valid JSON all along:
  its trailer declares more than --max-input-size, so it is decompressed, not parsed, up
  to the limit and refused there);
- ``bomb-zeros``: a gzip of NUL bytes expanding to 3 GiB (refused by its first bytes);
- ``bomb-spaces``: ``{"traceEvents": [`` and 1.5 GiB of spaces, under the size limit
  (refused when 32 MiB of text hold no event end);
- ``sparse``: a 1 GiB sparse file of NUL bytes (refused by its first bytes).

Each runs as its own ``kerneltracer timeline`` process, several times; wall time and peak
RSS (``/usr/bin/time``) are reported as medians. The issue asks for < 2 s and < 200 MB.

    .venv/bin/python bench/bench_hostile.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_BLOCK = 64 << 20


def gzip_of_repeats(path: Path, head: bytes, block: bytes, total: int) -> Path:
    """A gzip of ``head`` then ``block`` repeated up to ``total`` bytes, built without
    compressing every copy: after a full flush the deflate output of an identical block is
    identical, so one compressed block is written again and again; the CRC is computed."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    first = comp.compress(head + block) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    repeats = max(0, (total - len(head)) // len(block) - 1)
    crc = zlib.crc32(head + block)
    for _ in range(repeats):
        crc = zlib.crc32(block, crc)
    size = len(head) + len(block) * (repeats + 1)
    with open(path, "wb") as fh:
        fh.write(header + first)
        for _ in range(repeats):
            fh.write(again)
        fh.write(comp.flush(zlib.Z_FINISH))
        fh.write(crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
    return path


def inputs(workdir: Path) -> dict[str, Path]:
    event = b'{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2},'
    events = event * (_BLOCK // len(event))
    out = {
        "bomb-events": gzip_of_repeats(
            workdir / "events.json.gz", b'{"traceEvents":[', events, 3 << 30
        ),
        "bomb-zeros": gzip_of_repeats(workdir / "zeros.json.gz", b"", bytes(_BLOCK), 3 << 30),
        "bomb-spaces": gzip_of_repeats(
            workdir / "spaces.json.gz", b'{"traceEvents": [', b" " * _BLOCK, 3 << 29
        ),
    }
    sparse = workdir / "sparse.json"
    with open(sparse, "wb") as fh:
        fh.truncate(1 << 30)
    out["sparse"] = sparse
    return out


def measure(trace: Path, out: Path) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit code, last stderr line) of one timeline run."""
    cmd = [
        "/usr/bin/time",
        "-f",
        "KT_BENCH %e %M",
        sys.executable,
        "-m",
        "kerneltracer.cli.main",
        "timeline",
        str(trace),
        "-o",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600)
    lines = done.stderr.strip().splitlines()
    stats = next(line for line in reversed(lines) if line.startswith("KT_BENCH"))
    _, wall, rss_kb = stats.split()
    message = next((line for line in reversed(lines) if line.startswith("error")), "")
    code = int(done.returncode)
    return float(wall), int(rss_kb) / 1024, code, message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="kt-bench-hostile-") as tmp:
        work = Path(tmp)
        for name, path in inputs(work).items():
            runs = [measure(path, work / f"out-{name}") for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs)
            results[name] = {
                "file_mb": round(path.stat().st_size / 2**20, 1),
                "wall_s": wall,
                "peak_rss_mib": round(rss, 1),
                "exit": runs[0][2],
                "message": runs[0][3],
            }
            print(
                f"{name:<12} {results[name]['file_mb']:>8} MiB on disk  "
                f"wall {wall:5.2f} s  peak RSS {rss:6.1f} MiB  exit {runs[0][2]}  {runs[0][3]}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
