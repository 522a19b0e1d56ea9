"""Full-depth graphs of stacks of alike layers, from traces at depths 2 and 3.

Dynamo (and AOTAutograd after it) inline every decoder layer anew, so an 8B's graph costs
32 times one layer's trace. When a stack's layers are built alike (module types,
attributes, parameter shapes, hooks; per-layer config lists uniform), the graph at full
depth is the graph at depth 3 with the last layer's nodes repeated: FX numbers each base
name in the order names are asked for, so every name moves on by a fixed count per layer;
a layer's nodes read the layer before's; the nodes after the stack read the last layer (or
the one before it: LLaVA's image features are the vision tower's ``hidden_states[-2]``);
the output gains one group of values per layer (a cache's keys and values).

A model may have several top-level stacks: an encoder and a decoder (BART, Marian,
Whisper), a vision tower beside the language model (LLaVA). Each is cut through the config
attribute that sizes it, maybe a sub-config's (``vision_config.num_hidden_layers``); when
stacks of one length could each be sized by several, the attribute named like the stack's
path (encoder, decoder, vision, text/language) decides, and without one the model is traced
in full. Stacks too shallow, unlike, or sized by nothing known stay whole in every trace.
Two extended stacks take four traces, each stack at depth 2 or 3; the shallower stack is
extended first, at both depths of the other, then the other on those graphs. Four traces
cost more than one full trace of a 12+12 BART: :meth:`Stacks.plan` counts layers and a
fixed cost per trace, and cuts only stacks that save time. In train mode an
encoder-decoder's decoder backward (self- and cross-attention) is refused: no placement of
its new layer checks out, so print_aten traces BART's and Whisper's every layer (LLaVA's
two stacks extend).

:func:`extend` learns that from the graphs at depths d and d+1: the nodes of layer d must be
layer d-1's, one layer on (same ops, targets, constants, shapes, strides, devices, source
lines, and arguments one layer on; only the numbers in names may differ), and every other
node must be the same at both depths but for the numbers in its name. Anything else raises
:class:`NotRepeating`, and the tracer traces every layer.

A backward runs the layers last to first: its new layer's computation sits after the top
layer's and before its own layer before (a *mirrored* run), reads the layer above where
that one read it, and its copies are made highest layer first. Its inputs (saved values,
parameters, cotangents) still come in layer order. Where the matcher put a run is one guess
among alike layers; whole layers earlier, and mirrored, are tried in turn.

tests/compile/test_layers.py holds the written graphs equal to the full trace's on several
architectures; the 8B's were compared byte for byte (docs/performance.md).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import combinations, islice, product
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import fx, nn

# Layers traced for the small graph; the big one has one more. Layer 0 names its nodes
# without suffixes (``silu`` where later layers have ``silu_1``), so the repeated layer
# must be at least the second.
TRACE_DEPTH = 2
# Below this the two short traces (5 layers) save nothing worth the checks.
MIN_DEPTH = 6
# A Dynamo trace's cost besides its layers, in layers: the masks, embeddings, heads and
# Dynamo's own start. Tiny BART traced 4 layers in 2.3 s, 24 in 6.4 s: ~1.3 s and ~0.2 s
# a layer, so four short traces of two stacks cost about 24 layers more than the one full.
_TRACE_OVERHEAD = 6
_DEPTH_ATTRS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    # Encoder-decoders: BART, Marian, Whisper; T5's decoder beside its num_layers.
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
)
# Words of a module path and of a config attribute that tell two stacks of one length apart.
_ROLES = frozenset({"encoder", "decoder", "vision", "text", "audio", "speech"})
_SYNONYMS = {"language": "text", "visual": "vision"}
_INT = re.compile(r"\d+")
_GRAPH_MODULE_KEYS = ("_parameters", "_buffers", "_modules")
# What FX's code generation prints of a node's meta besides its value and source line
# (``desc``, AOT's input descriptions naming the layer, only with expanded_def, unused here).
_SHOWN_META = ("custom", "recompute", "ac_graph_id", "is_wrapped")


class NotRepeating(Exception):
    """The layers' graphs do not repeat provably: trace every layer."""


