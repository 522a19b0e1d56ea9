"""Torch-free unit tests of the purity rules and the CSE planner on hand-written tables."""

from __future__ import annotations

from typing import Any

import pytest

from kerneltracer.errors import UsageError
from kerneltracer.fx.cse import plan_cse
from kerneltracer.fx.nodetable import read_node_table
from kerneltracer.fx.purity import Effect, ModuleInfo, classify


def ref(name: str) -> dict[str, str]:
    return {"node": name}


def node(name: str, op: str, target: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "op": op,
        "target": target,
        "args": list(args),
        "kwargs": kwargs,
    }
    return row


def fn(name: str, target: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return node(name, "call_function", target, *args, **kwargs)


def dups(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    _, nodes = read_node_table({"nodes": rows})
    return [(d.node, d.same_as) for d in plan_cse(nodes)]


X = node("x", "placeholder", "x")
Y = node("y", "placeholder", "y")


@pytest.mark.parametrize(("op", "target", "args", "kwargs", "effect"), [
    ("call_function", "torch.nn.functional.relu", (), {}, Effect.PURE),
    ("call_function", "torch.nn.functional.relu", (), {"inplace": True}, Effect.MUTATING),
    ("call_function", "torch.ops.aten.add.Tensor", (), {}, Effect.PURE),
    ("call_function", "torch.ops.aten.add_.Tensor", (), {}, Effect.MUTATING),
    ("call_function", "torch.ops.aten.mul.out", (), {"out": 1}, Effect.MUTATING),
    ("call_function", "torch.nn.functional.dropout", (), {}, Effect.RANDOM),
    ("call_function", "torch.ops.aten.native_dropout.default", (), {}, Effect.RANDOM),
    ("call_function", "torch.rand_like", (), {}, Effect.RANDOM),
    ("call_function", "torch.ops.aten.randn.default", (), {}, Effect.RANDOM),
    ("call_function", "torch.ops.aten.empty.memory_format", (), {}, Effect.STATEFUL),
    ("call_function", "torch.ops.aten._native_batch_norm_legit.default",
     (0, 1, 2, 3, 4, True, 0.1, 1e-5), {}, Effect.STATEFUL),
    ("call_function", "torch.ops.aten._native_batch_norm_legit_no_training.default",
     (), {}, Effect.PURE),
    ("call_function", "torch.nn.functional.batch_norm", (), {"training": False}, Effect.PURE),
    ("call_function", "torch.nn.functional.batch_norm", (), {"training": True},
     Effect.STATEFUL),
    ("call_function", "torch._C._set_grad_enabled", (), {}, Effect.STATEFUL),
    ("call_function", "torch.ops.mylib.custom.default", (), {}, Effect.STATEFUL),
    ("call_function", "my_module.helper", (), {}, Effect.STATEFUL),
    ("call_function", "_operator.add", (), {}, Effect.PURE),
    ("call_function", "_operator.iadd", (), {}, Effect.MUTATING),
    ("call_function", "_operator.setitem", (), {}, Effect.MUTATING),
    ("call_function", "torch.ops.aten._assert_tensor_metadata.default", (), {}, Effect.CHECK),
    ("call_function", "torch.nn.functional.scaled_dot_product_attention", (),
     {"dropout_p": 0.1}, Effect.RANDOM),
    ("call_function", "torch.nn.functional.scaled_dot_product_attention", (), {},
     Effect.PURE),
    ("call_method", "add_", (), {}, Effect.MUTATING),
    ("call_method", "__iadd__", (), {}, Effect.MUTATING),
    ("call_method", "view", (), {}, Effect.PURE),
    ("call_method", "uniform_", (), {}, Effect.MUTATING),
    ("call_method", "bernoulli", (), {}, Effect.RANDOM),
])  # fmt: skip
def test_classify_functions(
    op: str, target: str, args: tuple[Any, ...], kwargs: dict[str, Any], effect: Effect
) -> None:
    assert classify(op, target, args, kwargs).effect is effect


@pytest.mark.parametrize(("module", "effect"), [
    (ModuleInfo("torch.nn.modules.linear.Linear"), Effect.PURE),
    (ModuleInfo("torch.nn.modules.batchnorm.BatchNorm2d", training=True,
                tracks_running_stats=True), Effect.STATEFUL),
    (ModuleInfo("torch.nn.modules.batchnorm.BatchNorm2d", training=False,
                tracks_running_stats=True), Effect.PURE),
    (ModuleInfo("torch.nn.modules.dropout.Dropout", training=True), Effect.RANDOM),
    (ModuleInfo("torch.nn.modules.dropout.Dropout", training=False), Effect.PURE),
    (ModuleInfo("torch.nn.modules.activation.ReLU", inplace=True), Effect.MUTATING),
    (ModuleInfo("mypkg.Linear"), Effect.STATEFUL),
    (None, Effect.STATEFUL),
])  # fmt: skip
def test_classify_modules(module: ModuleInfo | None, effect: Effect) -> None:
    assert classify("call_module", "m", (), {}, module).effect is effect


def test_duplicates_chain_through_replaced_nodes() -> None:
    rows = [
        X,
        fn("a", "torch.relu", ref("x")),
        fn("b", "torch.relu", ref("x")),
        fn("c", "_operator.mul", ref("a"), 2),
        fn("d", "_operator.mul", ref("b"), 2),
        fn("e", "_operator.mul", ref("b"), 2.0),  # float scalar: not the same op as int
        node("output", "output", "output", [ref("c"), ref("d"), ref("e")]),
    ]
    assert dups(rows) == [("b", "a"), ("d", "c")]


def test_kwargs_order_does_not_matter_but_values_do() -> None:
    rows = [
        X,
        fn("a", "torch.sum", ref("x"), dim=1, keepdim=True),
        fn("b", "torch.sum", ref("x"), keepdim=True, dim=1),
        fn("c", "torch.sum", ref("x"), dim=0, keepdim=True),
    ]
    assert dups(rows) == [("b", "a")]


def test_inplace_write_separates_versions() -> None:
    rows = [
        X,
        fn("r1", "torch.relu", ref("x")),
        node("w", "call_method", "add_", ref("x"), 1),
        fn("r2", "torch.relu", ref("x")),
        fn("r3", "torch.relu", ref("x")),
    ]
    assert dups(rows) == [("r3", "r2")]


def test_write_through_a_view_separates_the_base() -> None:
    rows = [
        X,
        fn("r1", "torch.relu", ref("x")),
        node("v", "call_method", "view", ref("x"), -1),
        node("w", "call_method", "mul_", ref("v"), 2),
        fn("r2", "torch.relu", ref("x")),
    ]
    assert dups(rows) == []


def test_a_value_that_is_written_later_is_never_merged() -> None:
    rows = [
        X,
        fn("a", "torch.relu", ref("x")),
        fn("b", "torch.relu", ref("x")),
        node("w", "call_method", "add_", ref("a"), 1),
    ]
    assert dups(rows) == []


def test_unknown_side_effect_is_a_barrier() -> None:
    rows = [
        X,
        fn("a", "torch.relu", ref("x")),
        fn("p", "builtins.print", ref("a")),
        fn("b", "torch.relu", ref("x")),
    ]
    assert dups(rows) == []


def test_random_and_stateful_ops_are_never_merged() -> None:
    rows = [
        X,
        fn("d1", "torch.nn.functional.dropout", ref("x"), 0.5),
        fn("d2", "torch.nn.functional.dropout", ref("x"), 0.5),
        fn(
            "n1",
            "torch.ops.aten.native_batch_norm.default",
            ref("x"),
            None,
            None,
            None,
            None,
            True,
            0.1,
            1e-5,
        ),
        fn(
            "n2",
            "torch.ops.aten.native_batch_norm.default",
            ref("x"),
            None,
            None,
            None,
            None,
            True,
            0.1,
            1e-5,
        ),
    ]
    assert dups(rows) == []


def test_get_attr_duplicates_merge() -> None:
    rows = [
        node("w1", "get_attr", "fc.weight"),
        node("w2", "get_attr", "fc.weight"),
        X,
        fn("a", "torch.mm", ref("x"), ref("w1")),
        fn("b", "torch.mm", ref("x"), ref("w2")),
    ]
    assert dups(rows) == [("w2", "w1"), ("b", "a")]


def test_call_module_needs_a_known_pure_type() -> None:
    lin = {"type": "torch.nn.modules.linear.Linear"}
    rows = [
        X,
        {**node("a", "call_module", "fc", ref("x")), "module": lin},
        {**node("b", "call_module", "fc", ref("x")), "module": lin},
        node("c", "call_module", "custom", ref("x")),
        node("d", "call_module", "custom", ref("x")),
    ]
    assert dups(rows) == [("b", "a")]


@pytest.mark.parametrize(("table", "message"), [
    ({"nodes": "nope"}, "expected a list of nodes"),
    ([{"name": "a", "op": "call_function"}], "'name' and 'target' must be strings"),
    ([{"name": "a", "op": "jump", "target": "t"}], "unknown op 'jump'; valid: call_function"),
    ([fn("a", "torch.relu", ref("x"))], "uses 'x' before it is defined"),
    ([X, X], "appears twice"),
])  # fmt: skip
def test_malformed_tables_are_rejected(table: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        read_node_table(table, "t.json")
