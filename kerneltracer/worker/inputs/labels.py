"""Train-mode targets that match the model's head, so the traced backward is the real one.

The head is read from the class-name suffix transformers uses for every task
(``...ForSequenceClassification``, ``...ForCTC``) and, for generation heads, from whether
the config is an encoder-decoder.
"""

from __future__ import annotations

from typing import Any

from kerneltracer.worker.inputs.spec import InputSpec

_SUFFIXES = (
    ("ForCausalLM", "causal_lm"),
    ("LMHeadModel", "causal_lm"),
    ("ForMaskedLM", "masked_lm"),
    ("ForPreTraining", "masked_lm"),
    ("ForConditionalGeneration", "generation"),
    ("ForSpeechSeq2Seq", "seq2seq"),
    ("ForSequenceClassification", "classification"),
    ("ForImageClassification", "classification"),
    ("ForVideoClassification", "classification"),
    ("ForAudioClassification", "classification"),
    ("ForMultipleChoice", "multiple_choice"),
    ("ForTokenClassification", "token_classification"),
    ("ForQuestionAnswering", "question_answering"),
    ("ForCTC", "ctc"),
    ("ForSemanticSegmentation", "segmentation"),
    ("ForObjectDetection", "detection"),
    # Forecasters: the target is future_values (see series), not labels.
    ("ForPrediction", "forecast"),
)


def head_of(spec: InputSpec) -> str | None:
    name = spec.class_name
    for suffix, head in _SUFFIXES:
        if name.endswith(suffix):
            if head == "generation":
                return "seq2seq" if spec.encoder_decoder else "causal_lm"
            return head
    return "seq2seq" if spec.encoder_decoder else None


def wants_labels(spec: InputSpec, built: dict[str, Any]) -> bool:
    return head_of(spec) not in (None, "question_answering", "forecast")


def is_qa(spec: InputSpec, built: dict[str, Any]) -> bool:
    return head_of(spec) == "question_answering"


def labels(spec: InputSpec, built: dict[str, Any]) -> Any:
    import torch

    head = head_of(spec)
    num_labels = int(getattr(spec.config, "num_labels", 2) or 2)
    if head in ("causal_lm", "masked_lm"):
        return built["input_ids"].clone()
    if head == "seq2seq":
        vocab = int(spec.find_in("decoder", "vocab_size", default=0) or spec.vocab())
        return spec.randint(vocab, (spec.batch, spec.decoder_length()), salt=20)
    if head == "multiple_choice":
        return spec.randint(spec.choices or 2, (spec.batch,), salt=21)
    if head == "token_classification":
        length = int(built["input_ids"].shape[-1]) if "input_ids" in built else spec.seq_len
        return spec.randint(num_labels, (spec.batch, length), salt=22)
    if head == "ctc":
        frames = max(2, spec.seq_len // 2)  # shorter than the frames, as CTC requires
        # Never the blank: CTC heads take pad_token_id as blank (0 for wav2vec2, the last id
        # for Parakeet).
        blank = spec.find("pad_token_id", default=0)
        blank = blank if isinstance(blank, int) and 0 <= blank < spec.vocab() else 0
        ids = spec.randint(spec.vocab() - 1, (spec.batch, frames), salt=23)
        return ids + (ids >= blank).long()
    if head == "detection":
        return _boxes(spec, num_labels)
    if head == "segmentation":
        side = int(built["pixel_values"].shape[-1])
        return spec.randint(num_labels, (spec.batch, side, side), salt=24)
    problem = getattr(spec.config, "problem_type", None)
    if problem == "regression" or num_labels == 1:
        return torch.randn((spec.batch,), generator=spec.generator(25)).to(spec.float_dtype)
    if problem == "multi_label_classification":
        return spec.randint(2, (spec.batch, num_labels), salt=26).to(spec.float_dtype)
    return spec.randint(num_labels, (spec.batch,), salt=27)


def span_start(spec: InputSpec, built: dict[str, Any]) -> Any:
    return spec.randint(spec.seq_len, (spec.batch,), salt=28)


def span_end(spec: InputSpec, built: dict[str, Any]) -> Any:
    return spec.randint(spec.seq_len, (spec.batch,), salt=29)


def _boxes(spec: InputSpec, num_labels: int) -> list[dict[str, Any]]:
    """DETR-style targets: per image a few objects, each a class and a (cx, cy, w, h) box
    normalised to the image."""
    import torch

    objects = 3
    out = []
    for i in range(spec.batch):
        gen = spec.generator(30 + i)
        centre = torch.rand((objects, 2), generator=gen) * 0.5 + 0.25
        size = torch.rand((objects, 2), generator=gen) * 0.4 + 0.1
        out.append(
            {
                "class_labels": spec.randint(num_labels, (objects,), salt=31 + i),
                "boxes": torch.cat([centre, size], dim=1).to(spec.float_dtype),
            }
        )
    return out