@dataclass(frozen=True)
class LayerStack:
    """A stack of alike layers and the config entries that size it."""

    path: str
    layers: nn.ModuleList
    # The config or sub-config (a VLM's ``text_config``) that holds ``depth_attr``.
    config: Any
    depth_attr: str
    # Config attributes with one entry per layer (all entries equal).
    per_layer: tuple[str, ...]

    @property
    def depth(self) -> int:
        return len(self.layers)

    @contextmanager
    def truncated(self, depth: int) -> Iterator[None]:
        """The first ``depth`` layers only, the config saying so: the model sizes its
        cache from the config, and an 8B's depth-2 Dynamo trace took ~4 s with the config
        left at 32 layers, ~2 s with it cut."""
        modules = self.layers._modules
        saved = {a: getattr(self.config, a) for a in (self.depth_attr, *self.per_layer)}
        self.layers._modules = dict(islice(modules.items(), depth))
        try:
            setattr(self.config, self.depth_attr, depth)
            for attr in self.per_layer:
                setattr(self.config, attr, saved[attr][:depth])
            yield
        finally:
            self.layers._modules = modules
            for attr, value in saved.items():
                setattr(self.config, attr, value)


@dataclass(frozen=True)
class Stacks:
    """The model's stacks that may be traced short (alike, deep enough, sized by a config
    attribute of their own), and how many layers of other stacks every trace keeps."""

    stacks: tuple[LayerStack, ...]
    kept_layers: int

    @property
    def depth(self) -> int:
        """Layers of every stack: what one full trace traces."""
        return self.kept_layers + sum(s.depth for s in self.stacks)

    def plan(self, depth: int) -> tuple[LayerStack, ...]:
        """The stacks to cut to ``depth`` and ``depth + 1``, in the order they are extended:
        those whose short traces save the most against one full trace, if any do."""
        best: tuple[int, tuple[LayerStack, ...]] | None = None
        for chosen in _subsets(self.stacks):
            saved = _full_cost(chosen, self.depth) - _short_cost(chosen, self.depth, depth)
            if saved > 0 and (best is None or saved > best[0]):
                best = (saved, chosen)
        if best is None:
            raise NotRepeating(f"{self.depth} layers cost no more than the short traces")
        # The later an extension, the larger its graphs (every stack extended before it at
        # full depth): the deepest stack goes last.
        return tuple(sorted(best[1], key=lambda s: s.depth))

    def extended(
        self, trace: Callable[[], Sequence[fx.GraphModule]], depth: int = TRACE_DEPTH
    ) -> list[fx.GraphModule]:
        """``trace``'s graphs at full depth, from its graphs with each planned stack at
        ``depth`` and one more (every combination: 2 traces for one stack, 4 for two),
        extended one stack at a time: the first stack's extension needs the same pair of
        graphs at each depth of the others, each one checked (:func:`extend`)."""
        chosen = self.plan(depth)
        graphs: dict[tuple[int, ...], list[fx.GraphModule]] = {}
        for depths in product((depth, depth + 1), repeat=len(chosen)):
            with ExitStack() as cut:
                for stack, d in zip(chosen, depths, strict=True):
                    cut.enter_context(stack.truncated(d))
                graphs[depths] = list(trace())
        counts = {k: len(v) for k, v in graphs.items()}
        if len(set(counts.values())) != 1 or not graphs[(depth,) * len(chosen)]:
            raise NotRepeating(f"graph counts by depths {counts}")
        for stack in chosen:
            extra = stack.depth - depth - 1
            graphs = {
                rest: [
                    extend(s, b, extra)
                    for s, b in zip(graphs[(depth, *rest)], graphs[(depth + 1, *rest)], strict=True)
                ]
                for rest in {k[1:] for k in graphs}
            }
        return graphs[()]


def _subsets(stacks: Sequence[LayerStack]) -> Iterator[tuple[LayerStack, ...]]:
    """Every stack first: between plans that save as much, the one extending more."""
    for n in range(len(stacks), 0, -1):
        yield from combinations(stacks, n)


def _overhead(chosen: Sequence[LayerStack]) -> int:
    """What a trace costs besides its layers, in layers: counted where several stacks make
    four traces or more; one stack's two keep the rule it always had (deeper than 2d+1)."""
    return _TRACE_OVERHEAD if len(chosen) > 1 else 0


def _full_cost(chosen: Sequence[LayerStack], full: int) -> int:
    return _overhead(chosen) + full


