"""One way to try a model's tokenizer (worker.frameworks.tokenizer), for every framework."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from kerneltracer.worker.frameworks.huggingface.zoo_tokenizers import xlm
from kerneltracer.worker.frameworks.tokenizer import load_tokenizer

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltracer"


def test_a_tokenizer_that_loads(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]").save_pretrained(tmp_path)
    got = load_tokenizer(tmp_path, trust_remote_code=False)
    assert got.tokenizer is not None and (got.problem, got.missing) == (None, None)


def test_no_tokenizer_files_is_a_problem_in_one_line_and_no_missing_package(
    tmp_path: Path,
) -> None:
    got = load_tokenizer(tmp_path, trust_remote_code=False)
    assert got.tokenizer is None and got.missing is None
    assert got.problem and "\n" not in got.problem and len(got.problem) <= 200


@pytest.mark.skipif(
    importlib.util.find_spec("sacremoses") is not None, reason="XLM's package is installed"
)
def test_files_that_need_a_missing_package_name_it(tmp_path: Path) -> None:
    xlm(tmp_path)
    got = load_tokenizer(tmp_path, trust_remote_code=False)
    assert got.tokenizer is None and got.missing is not None
    assert got.missing.package == "sacremoses" and got.problem


def test_only_the_helper_calls_autotokenizer() -> None:
    """The HF loader and the vLLM engine both go through load_tokenizer."""

    def calls_it(tree: ast.AST) -> bool:
        return any(
            isinstance(node, ast.Attribute)
            and node.attr == "from_pretrained"
            and getattr(node.value, "attr", getattr(node.value, "id", None)) == "AutoTokenizer"
            for node in ast.walk(tree)
        )

    callers = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if calls_it(ast.parse(p.read_text()))
    ]
    assert callers == ["worker/frameworks/tokenizer.py"]
