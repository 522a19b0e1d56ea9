"""A zoo of tiny random-weight models, one per architecture family, built offline.

Users' model lists span every family transformers ships (decoders, encoders with task
heads, encoder-decoders, MoE, state-space, hybrids, recurrent models, vision, video,
detection, audio, time series, multimodal); the zoo is what kerneltracer is tested
against. Each entry is a small config saved with save_pretrained, no tokenizer (inputs fall
back to seeded random ids) unless the entry names one, built in a temp dir and renamed.

An entry with a ``sibling`` is built by the same input builders as that entry (a newer
decoder like an older one, a second video classifier): the test suite runs the entries
without one, bench/bench_zoo.py runs them all.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltracer.errors import UsageError, choices
from kerneltracer.jsonio import atomic_write_json, read_json

ZOO_VERSION = 1
MARKER = ".kerneltracer-zoo.json"

_TEXT: dict[str, Any] = {
    "vocab_size": 256,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
}
_DEC: dict[str, Any] = {**_TEXT, "num_key_value_heads": 1, "head_dim": 32}
_VIT: dict[str, Any] = {
    "image_size": 32,
    "patch_size": 8,
    "num_channels": 3,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
}
# Transformer blocks of a tiny encoder whose input layout is set apart.
_BLOCKS: dict[str, Any] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
}
# A GluonTS-style forecaster: 8 steps of context, 3 lags, 2 time features, 4 to predict.
_SERIES: dict[str, Any] = {
    "prediction_length": 4,
    "context_length": 8,
    "lags_sequence": [1, 2, 3],
    "num_time_features": 2,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
}
_WAV: dict[str, Any] = {
    "vocab_size": 32,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "conv_dim": (32, 32),
    "conv_kernel": (10, 3),
    "conv_stride": (5, 2),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 2,
}

# A speech-to-text SeamlessM4T: speech encoder, adaptor and text decoder (the unit and
# vocoder parts it also builds are sized down, never run by the speech-to-text class).
_SEAMLESS: dict[str, Any] = {
    "vocab_size": 256,
    "hidden_size": 32,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "speech_encoder_layers": 1,
    "speech_encoder_attention_heads": 2,
    "speech_encoder_intermediate_size": 64,
    "feature_projection_input_dim": 16,
    "adaptor_kernel_size": 4,
    "adaptor_stride": 2,
    "num_adapter_layers": 1,
    "t2u_encoder_layers": 1,
    "t2u_decoder_layers": 1,
    "t2u_encoder_attention_heads": 2,
    "t2u_decoder_attention_heads": 2,
    "t2u_encoder_ffn_dim": 64,
    "t2u_decoder_ffn_dim": 64,
    "unit_hifi_gan_vocab_size": 32,
    "t2u_vocab_size": 64,
    "max_position_embeddings": 64,
    "t2u_max_position_embeddings": 64,
    "upsample_initial_channel": 16,
    "unit_embed_dim": 16,
    "lang_embed_dim": 8,
    "spkr_embed_dim": 8,
    "vocoder_num_langs": 2,
    "vocoder_num_spkrs": 2,
    "variance_predictor_kernel_size": 3,
}


@dataclass(frozen=True)
class ZooEntry:
    name: str
    # decoder | encoder | encoder-decoder | moe | state-space | hybrid | recurrent | vision |
    # video | detection | audio | time-series | multimodal
    family: str
    arch: str  # the transformers model class
    config: str  # the transformers config class
    kwargs: dict[str, Any] = field(default_factory=dict)
    # The tested entry whose input path this one shares (see the module docstring).
    sibling: str | None = None
    # A tokenizer to save beside the model (a key of zoo_tokenizers.WRITERS).
    tokenizer: str | None = None


def _e(
    name: str,
    family: str,
    arch: str,
    config: str,
    *,
    sibling: str | None = None,
    tokenizer: str | None = None,
    **kwargs: Any,
) -> ZooEntry:
    return ZooEntry(name, family, arch, config, kwargs, sibling, tokenizer)


ZOO: tuple[ZooEntry, ...] = (
    # decoders
    _e("llama", "decoder", "LlamaForCausalLM", "LlamaConfig", **_DEC),
    _e(
        "gpt2",
        "decoder",
        "GPT2LMHeadModel",
        "GPT2Config",
        vocab_size=256,
        n_embd=64,
        n_layer=2,
        n_head=2,
        n_positions=128,
        bos_token_id=1,
        eos_token_id=2,
    ),
    _e("mistral", "decoder", "MistralForCausalLM", "MistralConfig", **_DEC),
    _e("qwen2", "decoder", "Qwen2ForCausalLM", "Qwen2Config", **_DEC),
    _e("gemma", "decoder", "GemmaForCausalLM", "GemmaConfig", **_DEC),
    _e("gpt_neox", "decoder", "GPTNeoXForCausalLM", "GPTNeoXConfig", **_TEXT),
    _e(
        "opt",
        "decoder",
        "OPTForCausalLM",
        "OPTConfig",
        vocab_size=256,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        ffn_dim=128,
        word_embed_proj_dim=64,
        max_position_embeddings=128,
    ),
    _e("phi", "decoder", "PhiForCausalLM", "PhiConfig", **_TEXT),
    _e(
        "bloom",
        "decoder",
        "BloomForCausalLM",
        "BloomConfig",
        vocab_size=256,
        hidden_size=64,
        n_layer=2,
        n_head=2,
    ),
    # encoders, one per task head
    _e("bert-mlm", "encoder", "BertForMaskedLM", "BertConfig", **_TEXT),
    _e("bert-cls", "encoder", "BertForSequenceClassification", "BertConfig", **_TEXT),
    _e("roberta-tok", "encoder", "RobertaForTokenClassification", "RobertaConfig", **_TEXT),
    _e(
        "distilbert-qa",
        "encoder",
        "DistilBertForQuestionAnswering",
        "DistilBertConfig",
        vocab_size=256,
        dim=64,
        n_layers=2,
        n_heads=2,
        hidden_dim=128,
    ),
    _e("albert", "encoder", "AlbertForMaskedLM", "AlbertConfig", **_TEXT, embedding_size=32),
    _e("electra", "encoder", "ElectraForPreTraining", "ElectraConfig", **_TEXT),
    _e("deberta-v2-mc", "encoder", "DebertaV2ForMultipleChoice", "DebertaV2Config", **_TEXT),
    _e("layoutlm", "encoder", "LayoutLMForTokenClassification", "LayoutLMConfig", **_TEXT),
    # encoder-decoders
    _e(
        "t5",
        "encoder-decoder",
        "T5ForConditionalGeneration",
        "T5Config",
        vocab_size=256,
        d_model=64,
        d_ff=128,
        d_kv=32,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
    ),
    _e(
        "bart",
        "encoder-decoder",
        "BartForConditionalGeneration",
        "BartConfig",
        vocab_size=256,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=128,
    ),
    # mixture of experts
    _e(
        "mixtral",
        "moe",
        "MixtralForCausalLM",
        "MixtralConfig",
        **_DEC,
        num_local_experts=4,
        num_experts_per_tok=2,
    ),
    _e(
        "qwen2-moe",
        "moe",
        "Qwen2MoeForCausalLM",
        "Qwen2MoeConfig",
        **_DEC,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=64,
        shared_expert_intermediate_size=64,
    ),
    # state-space
    _e(
        "mamba",
        "state-space",
        "MambaForCausalLM",
        "MambaConfig",
        vocab_size=256,
        hidden_size=64,
        state_size=8,
        num_hidden_layers=2,
        expand=2,
        conv_kernel=4,
    ),
    _e(
        "mamba2",
        "state-space",
        "Mamba2ForCausalLM",
        "Mamba2Config",
        vocab_size=256,
        hidden_size=64,
        state_size=16,
        num_hidden_layers=2,
        expand=2,
        head_dim=16,
        num_heads=8,
        n_groups=1,
        conv_kernel=4,
        chunk_size=16,
    ),
    # vision
    _e("vit", "vision", "ViTForImageClassification", "ViTConfig", **_VIT),
    _e("deit", "vision", "DeiTForImageClassification", "DeiTConfig", **_VIT),
    _e("dinov2", "vision", "Dinov2Model", "Dinov2Config", **_VIT),
    _e(
        "resnet",
        "vision",
        "ResNetForImageClassification",
        "ResNetConfig",
        embedding_size=16,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        layer_type="basic",
    ),
    _e(
        "convnext",
        "vision",
        "ConvNextForImageClassification",
        "ConvNextConfig",
        num_stages=2,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        image_size=32,
    ),
    _e(
        "swin",
        "vision",
        "SwinForImageClassification",
        "SwinConfig",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[1, 2],
        window_size=4,
    ),
    _e(
        "segformer",
        "vision",
        "SegformerForSemanticSegmentation",
        "SegformerConfig",
        image_size=32,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        num_attention_heads=[1, 2],
        decoder_hidden_size=32,
        patch_sizes=[7, 3],
        strides=[4, 2],
        mlp_ratios=[2, 2],
    ),
    # audio
    _e("wav2vec2-ctc", "audio", "Wav2Vec2ForCTC", "Wav2Vec2Config", **_WAV),
    _e("hubert", "audio", "HubertForSequenceClassification", "HubertConfig", **_WAV),
    _e(
        "whisper",
        "audio",
        "WhisperForConditionalGeneration",
        "WhisperConfig",
        vocab_size=256,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        num_mel_bins=16,
        max_source_positions=32,
        max_target_positions=64,
        decoder_start_token_id=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    ),
    # multimodal
    _e(
        "clip",
        "multimodal",
        "CLIPModel",
        "CLIPConfig",
        text_config={**_TEXT, "max_position_embeddings": 64},
        vision_config={**_VIT},
        projection_dim=32,
    ),
    _e(
        "siglip",
        "multimodal",
        "SiglipModel",
        "SiglipConfig",
        text_config={**_TEXT, "max_position_embeddings": 64},
        vision_config={**_VIT},
    ),
    _e(
        "llava",
        "multimodal",
        "LlavaForConditionalGeneration",
        "LlavaConfig",
        text_config={"model_type": "llama", **_DEC},
        vision_config={"model_type": "clip_vision_model", **_VIT, "projection_dim": 32},
        image_token_index=250,
    ),
    # round two: video, spectrograms, dynamic-resolution VLMs, time series, detection, an
    # optional-dependency tokenizer, and newer architectures of every family
    _e(
        "videomae",
        "video",
        "VideoMAEForVideoClassification",
        "VideoMAEConfig",
        **_VIT,
        num_frames=4,
        tubelet_size=2,
    ),
    _e(
        "vivit",
        "video",
        "VivitForVideoClassification",
        "VivitConfig",
        **_BLOCKS,
        image_size=32,
        num_frames=4,
        tubelet_size=[2, 8, 8],
        sibling="videomae",
    ),
    _e(
        "timesformer",
        "video",
        "TimesformerForVideoClassification",
        "TimesformerConfig",
        **_VIT,
        num_frames=4,
        sibling="videomae",
    ),
    _e(
        "ast",
        "audio",
        "ASTForAudioClassification",
        "ASTConfig",
        **_BLOCKS,
        patch_size=8,
        frequency_stride=8,
        time_stride=8,
        max_length=32,
        num_mel_bins=16,
    ),
    _e(
        "qwen2-vl",
        "multimodal",
        "Qwen2VLForConditionalGeneration",
        "Qwen2VLConfig",
        text_config={
            **_DEC,
            "model_type": "qwen2_vl_text",
            "bos_token_id": 1,
            "eos_token_id": 2,
            "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]},
        },
        vision_config={
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 64,
            "num_heads": 2,
            "patch_size": 4,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
            "mlp_ratio": 2,
        },
        image_token_id=250,
        video_token_id=251,
        vision_start_token_id=252,
        vision_end_token_id=253,
    ),
    _e(
        "glm4v",
        "multimodal",
        "Glm4vForConditionalGeneration",
        "Glm4vConfig",
        text_config={
            **_DEC,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
            "rope_parameters": {
                "rope_type": "default",
                "mrope_section": [2, 3, 3],
                "partial_rotary_factor": 0.5,
            },
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "out_hidden_size": 64,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 4,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
            "image_size": 32,
        },
        image_token_id=250,
        video_token_id=251,
        image_start_token_id=252,
        image_end_token_id=253,
        sibling="qwen2-vl",
    ),
    _e(
        "paligemma",
        "multimodal",
        "PaliGemmaForConditionalGeneration",
        "PaliGemmaConfig",
        text_config={"model_type": "gemma", **_DEC},
        vision_config={"model_type": "siglip_vision_model", **_VIT, "projection_dim": 64},
        image_token_index=250,
        projection_dim=64,
        hidden_size=64,
        sibling="llava",
    ),
    _e(
        "time-series-transformer",
        "time-series",
        "TimeSeriesTransformerForPrediction",
        "TimeSeriesTransformerConfig",
        **_SERIES,
        input_size=1,
    ),
    _e(
        "informer",
        "time-series",
        "InformerForPrediction",
        "InformerConfig",
        **_SERIES,
        input_size=2,
        sibling="time-series-transformer",
    ),
    _e(
        "patchtst",
        "time-series",
        "PatchTSTForPrediction",
        "PatchTSTConfig",
        num_input_channels=3,
        context_length=16,
        patch_length=4,
        patch_stride=4,
        d_model=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        ffn_dim=64,
        prediction_length=4,
    ),
    _e(
        "detr",
        "detection",
        "DetrForObjectDetection",
        "DetrConfig",
        use_timm_backbone=False,
        backbone_config={
            "model_type": "resnet",
            "embedding_size": 16,
            "hidden_sizes": [16, 32],
            "depths": [1, 1],
            "layer_type": "basic",
            "out_features": ["stage2"],
        },
        num_queries=8,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        num_labels=4,
    ),
    _e(
        "xlm",
        "encoder",
        "XLMWithLMHeadModel",
        "XLMConfig",
        vocab_size=256,
        emb_dim=64,
        n_layers=2,
        n_heads=2,
        max_position_embeddings=128,
        tokenizer="xlm",
    ),
    _e("qwen3", "decoder", "Qwen3ForCausalLM", "Qwen3Config", **_DEC, sibling="llama"),
    _e(
        "phi3",
        "decoder",
        "Phi3ForCausalLM",
        "Phi3Config",
        **_TEXT,
        num_key_value_heads=1,
        pad_token_id=0,
        sibling="llama",
    ),
    _e("gemma2", "decoder", "Gemma2ForCausalLM", "Gemma2Config", **_DEC, sibling="gemma"),
    _e(
        "deepseek-v3",
        "moe",
        "DeepseekV3ForCausalLM",
        "DeepseekV3Config",
        **{**_DEC, "head_dim": 64, "num_key_value_heads": 2},
        moe_intermediate_size=32,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        q_lora_rank=24,
        qk_nope_head_dim=16,
        v_head_dim=16,
        sibling="mixtral",
        # The published latent sizes: vLLM's CPU MLA kernel takes only 512 + 64 = 576
        # (transformers' rotary uses head_dim, which must match the rope part).
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        # As the published config says: transformers ignores these, vLLM builds the router's
        # e_score_correction_bias (which transformers saves) only for noaux_tc.
        topk_method="noaux_tc",
        scoring_func="sigmoid",
    ),
    _e(
        "olmoe",
        "moe",
        "OlmoeForCausalLM",
        "OlmoeConfig",
        **_DEC,
        num_experts=4,
        num_experts_per_tok=2,
        sibling="mixtral",
    ),
    _e(
        "jamba",
        "hybrid",
        "JambaForCausalLM",
        "JambaConfig",
        **_TEXT,
        num_key_value_heads=1,
        num_experts=2,
        num_experts_per_tok=1,
        expert_layer_period=2,
        expert_layer_offset=1,
        attn_layer_period=2,
        attn_layer_offset=1,
        mamba_d_state=8,
        mamba_d_conv=4,
        mamba_expand=2,
    ),
    _e("falcon-h1", "hybrid", "FalconH1ForCausalLM", "FalconH1Config", **_DEC, sibling="jamba"),
    _e(
        "rwkv",
        "recurrent",
        "RwkvForCausalLM",
        "RwkvConfig",
        vocab_size=256,
        hidden_size=64,
        num_hidden_layers=2,
        attention_hidden_size=64,
        intermediate_size=128,
        context_length=128,
    ),
    _e("mpnet", "encoder", "MPNetForMaskedLM", "MPNetConfig", **_TEXT, sibling="bert-mlm"),
    _e(
        "mbart",
        "encoder-decoder",
        "MBartForConditionalGeneration",
        "MBartConfig",
        vocab_size=256,
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=128,
        sibling="bart",
    ),
    _e("beit", "vision", "BeitForImageClassification", "BeitConfig", **_VIT, sibling="vit"),
    _e("wavlm", "audio", "WavLMForCTC", "WavLMConfig", **_WAV, sibling="wav2vec2-ctc"),
    # round three: what processors send beside the pixels (image sizes and any-resolution
    # tiles, the Q-Former's instruction, split images with their pixel mask), neural audio
    # codecs, foundation forecasters with ragged series, BatchNorm at batch 1 in train mode
    _e(
        "llava-next",
        "multimodal",
        "LlavaNextForConditionalGeneration",
        "LlavaNextConfig",
        text_config={"model_type": "llama", **_DEC},
        vision_config={"model_type": "clip_vision_model", **_VIT, "projection_dim": 32},
        image_token_index=250,
        image_grid_pinpoints=[[32, 32], [32, 64], [64, 32]],
    ),
    _e(
        "llava-onevision",
        "multimodal",
        "LlavaOnevisionForConditionalGeneration",
        "LlavaOnevisionConfig",
        text_config={"model_type": "qwen2", **_DEC},
        vision_config={"model_type": "siglip_vision_model", **_VIT},
        image_token_index=250,
        video_token_index=251,
        image_grid_pinpoints=[[32, 32], [32, 64], [64, 32]],
        vision_feature_layer=-1,
        sibling="llava-next",
    ),
    _e(
        "instructblip",
        "multimodal",
        "InstructBlipForConditionalGeneration",
        "InstructBlipConfig",
        vision_config={**_VIT},
        qformer_config={**_TEXT, "encoder_hidden_size": 64},
        text_config={"model_type": "llama", **_DEC},
        num_query_tokens=4,
        image_token_index=250,
    ),
    _e(
        "idefics3",
        "multimodal",
        "Idefics3ForConditionalGeneration",
        "Idefics3Config",
        text_config={"model_type": "llama", **_DEC},
        vision_config={**_VIT},
        image_token_id=250,
        scale_factor=2,
    ),
    _e(
        "encodec",
        "audio",
        "EncodecModel",
        "EncodecConfig",
        hidden_size=32,
        num_filters=8,
        num_residual_layers=1,
        upsampling_ratios=[4, 2],
        codebook_size=64,
        codebook_dim=32,
        num_lstm_layers=1,
        audio_channels=1,
        sampling_rate=800,
        target_bandwidths=[1.5],
    ),
    _e(
        "dac",
        "audio",
        "DacModel",
        "DacConfig",
        encoder_hidden_size=8,
        downsampling_ratios=[2, 4],
        decoder_hidden_size=32,
        n_codebooks=2,
        codebook_size=64,
        codebook_dim=8,
        hidden_size=32,
        upsampling_ratios=[4, 2],
        sibling="encodec",
    ),
    _e(
        "timesfm",
        "time-series",
        "TimesFmModelForPrediction",
        "TimesFmConfig",
        patch_length=8,
        context_length=32,
        horizon_length=8,
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=64,
        head_dim=16,
        num_attention_heads=2,
    ),
    _e(
        "timesfm2.5",
        "time-series",
        "TimesFm2_5ModelForPrediction",
        "TimesFm2_5Config",
        patch_length=8,
        context_length=32,
        horizon_length=8,
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=64,
        head_dim=16,
        num_attention_heads=2,
        num_key_value_heads=2,
        output_quantile_len=16,
        max_position_embeddings=64,
        sibling="timesfm",
    ),
    # Speech and audio-language models, a third codec, a second patch forecaster: features
    # sized from sub-configs, feature masks, audio placeholders counted by the audio tower.
    _e(
        "mimi",
        "audio",
        "MimiModel",
        "MimiConfig",
        hidden_size=32,
        num_filters=8,
        num_residual_layers=1,
        upsampling_ratios=[4, 2],
        codebook_size=64,
        codebook_dim=32,
        vector_quantization_hidden_dimension=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=64,
        sampling_rate=800,
        frame_rate=12.5,
        num_quantizers=4,
        num_semantic_quantizers=1,
        sliding_window=16,
        max_position_embeddings=128,
        upsample_groups=32,
    ),
    _e(
        "qwen2-audio",
        "audio",
        "Qwen2AudioForConditionalGeneration",
        "Qwen2AudioConfig",
        audio_config={
            "num_mel_bins": 16,
            "encoder_layers": 2,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "d_model": 32,
            "max_source_positions": 32,
        },
        text_config={"model_type": "qwen2", **_DEC},
        audio_token_index=250,
    ),
    _e("seamless-m4t", "audio", "SeamlessM4TForSpeechToText", "SeamlessM4TConfig", **_SEAMLESS),
    _e(
        "seamless-m4t-v2",
        "audio",
        "SeamlessM4Tv2ForSpeechToText",
        "SeamlessM4Tv2Config",
        **_SEAMLESS,
        char_vocab_size=64,
        sibling="seamless-m4t",
    ),
    _e(
        "parakeet",
        "audio",
        "ParakeetForCTC",
        "ParakeetCTCConfig",
        vocab_size=32,
        pad_token_id=31,
        encoder_config={
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "num_mel_bins": 16,
            "subsampling_conv_channels": 8,
            "conv_kernel_size": 9,
        },
    ),
    # label_length (the decoder's look-back) must fit in context_length.
    _e(
        "autoformer",
        "time-series",
        "AutoformerForPrediction",
        "AutoformerConfig",
        **_SERIES,
        input_size=1,
        label_length=4,
        sibling="time-series-transformer",
    ),
    _e(
        "patchtsmixer",
        "time-series",
        "PatchTSMixerForPrediction",
        "PatchTSMixerConfig",
        context_length=16,
        patch_length=4,
        patch_stride=4,
        num_input_channels=3,
        d_model=16,
        num_layers=2,
        prediction_length=4,
        sibling="patchtst",
    ),
    # vision-language siblings of every input path above (video towers too), a text tower
    # with 16 positions (open-vocabulary detection), 4-channel images (matting)
    _e(
        "qwen2.5-vl",
        "multimodal",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen2_5_VLConfig",
        text_config={
            **_DEC,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]},
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "out_hidden_size": 64,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 4,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
            "window_size": 16,
            "fullatt_block_indexes": [1],
        },
        image_token_id=250,
        video_token_id=251,
        vision_start_token_id=252,
        vision_end_token_id=253,
        sibling="qwen2-vl",
    ),
    _e(
        "llava-next-video",
        "multimodal",
        "LlavaNextVideoForConditionalGeneration",
        "LlavaNextVideoConfig",
        text_config={"model_type": "llama", **_DEC},
        vision_config={"model_type": "clip_vision_model", **_VIT, "projection_dim": 32},
        image_token_index=250,
        video_token_index=251,
        image_grid_pinpoints=[[32, 32], [32, 64], [64, 32]],
        sibling="llava-next",
    ),
    _e(
        "video-llava",
        "multimodal",
        "VideoLlavaForConditionalGeneration",
        "VideoLlavaConfig",
        text_config={"model_type": "llama", **_DEC},
        vision_config={"model_type": "clip_vision_model", **_VIT, "projection_dim": 32},
        image_token_index=250,
        video_token_index=251,
    ),
    _e(
        "instructblip-video",
        "multimodal",
        "InstructBlipVideoForConditionalGeneration",
        "InstructBlipVideoConfig",
        vision_config={**_VIT},
        qformer_config={**_TEXT, "encoder_hidden_size": 64},
        text_config={"model_type": "llama", **_DEC},
        num_query_tokens=4,
        video_token_index=250,
    ),
    _e(
        "idefics2",
        "multimodal",
        "Idefics2ForConditionalGeneration",
        "Idefics2Config",
        text_config={"model_type": "llama", **_DEC},
        vision_config={**_VIT},
        perceiver_config={
            "hidden_size": 64,
            "resampler_n_latents": 4,
            "resampler_depth": 1,
            "resampler_n_heads": 2,
            "resampler_head_dim": 16,
            "num_key_value_heads": 1,
        },
        image_token_id=250,
        sibling="idefics3",
    ),
    _e(
        "smolvlm",
        "multimodal",
        "SmolVLMForConditionalGeneration",
        "SmolVLMConfig",
        text_config={"model_type": "llama", **_DEC},
        vision_config={**_VIT},
        image_token_id=250,
        scale_factor=2,
        sibling="idefics3",
    ),
    _e(
        "mllama",
        "multimodal",
        "MllamaForConditionalGeneration",
        "MllamaConfig",
        text_config={
            **_DEC,
            "cross_attention_layers": [1],
            "bos_token_id": 1,
            "eos_token_id": 2,
            "pad_token_id": 0,
        },
        vision_config={
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_global_layers": 1,
            "attention_heads": 2,
            "intermediate_size": 64,
            "vision_output_dim": 64,
            "image_size": 16,
            "patch_size": 8,
            "max_num_tiles": 2,
            "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]],
            "intermediate_layers_indices": [0],
        },
        image_token_index=250,
    ),
    _e(
        "fuyu",
        "multimodal",
        "FuyuForCausalLM",
        "FuyuConfig",
        text_config={"model_type": "persimmon", **_TEXT},
        image_size=32,
        patch_size=8,
        num_channels=3,
        image_token_id=250,
    ),
    _e(
        "owlvit",
        "detection",
        "OwlViTForObjectDetection",
        "OwlViTConfig",
        text_config={**_TEXT, "max_position_embeddings": 16, "bos_token_id": 1, "eos_token_id": 2},
        vision_config={**_VIT},
        projection_dim=64,
    ),
    _e(
        "owlv2",
        "detection",
        "Owlv2ForObjectDetection",
        "Owlv2Config",
        text_config={**_TEXT, "max_position_embeddings": 16, "bos_token_id": 1, "eos_token_id": 2},
        vision_config={**_VIT},
        projection_dim=64,
        sibling="owlvit",
    ),
    _e(
        "vitmatte",
        "vision",
        "VitMatteForImageMatting",
        "VitMatteConfig",
        backbone_config={
            "model_type": "vitdet",
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 64,
            "pretrain_image_size": 64,
            "patch_size": 16,
            "num_channels": 4,
            "out_features": ["stage2"],
        },
        hidden_size=32,
        convstream_hidden_sizes=[8, 16, 32],
        fusion_hidden_sizes=[32, 16, 8, 8],
    ),
    # At 32 pixels the last feature maps are 1x1: train mode needs batch_size 2 or more.
    _e(
        "mobilenet-v2",
        "vision",
        "MobileNetV2ForImageClassification",
        "MobileNetV2Config",
        image_size=32,
        depth_multiplier=0.25,
    ),
    _e(
        "beit-seg",
        "vision",
        "BeitForSemanticSegmentation",
        "BeitConfig",
        **{**_VIT, "num_hidden_layers": 4},
        out_indices=[1, 2, 3, 4],
        pool_scales=[1, 2],
        num_labels=4,
        auxiliary_channels=16,
        sibling="mobilenet-v2",
    ),
)


def by_name() -> dict[str, ZooEntry]:
    return {e.name: e for e in ZOO}


def select(names: Iterable[str] | None) -> list[ZooEntry]:
    table = by_name()
    if not names:
        return list(ZOO)
    out = []
    for name in names:
        if name not in table:
            raise UsageError(f"unknown zoo model {name!r} (valid: {choices(table)})")
        out.append(table[name])
    return out


def build_zoo(out_dir: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Build (or keep, when already built by this version) each selected entry."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_build_one(entry, out_dir) for entry in select(names)]


def _build_one(entry: ZooEntry, out_dir: Path) -> Path:
    target = out_dir / entry.name
    marker = target / MARKER
    stamp = {"version": ZOO_VERSION, "arch": entry.arch, "family": entry.family}
    if marker.exists():
        try:
            if read_json(marker) == stamp:
                return target
        except Exception:  # a broken marker: rebuild below
            pass
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    config = getattr(transformers, entry.config)(**entry.kwargs)
    config.architectures = [entry.arch]
    model = getattr(transformers, entry.arch)(config)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=out_dir))
    try:
        model.save_pretrained(tmp)
        if entry.tokenizer is not None:
            from kerneltracer.worker.frameworks.huggingface.zoo_tokenizers import WRITERS

            WRITERS[entry.tokenizer](tmp)
        atomic_write_json(tmp / MARKER, stamp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