def _short_cost(chosen: Sequence[LayerStack], full: int, depth: int) -> int:
    """Layers traced by the short traces (and their overhead): every combination of
    ``depth`` and ``depth + 1`` for the chosen stacks, the others at full depth."""
    others = full - sum(s.depth for s in chosen)
    traces = 2 ** len(chosen)
    return traces * (_overhead(chosen) + others) + traces // 2 * len(chosen) * (2 * depth + 1)


def find_stacks(model: Any) -> Stacks | None:
    """The model's top-level stacks of layers (ModuleLists not inside another) that may be
    traced short: alike, deep enough, each sized by one config attribute of its own, maybe
    in a sub-config. A stack that is not (too shallow, unlike, sized by nothing known) is
    kept at full depth in every trace. None when no stack may be traced short, or when
    which attribute sizes which stack is not certain."""
    from torch import nn

    found: list[tuple[str, nn.ModuleList]] = []
    for name, module in model.named_modules():
        nested = any(name.startswith(f"{outer}.") for outer, _ in found)
        if isinstance(module, nn.ModuleList) and len(module) >= 2 and not nested:
            found.append((name, module))
    config = getattr(model, "config", None)
    if not found or not hasattr(config, "__dict__"):
        return None
    sizes = _sizing_attrs(config)
    owners: dict[str, tuple[Any, str]] = {}
    # Shorter stacks are kept whole: what sizes them matters not.
    for path, layers in (f for f in found if len(f[1]) >= MIN_DEPTH):
        fits = [key for key, (owner, attr) in sizes.items() if vars(owner)[attr] == len(layers)]
        if len(fits) > 1:
            # Two stacks of one length (an encoder and a decoder, a vision tower and the
            # LM): the attribute named like the stack's path.
            fits = [key for key in fits if _roles(key) & _roles(path)]
            if len(fits) != 1:
                return None
        if fits:
            owners[path] = sizes[fits[0]]
    if len({(id(owner), attr) for owner, attr in owners.values()}) != len(owners):
        return None  # one attribute sizing two stacks: cutting one would cut both
    stacks: list[LayerStack] = []
    kept = 0
    claimed: set[tuple[int, str]] = set()
    for path, layers in found:
        stack = _stack(path, layers, owners.get(path))
        if stack is None:
            kept += len(layers)
            continue
        lists = {(id(stack.config), attr) for attr in stack.per_layer}
        if lists & claimed:
            return None  # a per-layer list that two stacks of one length could own
        claimed |= lists
        stacks.append(stack)
    if not stacks:
        return None
    return Stacks(tuple(stacks), kept)


def _stack(path: str, layers: nn.ModuleList, owner: tuple[Any, str] | None) -> LayerStack | None:
    """The stack, if it may be traced short."""
    if owner is None:
        return None
    config, attr = owner
    per_layer = tuple(
        k
        for k, v in vars(config).items()
        if isinstance(v, list | tuple) and len(v) == len(layers) and k != attr
    )
    # Alternating attention kinds, dense layers before MoE ones: not one repeated layer.
    if any(len({repr(x) for x in getattr(config, k)}) != 1 for k in per_layer):
        return None
    if not _alike(list(layers)):
        return None
    return LayerStack(path, layers, config, attr, per_layer)


def _sizing_attrs(config: Any) -> dict[str, tuple[Any, str]]:
    """Depth attributes of the config and its sub-configs, by dotted name: each its
    object's own (GPT-2's num_hidden_layers only reads n_layer; BART's reads encoder_layers)."""
    found: dict[str, tuple[Any, str]] = {}
    seen: set[int] = set()

    def visit(owner: Any, prefix: str) -> None:
        if id(owner) in seen:
            return
        seen.add(id(owner))
        for key, value in vars(owner).items():
            if key in _DEPTH_ATTRS and type(value) is int:
                found[prefix + key] = (owner, key)
            elif _is_config(value):
                visit(value, f"{prefix}{key}.")

    visit(config, "")
    return found


def _is_config(value: Any) -> bool:
    from transformers import PretrainedConfig

    return isinstance(value, PretrainedConfig)


def _roles(name: str) -> set[str]:
    """What part of a model a module path or config attribute names."""
    words = {_SYNONYMS.get(w, w) for w in re.split(r"[._]", name)}
    return words & _ROLES


