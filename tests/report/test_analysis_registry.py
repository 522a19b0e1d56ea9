"""Every per-job analysis has its adapter in the same place: ``analysis/<name>/job.py``."""

from __future__ import annotations

from pathlib import Path

import kerneltracer.analysis
from kerneltracer.analysis.registry import ANALYSES


def test_each_registered_analysis_is_its_packages_job_module() -> None:
    for name, cls in ANALYSES.items():
        assert cls.name == name
        assert cls.__module__ == f"kerneltracer.analysis.{name}.job", cls


def test_a_job_module_in_an_analysis_package_is_a_registered_adapter() -> None:
    # A job.py that is no adapter (compile health's per-job rows were one) misleads.
    root = Path(kerneltracer.analysis.__file__).parent
    assert {p.parent.name for p in root.glob("*/job.py")} == set(ANALYSES)
