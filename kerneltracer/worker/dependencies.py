"""Recognise an optional package that is missing from the worker's interpreter.

A model can need a package for one part of its work only — a tokenizer (sacremoses), an
object-detection loss (scipy's Hungarian matcher) — so the same model may trace in eval and
not in train. Such an end is the environment's, not the model's: it is reported as a
missing dependency naming the package and the command that installs it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass

from kerneltracer.core.rootcause import Chain, links

# transformers' wording when a backend it needs is absent (requires_backends).
_REQUIRES = re.compile(
    r"requires the (?P<pkg>[A-Za-z0-9_.\-]+) library but it was not found"
    r"|You need to install (?P<need>[A-Za-z0-9_.\-]+) to use"
)
_PIP = re.compile(r"pip install (?P<pkg>[A-Za-z0-9_.\-\[\]]+)")
# Import names whose distribution is named otherwise.
_DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "PIL": "Pillow",
    "cv2": "opencv-python",
    "yaml": "PyYAML",
    "google": "protobuf",
    "Levenshtein": "python-Levenshtein",
}


@dataclass(frozen=True)
class MissingDependency:
    package: str  # what pip installs (several space-separated, when several are missing)
    module: str  # what the code imported (several comma-separated)

    @property
    def install(self) -> str:
        # The worker's own interpreter: vLLM jobs run in another venv than the orchestrator.
        return f"{sys.executable} -m pip install {self.package}"

    def reason(self, context: str) -> str:
        where = f" ({context})" if context else ""
        verb = "are" if ", " in self.module else "is"
        return (
            f"missing dependency: {self.module} {verb} not installed{where}; "
            f"install it with: {self.install}"
        )


def missing_dependency(exc: BaseException) -> MissingDependency | None:
    """The package whose absence raised ``exc`` (or an exception it chains), if any."""
    return next((found for e in links(exc, Chain.ALL) if (found := _of(e)) is not None), None)


def _of(exc: BaseException) -> MissingDependency | None:
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        # A submodule missing from an installed package is that package's bug, not ours.
        if top == "kerneltracer" or importlib.util.find_spec(top) is not None:
            return None
        return MissingDependency(_DISTRIBUTIONS.get(top, top), top)
    if isinstance(exc, ImportError):
        # requires_backends names every backend that is missing, one sentence each (a timm
        # model without pillow and timm): all are named, so one install fixes the job.
        text = str(exc)
        matches = list(_REQUIRES.finditer(text))
        modules, packages = [], []
        for match, after in zip(matches, [*matches[1:], None][: len(matches)], strict=True):
            module = match.group("pkg") or match.group("need")
            pip = _PIP.search(text, match.end(), after.start() if after else len(text))
            package = pip.group("pkg") if pip else _DISTRIBUTIONS.get(module, module)
            if module not in modules:
                modules.append(module)
                packages.append(package)
        if not modules:
            return None
        return MissingDependency(" ".join(packages), ", ".join(modules))
    return None