def _alike(layers: Sequence[nn.Module]) -> bool:
    """The layers are built the same: equal leaves of their descriptions, but for numbers
    that are the layer's own index (plus one fixed offset: ``layer_idx``, ``layer_number``)."""
    described = [list(_leaves(_describe(layer))) for layer in layers]
    if len({len(d) for d in described}) != 1:
        return False
    for column in zip(*described, strict=True):
        if len({repr(v) for v in column}) == 1:
            continue
        ints = [v for v in column if type(v) is int]
        if len(ints) != len(column) or len({v - i for i, v in enumerate(ints)}) != 1:
            return False
    return True


def _describe(layer: nn.Module) -> list[Any]:
    """What makes a layer trace the way it does."""
    rows: list[Any] = []
    for path, module in layer.named_modules(remove_duplicate=False):
        attrs = [
            (k, _token(_hooks(k, v)))
            for k, v in vars(module).items()
            if k not in _GRAPH_MODULE_KEYS
        ]
        params = [
            (n, tuple(p.shape), str(p.dtype), p.requires_grad, type(p).__name__)
            for n, p in module.named_parameters(recurse=False)
        ]
        buffers = [
            (n, tuple(b.shape), str(b.dtype), type(b).__name__)
            for n, b in module.named_buffers(recurse=False)
        ]
        rows.append((path, type(module).__qualname__, sorted(attrs), params, buffers))
    return rows


def _hooks(key: str, value: Any) -> Any:
    """A module's hooks by kind and order: their keys are handle ids, counted across the
    model (a vision tower's hidden-state recorders: ids 1, 3, 5 in layers 0, 1, 2)."""
    return list(value.values()) if "hooks" in key and isinstance(value, dict) else value


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        yield f"<{len(value)}>"
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _token(value: Any) -> Any:
    import torch

    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_token(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(repr(_token(v)) for v in value)
    if isinstance(value, dict):  # hooks among them: their count and kinds
        return sorted((repr(k), repr(_token(v))) for k, v in value.items())
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    # A fresh partial per layer (StarCoder2's ``gelu(approximate="tanh")``): alike when it
    # binds the same function to the same arguments.
    if isinstance(value, functools.partial):
        keywords = sorted((k, _token(v)) for k, v in value.keywords.items())
        return ("partial", _token(value.func), _token(value.args), keywords)
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    # Any other object: the same one in every layer (the shared config), else not alike.
    return f"<{type(value).__qualname__} {id(value)}>"


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(m) for m in _INT.findall(text))


def _shifted(text: str, moves: Sequence[tuple[Sequence[int], int]]) -> str:
    """``text`` with each number moved on by ``times`` ``step`` for every move, summed
    first: a mirrored copy's name goes down one way and up the other."""
    total = [0] * len(_INT.findall(text))
    for step, times in moves:
        if times and any(step):
            total = [t + times * x for t, x in zip(total, step, strict=True)]
    if not any(total):
        return text
    numbers = iter(total)
    return _INT.sub(lambda m: str(int(m.group()) + next(numbers)), text)


def _target_text(node: fx.Node) -> str | None:
    return node.target if isinstance(node.target, str) else None


def _shape(node: fx.Node) -> tuple[Any, ...]:
    """What must agree for two nodes to be the same node (at another depth or layer)."""
    text = _target_text(node)
    target = _INT.sub("#", text) if text is not None else node.target
    return (node.op, target, _INT.sub("#", node.name), _meta_key(node))


def _meta_key(node: fx.Node) -> Any:
    """What of a node's meta shows in the written graph: value types and source line."""
    meta = node.meta
    value = meta.get("val", meta.get("example_value"))
    shown = tuple(repr(meta.get(k)) for k in _SHOWN_META)
    return (_value_key(value), _value_key(meta.get("tensor_meta")), meta.get("stack_trace"), shown)


def _value_key(value: Any) -> Any:
    import torch

    if isinstance(value, list | tuple):
        return tuple(_value_key(v) for v in value)
    if isinstance(value, torch.Tensor):
        return ("t", str(value.shape), str(value.dtype), str(value.stride()), str(value.device))
    return repr(value)


