"""What an input builder may look at: the model, its config, the job's sizes.

Sizes come from the config first (image_size, num_mel_bins, conv strides...), searched in
the config and its sub-configs (text_config, vision_config, audio_config, encoder,
decoder, qformer_config, encoder_config, backbone_config), because multimodal,
encoder-decoder and backbone-based models keep them there. Where the config cannot say, the
forward's own documentation can: transformers documents each tensor argument's shape
(``input_values (`torch.Tensor` of shape `(batch_size, channels, sequence_length)`)``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_SUB_CONFIGS = (
    "text_config",
    "vision_config",
    "audio_config",
    "encoder",
    "decoder",
    "qformer_config",
    "encoder_config",
    "backbone_config",
)


@dataclass
class InputSpec:
    model: Any
    config: Any
    tokenizer: Any
    batch: int
    seq_len: int
    device: str
    float_dtype: Any
    train: bool
    # Leave out the attention mask the builders would make all ones (weights fake: see
    # builders._wants_mask).
    omit_all_ones_mask: bool = False
    # Weights fake: builds an input whose values we know (token ids, image grids and sizes)
    # as a real tensor the fake mode keeps, so that code reading those values runs (see
    # huggingface.fake.keep_values). Given the builder, called with real earlier inputs.
    keep_values: Callable[[Callable[[dict[str, Any]], Any], dict[str, Any]], Any] | None = None
    # What a builder asked the model once (image token counts), reused by later builders.
    asked: dict[str, Any] = field(default_factory=dict)
    # Forward parameters by name; ``required`` are those with no default.
    params: dict[str, inspect.Parameter] = field(default_factory=dict)

    @classmethod
    def of(cls, model: Any, **fields: Any) -> InputSpec:
        params = dict(inspect.signature(model.forward).parameters)
        return cls(model=model, params=params, **fields)

    @property
    def class_name(self) -> str:
        return type(self.model).__name__

    @property
    def required(self) -> list[str]:
        plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return [
            n
            for n, p in self.params.items()
            if p.kind in plain and p.default is inspect.Parameter.empty
        ]

    @property
    def choices(self) -> int | None:
        """Number of choices for multiple-choice heads (inputs get a choices dimension)."""
        return 2 if self.class_name.endswith("ForMultipleChoice") else None

    @property
    def encoder_decoder(self) -> bool:
        return bool(getattr(self.config, "is_encoder_decoder", False))

    def find(self, *names: str, default: Any = None) -> Any:
        """The first of ``names`` set in the config, else in one of its sub-configs."""
        for cfg in self._configs():
            for name in names:
                value = getattr(cfg, name, None)
                if value is not None:
                    return value
        return default

    def find_in(self, sub: str, *names: str, default: Any = None) -> Any:
        """Like :meth:`find`, but the named sub-config (e.g. vision_config) wins."""
        inner = getattr(self.config, sub, None)
        for name in names if inner is not None else ():
            value = getattr(inner, name, None)
            if value is not None:
                return value
        return self.find(*names, default=default)

    def documented_shape(self, name: str) -> list[str] | None:
        """The dims the forward's docstring gives ``name`` (``["batch_size", "channels",
        "sequence_length"]``), None where it gives none."""
        doc = getattr(self.model.forward, "__doc__", None) or ""
        found = re.search(rf"\b{re.escape(name)} \(`[^`]*`[^)]*?of shape `\(([^`]*)\)`", doc)
        if found is None:
            return None
        return [d.strip() for d in found.group(1).split(",") if d.strip()]

    def is_sequence(self, name: str) -> bool:
        """Whether the forward annotates ``name`` as a list of tensors (one per sample)."""
        param = self.params.get(name)
        note = "" if param is None else str(param.annotation)
        return note.startswith(("Sequence[", "list[", "typing.Sequence", "collections.abc.Seq"))

    def config_names(self) -> list[str]:
        """Where :meth:`find` searches (``config``, ``encoder_config``, ...), for reasons."""
        return [path for path, _ in self._walk()]

    def _configs(self) -> list[Any]:
        return [cfg for _, cfg in self._walk()]

    def _walk(self) -> list[tuple[str, Any]]:
        """The config, the well-known sub-configs, then every other sub-config nested in
        them, breadth first (a speech model's mel bins in ``encoder_config``, a codec's in
        ``audio_encoder``): a size is found wherever the config keeps it."""
        out = [("config", self.config)]
        out += [(s, c) for s in _SUB_CONFIGS if (c := getattr(self.config, s, None)) is not None]
        seen = {id(c) for _, c in out}
        queue = list(out)
        while queue:
            path, cfg = queue.pop(0)
            for name, value in vars(cfg).items():
                if _is_config(value) and id(value) not in seen:
                    seen.add(id(value))
                    inner = name if path == "config" else f"{path}.{name}"
                    out.append((inner, value))
                    queue.append((inner, value))
        return out

    def vocab(self) -> int:
        return int(self.find_in("text_config", "vocab_size", default=0) or 32000)

    def text_length(self) -> int:
        """The prompt's text tokens: seq_len, within the text tower's position table where
        the model keeps one in a text sub-config (CLIP-style towers and detectors have 16 to
        77 positions, whatever seq_len a whole list of models is traced at)."""
        text = getattr(self.config, "text_config", None)
        limit = getattr(text, "max_position_embeddings", None)
        return max(1, min(self.seq_len, limit)) if isinstance(limit, int) else self.seq_len

    def decoder_length(self) -> int:
        """The decoder's sequence length: seq_len, within what the decoder can take."""
        limit = self.find_in("decoder", "max_target_positions", "max_position_embeddings")
        return max(1, min(self.seq_len, int(limit) if isinstance(limit, int) else self.seq_len))

    def image_token_id(self) -> int | None:
        """The placeholder token an image's features replace in the prompt, if any."""
        value = self.find("image_token_id", "image_token_index")
        return int(value) if isinstance(value, int) else None

    def generator(self, salt: int) -> Any:
        import torch

        return torch.Generator().manual_seed(1000 + salt)

    def randint(self, high: int, shape: tuple[int, ...], salt: int, low: int = 0) -> Any:
        import torch

        high = max(high, low + 1)
        gen = self.generator(salt)
        return torch.randint(low, high, shape, generator=gen, dtype=torch.long)

    def randn(self, shape: tuple[int, ...], salt: int) -> Any:
        import torch

        return torch.randn(shape, generator=self.generator(salt)).to(self.float_dtype)


def _is_config(value: Any) -> bool:
    # Any transformers config (PreTrainedConfig in 5.x), without importing transformers here.
    return any(c.__name__.lower() == "pretrainedconfig" for c in type(value).__mro__)
