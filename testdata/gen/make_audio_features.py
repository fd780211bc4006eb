#!/usr/bin/env python3
"""Write transformers' audio features of the qwen2audio, voxtral and gemma4 convert fixtures, for verify/forward's audio
encoders.

  1. assemble the fixture's model folder (make_convert_fixtures.assemble) and load it with its transformers class in
     float32, eager attention;
  2. make the fixed log-mel input (fixed_mel below, forward.TestMel's pattern: no randomness) of the encoder's
     num_mel_bins × 2·max_source_positions frames (the length Qwen2AudioEncoder requires); for Gemma 4's conformer
     (no position table, no fixed length) GEMMA4_FRAMES frames of the bins its subsampling convolutions take, see
     gemma4_bins;
  3. write into <fixture>/mmproj/:
       input_features.f32  the log-mel input as float32 little-endian [bins, frames];
       audio_features.f32  the projector's output (Qwen2-Audio: multi_modal_projector of audio_tower's
                           last_hidden_state; Voxtral: get_audio_features, with llama.cpp's average pooling of position
                           pairs before the encoder's last LayerNorm, see POOL_BEFORE_NORM; Gemma 4:
                           get_audio_features(input_features, all-ones input_features_mask).pooler_output, the
                           input transposed to transformers' [frames, bins]): what the language model receives,
                           float32 little-endian [tokens, width];
       audio.json          shapes, the pattern, sha256 of both files, versions and the calls made.

  python testdata/gen/make_audio_features.py --fixtures testdata/convert --only qwen2audio voxtral gemma4
"""
import argparse
import hashlib
import os
import sys
import tempfile
from collections import OrderedDict

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PATTERN = "sin(0.37 f + 0.11 b) * 0.8 + 0.1 * ((7 f + 3 b) mod 5) - 0.2 (f frame, b mel bin), in float64, then float32"


def fixed_mel(bins, frames):
    b, f = np.mgrid[0:bins, 0:frames].astype(np.int64)
    return (np.sin(0.37 * f + 0.11 * b) * 0.8 + 0.1 * ((7 * f + 3 * b) % 5) - 0.2).astype("<f4")


# llama.cpp's whisper encoder graph pools position pairs (nn.AvgPool1d(2, 2)) before the post-LayerNorm for Voxtral as
# for Qwen2-Audio (clip_model::audio_has_avgpool), then stacks stack_factor positions; transformers' VoxtralEncoder
# has the pooler but does not call it, so its features have twice as many tokens. Voxtral's are computed with the
# pooling inserted as llama.cpp runs it.
POOL_BEFORE_NORM = {"voxtral"}


# Gemma 4's conformer takes any number of frames: verify feeds it forward.gemma4aFrames (200: 50 positions after the
# two stride-2 convolutions, five chunks of 12 of which the last is padded).
GEMMA4_FRAMES = 200


def gemma4_bins(ac):
    """The mel bins Gemma4AudioSubSampleConvProjection takes: its input projection reads
    (subsampling_conv_channels[0] // 4) · subsampling_conv_channels[1] values, the second convolution's channels over
    a quarter of the bins (128 bins for google/gemma-4-E2B-it's [128, 32]; the shrunken fixture's [8, 4] takes 8, not
    the 128 of input_feat_size that the converter writes as clip.audio.num_mel_bins)."""
    return 4 * (ac.subsampling_conv_channels[0] // 4)


def pool_pairs(module, args):
    x = args[0]
    return (torch.nn.functional.avg_pool1d(x.transpose(1, 2), 2, 2).transpose(1, 2),)


def sha256(b):
    return hashlib.sha256(b).hexdigest()


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True, help="testdata/convert")
    ap.add_argument("--only", nargs="+", required=True)
    args = ap.parse_args()
    import make_convert_fixtures as mk
    fixtures = os.path.abspath(args.fixtures)
    for name in args.only:
        spec = mk.FIXTURES[name]
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, spec.get("dir_name", name))
            mk.assemble(fixtures, name, folder)
            model = getattr(transformers, spec["cls"]).from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
            model.eval()
            ac = model.config.audio_config
            inner = getattr(model, "model", model)  # transformers 5 keeps the towers under .model
            if ac.model_type == "gemma4_audio":
                mel = fixed_mel(gemma4_bins(ac), GEMMA4_FRAMES)
                x = torch.from_numpy(mel.T.copy())[None]
                out = inner.get_audio_features(x, torch.ones(x.shape[:2], dtype=torch.bool))
                feats = out.pooler_output[0].float().numpy()
                call = "get_audio_features(input_features.T[None], all-ones input_features_mask).pooler_output"
            elif name in POOL_BEFORE_NORM:
                inner.audio_tower.layer_norm.register_forward_pre_hook(pool_pairs)
                out = inner.get_audio_features(torch.from_numpy(mel)[None])
                feats = out.pooler_output.float().numpy()
                call = "get_audio_features(input_features), position pairs average-pooled before audio_tower.layer_norm"
            else:
                mel = fixed_mel(ac.num_mel_bins, 2 * ac.max_source_positions)
                hidden = inner.audio_tower(torch.from_numpy(mel)[None]).last_hidden_state
                feats = inner.multi_modal_projector(hidden)[0].float().numpy()
                call = "multi_modal_projector(audio_tower(input_features).last_hidden_state)"
        feats = np.ascontiguousarray(feats, dtype="<f4")
        dst = os.path.join(fixtures, name, "mmproj")
        mel.tofile(os.path.join(dst, "input_features.f32"))
        feats.tofile(os.path.join(dst, "audio_features.f32"))
        info = OrderedDict()
        info["input_features"] = OrderedDict([("shape", list(mel.shape)), ("pattern", PATTERN), ("sha256", sha256(mel.tobytes())),
                                              ("dtype", "float32 little-endian, [mel bins, frames]")])
        info["audio_features"] = OrderedDict([("shape", list(feats.shape)), ("sha256", sha256(feats.tobytes())),
                                              ("dtype", "float32 little-endian, [tokens, width]")])
        info["computed_with"] = OrderedDict([
            ("transformers", transformers.__version__), ("torch", torch.__version__),
            ("load", "%s.from_pretrained(folder, dtype=torch.float32, attn_implementation='eager')" % spec["cls"]),
            ("features", call),
        ])
        mk.write_json(os.path.join(dst, "audio.json"), info)
        print(name, mel.shape, feats.shape)


if __name__ == "__main__":
    main()