@dataclass
class _Layout:
    """Where the depth-(d+1) graph's nodes sit: layer d's runs and the rest, matched."""

    nodes: list[fx.Node]
    pos: dict[fx.Node, int]
    run_of: dict[fx.Node, tuple[int, int]]  # node of layer d -> (run start, run length)
    prev_of: dict[fx.Node, fx.Node]  # node of layer d -> the same node of layer d-1
    next_of: dict[fx.Node, fx.Node]  # its inverse
    match: dict[fx.Node, fx.Node]  # node of the small graph -> node of the big one
    step: dict[fx.Node, tuple[int, ...]]  # numbers of a big node's name, per layer
    target_step: dict[fx.Node, tuple[int, ...]]
    # Runs whose layer before comes after them: a backward runs the layers last to first.
    mirrored: set[tuple[int, int]] = field(default_factory=set)
    # A mirrored run's input from the layer above (before it) -> the run's node that the
    # layer below reads in its place.
    chain: dict[fx.Node, fx.Node] = field(default_factory=dict)
    # (reader after the stack, node of layer d-1) where the reader takes the layer before
    # the last (LLaVA's image features: the vision tower's hidden_states[-2]).
    behind: set[tuple[fx.Node, fx.Node]] = field(default_factory=set)

    def is_mirrored(self, node: fx.Node) -> bool:
        return self.run_of.get(node) in self.mirrored


def extend(small: fx.GraphModule, big: fx.GraphModule, extra: int) -> fx.GraphModule:
    """``big`` (traced one layer deeper than ``small``) with ``extra`` more layers."""
    a, b = list(small.graph.nodes), list(big.graph.nodes)
    b_to_a, runs = _aligned(a, b)
    first: NotRepeating | None = None
    for placed in _placements(b, b_to_a, runs):
        try:
            layout = _layout(a, b, *placed)
            _check_layer(layout)
            _check_rest(layout)
            _check_steps(layout)
        except NotRepeating as exc:
            first = first or exc
            continue
        return _build(big, layout, extra)
    raise first or NotRepeating("no placement of the new layer")


def _aligned(a: list[fx.Node], b: list[fx.Node]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    matcher = SequenceMatcher(None, [_shape(n) for n in a], [_shape(n) for n in b], False)
    b_to_a: dict[int, int] = {}
    runs: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            b_to_a.update(zip(range(j1, j2), range(i1, i2), strict=True))
        elif tag == "insert":
            runs.append((j1, j2 - j1))
        else:
            where = b[j1].name if j1 < len(b) else "the end"
            raise NotRepeating(f"the graphs differ by more than a layer ({tag} at {where})")
    if not runs:
        raise NotRepeating("one more layer added no nodes")
    return b_to_a, [_latest(a, b, b_to_a, start, length) for start, length in runs]


# Placements tried before tracing every layer (each try is linear in the graph).
_MAX_PLACEMENTS = 64


def _placements(
    b: list[fx.Node], b_to_a: dict[int, int], runs: list[tuple[int, int]]
) -> Iterator[tuple[dict[int, int], list[tuple[int, int]], set[tuple[int, int]]]]:
    """Where the new layer's runs may sit, the matcher's choice first. In a stretch of
    alike layers the matcher cannot tell which one is new, so each run may move whole
    layers earlier where the nodes there look the same: the runs in layer order (the
    forward's, a backward's inputs: saved values, parameters, cotangents) all by the same
    count; a backward's computation, which runs the layers last to first, has its layer
    before after it (mirrored) and its own count."""
    shifts = [_shifts(b, start, length) for start, length in runs]
    # Inputs of the graph only (no arguments): their order says nothing, keep it forward.
    computed = [
        any(b[start + i].op != "placeholder" for i in range(length)) for start, length in runs
    ]
    ks = range(max(len(x) for x in shifts))
    choices: list[tuple[tuple[int, ...], tuple[bool, ...]]] = [
        (tuple(k for _ in runs), tuple(False for _ in runs)) for k in ks
    ]
    if any(computed):
        for k in ks:
            options = [x if c else [k] for x, c in zip(shifts, computed, strict=True)]
            choices += [(chosen, tuple(computed)) for chosen in product(*options)]
    valid = [(c, m) for c, m in choices if all(k in x for k, x in zip(c, shifts, strict=True))]
    for chosen, mirror in valid[:_MAX_PLACEMENTS]:
        moved = dict(b_to_a)
        placed: list[tuple[int, int]] = []
        mirrored: set[tuple[int, int]] = set()
        for (start, length), k, way in zip(runs, chosen, mirror, strict=True):
            new_start = start - k * length
            # The matched nodes the run passes over move on by its length, matches kept.
            for p in range(new_start, start):
                moved[p + length] = b_to_a[p]
            for p in range(new_start, new_start + length):
                moved.pop(p, None)
            placed.append((new_start, length))
            if way:
                mirrored.add((new_start, length))
        yield moved, placed, mirrored


def _shifts(b: list[fx.Node], start: int, length: int) -> list[int]:
    """How many whole layers earlier the run may sit: as far as the nodes look the same."""
    shifts = [0]
    while (k := len(shifts)) * length <= start - length and all(
        _shape(b[start - k * length + i]) == _shape(b[start + i]) for i in range(length)
    ):
        shifts.append(k)
    return shifts


def _layout(
    a: list[fx.Node],
    b: list[fx.Node],
    b_to_a: dict[int, int],
    runs: list[tuple[int, int]],
    mirrored: set[tuple[int, int]],
) -> _Layout:
    match = {a[i]: b[j] for j, i in b_to_a.items()}
    run_of: dict[fx.Node, tuple[int, int]] = {}
    prev_of: dict[fx.Node, fx.Node] = {}
    for start, length in runs:
        # The layer before: ahead of the run, or after it in a backward.
        prev_start = start + length if (start, length) in mirrored else start - length
        if prev_start < 0 or prev_start + length > len(b):
            raise NotRepeating("a layer's nodes have no layer before them")
        for k in range(length):
            node, prev = b[start + k], b[prev_start + k]
            if _shape(node) != _shape(prev) or prev in run_of:
                raise NotRepeating(f"{node.name} is not {prev.name} one layer on")
            run_of[node] = (start, length)
            prev_of[node] = prev
    layout = _Layout(
        nodes=b,
        pos={n: i for i, n in enumerate(b)},
        run_of=run_of,
        prev_of=prev_of,
        next_of={p: n for n, p in prev_of.items()},
        match=match,
        step={},
        target_step={},
        mirrored=mirrored,
    )
    pairs = [*prev_of.items(), *((y, x) for x, y in match.items())]
    for later, earlier in pairs:
        layout.step[later] = _delta(later.name, earlier.name)
        text, before = _target_text(later), _target_text(earlier)
        if text is not None and before is not None:
            layout.target_step[later] = _delta(text, before)
    return layout


def _latest(
    a: list[fx.Node], b: list[fx.Node], b_to_a: dict[int, int], start: int, length: int
) -> tuple[int, int]:
    """Layer d's run where it is, not one layer early: the matcher may insert a period of
    a periodic stretch anywhere in it. While the run's first node is the very node (name,
    arguments, value) the small graph has where the run ends, that node precedes it."""
    while (end := start + length) in b_to_a and _exact(b[start]) == _exact(a[b_to_a[end]]):
        b_to_a[start] = b_to_a.pop(end)
        start += 1
    return start, length


def _exact(node: fx.Node) -> Any:
    from torch import fx

    refs = fx.map_arg((node.args, node.kwargs), lambda r: r.name)
    return (node.op, str(node.target), node.name, repr(refs), _meta_key(node))


def _delta(later: str, earlier: str) -> tuple[int, ...]:
    return tuple(x - y for x, y in zip(_ints(later), _ints(earlier), strict=True))


def _check_layer(layout: _Layout) -> None:
    """Layer d's nodes are layer d-1's, one layer on."""

    def same_ref(new: fx.Node, old: fx.Node) -> bool:
        if new is old:  # outside the layers: the rotary tables, the mask, layer 0's values
            return new not in layout.next_of and new not in layout.run_of
        if new in layout.prev_of:
            return layout.prev_of[new] is old
        if layout.is_mirrored(old):
            # A backward: the run reads the layer above (ahead of it) where the layer
            # below read the run.
            start, length = layout.run_of[old]
            if layout.pos[new] == layout.pos[old] - length and new not in layout.run_of:
                layout.chain[new] = old
                return True
            return False
        # Layer d-1 reading layer d-2 (not a run: layer 0's names differ).
        for start, length in set(layout.run_of.values()) - layout.mirrored:
            if start - length <= layout.pos[new] < start:
                return layout.pos.get(old) == layout.pos[new] - length
        return False

    for node, prev in layout.prev_of.items():
        if not _same_values((node.args, node.kwargs), (prev.args, prev.kwargs), same_ref):
            raise NotRepeating(f"{node.name}'s arguments are not {prev.name}'s one layer on")
        if _meta_key(node) != _meta_key(prev) or node.type != prev.type:
            raise NotRepeating(f"{node.name}'s value or source is not {prev.name}'s")


def _check_rest(layout: _Layout) -> None:
    """Every node outside layer d is the same at both depths (the output: one group more)."""
    for old, new in layout.match.items():
        if new.op == "output":
            ok = _same_output(new.args, old.args, layout, new)
        else:
            ok = _same_values((new.args, new.kwargs), (old.args, old.kwargs), _reads(new, layout))
        if not ok:
            raise NotRepeating(f"{new.name}'s arguments change with depth")
        if _meta_key(new) != _meta_key(old) or new.type != old.type:
            raise NotRepeating(f"{new.name}'s value or source changes with depth")


def _reads(reader: fx.Node, layout: _Layout) -> Callable[[fx.Node, fx.Node], bool]:
    def same_ref(new: fx.Node, old: fx.Node) -> bool:
        moved = layout.match.get(old)
        if new is moved:
            return True
        # After the stack a node reads the last layer, which is now layer d; after a
        # mirrored run, the run's node that stands where the layer above's was read.
        run = layout.run_of.get(new)
        if run is None:
            return moved is not None and _behind(reader, new, moved, layout)
        if layout.pos[reader] < sum(run):
            return False
        if run in layout.mirrored:
            return moved is not None and layout.chain.get(moved) is new
        return layout.prev_of[new] is moved

    return same_ref


def _behind(reader: fx.Node, new: fx.Node, moved: fx.Node, layout: _Layout) -> bool:
    """``reader``, after the stack, reads layer d-1's ``new`` where it read layer d-2's
    ``moved`` one layer shallower: the layer before the last, at either depth."""
    later = layout.next_of.get(new)
    if later is None or layout.is_mirrored(later):
        return False
    start, length = layout.run_of[later]
    if layout.pos[reader] < start + length or layout.pos[new] - length != layout.pos[moved]:
        return False
    layout.behind.add((reader, new))
    return True


def _same_values(new: Any, old: Any, same_ref: Callable[[fx.Node, fx.Node], bool]) -> bool:
    from torch import fx

    if isinstance(new, fx.Node) or isinstance(old, fx.Node):
        return isinstance(new, fx.Node) and isinstance(old, fx.Node) and same_ref(new, old)
    if isinstance(new, list | tuple):
        return (
            type(new) is type(old)
            and len(new) == len(old)
            and all(_same_values(x, y, same_ref) for x, y in zip(new, old, strict=True))
        )
    if isinstance(new, dict):
        return (
            isinstance(old, dict)
            and list(new) == list(old)
            and all(_same_values(new[k], old[k], same_ref) for k in new)
        )
    return type(new) is type(old) and repr(new) == repr(old)


def _same_output(new: Any, old: Any, layout: _Layout, output: fx.Node) -> bool:
    """The output at depth d+1 is the one at depth d with each group of layer-d values
    appended after the same group of layer d-1 (a cache's keys and values), and values of
    the last layer read from layer d instead (an encoder's last hidden state), those of
    the layer before the last from layer d-1."""
    if _is_node(new) or _is_node(old):
        moved = layout.match.get(old)
        if new is moved:
            return True
        if layout.is_mirrored(new):
            return moved is not None and layout.chain.get(moved) is new
        if new in layout.run_of:
            return layout.prev_of[new] is moved
        return moved is not None and _behind(output, new, moved, layout)
    if not isinstance(new, list | tuple):
        return _same_values(new, old, lambda x, y: False)
    if type(new) is not type(old):
        return False
    kept = [v for group, appended in _groups(new, layout) if not appended for v in group]
    return len(kept) == len(old) and all(
        _same_output(x, y, layout, output) for x, y in zip(kept, old, strict=True)
    )


def _groups(values: Sequence[Any], layout: _Layout) -> Iterator[tuple[list[Any], bool]]:
    """The values in runs, each saying whether it is a group of layer-d nodes that follows
    the same nodes of layer d-1 (one group more per layer)."""
    group: list[Any] = []
    in_layer = False
    done = 0
    for i, value in enumerate([*values, None]):
        flag = _is_node(value) and value in layout.run_of
        if group and (flag != in_layer or i == len(values)):
            before = list(values[max(0, done - len(group)) : done])
            appended = in_layer and [layout.prev_of[n] for n in group] == before
            yield group, appended
            done, group = i, []
        group.append(value)
        in_layer = flag


def _is_node(value: Any) -> bool:
    from torch import fx

    return isinstance(value, fx.Node)


def _check_steps(layout: _Layout) -> None:
    for node, step in [*layout.step.items(), *layout.target_step.items()]:
        if layout.is_mirrored(node):
            step = tuple(-x for x in step)  # named before its layer before
        if any(x < 0 for x in step):
            raise NotRepeating(f"{node.name}: its numbers go down with depth")


def _build(big: fx.GraphModule, layout: _Layout, extra: int) -> fx.GraphModule:
    import copy

    from torch import fx

    graph = fx.Graph()
    graph._codegen = copy.deepcopy(big.graph._codegen)
    made: dict[tuple[fx.Node, int], fx.Node] = {}
    attrs: dict[str, Any] = {}

    # Copy c of a run is layer d+c. A mirrored run's copies are made the highest layer
    # first, and the nodes after it read its lowest, layer d's own.
    def made_for(ref: fx.Node, reader_copy: int | None, reader: fx.Node) -> fx.Node:
        if ref in layout.run_of:
            # A layer reads its own copy; the nodes after the stack read the last.
            if reader_copy is None:
                return made[(ref, 0 if layout.is_mirrored(ref) else extra)]
            return made[(ref, reader_copy)]
        if (reader, ref) in layout.behind and extra:
            return made[(layout.next_of[ref], extra - 1)]  # the layer before the last
        if ref in layout.chain and layout.is_mirrored(reader):
            if reader_copy is not None and reader_copy < extra:
                return made[(layout.chain[ref], reader_copy + 1)]  # the layer above
            return made[(ref, 0)]
        if reader_copy and ref in layout.next_of:
            return made[(layout.next_of[ref], reader_copy - 1)]  # the layer before
        return made[(ref, 0)]

    def emit(node: fx.Node, copy_index: int | None) -> None:
        # A node outside layer d moves with depth by its own step; layer d's copy c by c
        # layer steps, and with depth as layer d-1 does (Mistral's cache makes one tensor
        # per layer before the first layer: every later tensor_<n> moves on by one).
        name, target = node.name, node.target
        moves = [(node, extra)]
        if copy_index is not None:
            moves = [(node, copy_index), (layout.prev_of[node], extra)]
        name = _shifted(name, [(layout.step.get(source, ()), times) for source, times in moves])
        if isinstance(target, str):
            target = _shifted(
                target, [(layout.target_step.get(source, ()), times) for source, times in moves]
            )
        if node.op == "output":
            args = _expanded_output(node.args, node, layout, made, extra)
            kwargs: Any = {}
        else:
            args, kwargs = fx.map_arg(
                (node.args, node.kwargs), lambda r: made_for(r, copy_index, node)
            )
        new = graph.create_node(node.op, target, args, kwargs, name=name, type_expr=node.type)
        if new.name != name:
            raise NotRepeating(f"name {name} taken twice")
        new.meta = dict(node.meta)
        if node.op in ("get_attr", "call_module"):
            attrs[str(target)] = operator.attrgetter(str(node.target))(big)
        made[(node, copy_index or 0)] = new

    i = 0
    nodes = layout.nodes
    while i < len(nodes):
        node = nodes[i]
        if node in layout.run_of:
            start, length = layout.run_of[node]
            copies = range(extra + 1)
            for c in reversed(copies) if layout.is_mirrored(node) else copies:
                for k in range(length):
                    emit(nodes[start + k], c)
            i = start + length
        else:
            emit(node, None)
            i += 1
    graph.lint()
    return fx.GraphModule(attrs, graph, class_name=type(big).__name__)


def _expanded_output(
    value: Any,
    output: fx.Node,
    layout: _Layout,
    made: dict[tuple[fx.Node, int], fx.Node],
    extra: int,
) -> Any:
    if _is_node(value):
        if (output, value) in layout.behind and extra:
            return made[(layout.next_of[value], extra - 1)]
        last = value in layout.run_of and not layout.is_mirrored(value)
        return made[(value, extra if last else 0)]
    if not isinstance(value, list | tuple):
        return value
    out: list[Any] = []
    for group, appended in _groups(value, layout):
        if appended:
            out.extend(made[(v, c)] for c in range(extra + 1) for v in group)
        else:
            out.extend(_expanded_output(v, output, layout, made, extra) for v in group)
    return type(value)(out)
