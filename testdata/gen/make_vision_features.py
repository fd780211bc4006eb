#!/usr/bin/env python3
"""Write transformers' image features of multimodal convert fixtures, for verify/forward's vision towers.

For each fixture named with --only (a fixture of make_convert_fixtures.py with a vision tower):
  1. assemble its model folder (make_convert_fixtures.assemble) and load it with its transformers class in
     float32, eager attention;
  2. draw the fixed image (fixed_image below: an RGB pattern of integers, no randomness) at the size of the
     fixture's entry in IMAGES, a size the processor does not resize (so that the Go side only rescales and
     normalises it), and preprocess it with the fixture's image processor (AutoImageProcessor on the folder's
     preprocessor_config.json, the slow Python implementation);
  3. write into <fixture>/mmproj/:
       pixel_values.f32    the preprocessed image as float32 little-endian [3, height, width] (channel planes,
                           the layout of llama.cpp's clip inp_raw; the Qwen towers' flattened patches are put back
                           in image order, one temporal copy);
       image_features.f32  the projector's output (what the language model receives), float32 little-endian
                           [tokens, width] in the processor's token order;
       image.json          shapes, the image pattern, sha256 of both files, versions and the calls made.

  PYTHONPATH=<pillow> python testdata/gen/make_vision_features.py --fixtures testdata/convert --only gemma3mm qwen2vl qwen25vl qwen3vl mistral3 pixtral

Needs Pillow (the processors' resize) beside the fixtures' packages.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
from collections import OrderedDict

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Image size (height, width) per fixture: the processor's own target size (Gemma 3: size; Pixtral: within
# longest_edge, multiples of patch × merge) or, for Qwen2-VL and Qwen2.5-VL, a multiple of patch × merge (28)
# above min_pixels that smart_resize keeps and that spans more than one attention window (window_size 112 px);
# for Qwen3-VL a multiple of 32 above its 65536 minimum pixels, whose 16 × 20 patches resize the 4 × 4 position table;
# SmolVLM's tower size (processed without resizing or splitting, as llama.cpp's preprocessor leaves an image of the
# tower's size); LFM2-VL's 18 × 20 patches (within its token limits, multiples of patch × downsample factor, one tile),
# which resize the 16 × 16 position table; InternVL's and GLM-4.1V's tower size (GLM-4.1V's patch grid its
# position table's: llama.cpp resizes the table bicubically, which verify/forward does not implement).
IMAGES = {"gemma3mm": (28, 28), "qwen2vl": (140, 196), "qwen25vl": (140, 196), "qwen3vl": (256, 320), "mistral3": (28, 56),
          "pixtral": (48, 64), "smolvlm": (64, 64), "lfm2vl": (288, 320),
          "internvl": (56, 56), "glm4v": (4, 4), "glm4vmoe": (4, 4),
          "gemma4": (96, 144), "gemma4moe": (96, 144)}

PATTERN = "r = (37x + 11y) mod 256, g = (17x + 53y + 80) mod 256, b = (xy + 3x + 160) mod 256 (x column, y row)"


def fixed_image(h, w):
    y, x = np.mgrid[0:h, 0:w].astype(np.int64)
    r = (37 * x + 11 * y) % 256
    g = (17 * x + 53 * y + 80) % 256
    b = (x * y + 3 * x + 160) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)  # HWC


def sha256(b):
    return hashlib.sha256(b).hexdigest()


# Gemma 3's fixture pools with a kernel of 1 (2 × 2 patches, mm_tokens_per_image 4); its features are also
# computed with mm_tokens_per_image 1 (a kernel of 2, as the real models' 4 pools 64 × 64 patches) into
# image_features_pool2.f32, which verify/forward compares with clip.vision.projector.scale_factor set to 2.
POOL2 = {"gemma3mm": {"mm_tokens_per_image": 1}}


# LFM2-VL's vision_feature_layer -2 leaves the tower's last block unused: llama.cpp's converter writes a block count
# one less (the last block's tensors unused), transformers runs every block; its features are computed with the
# tower cut as llama.cpp runs it (the post-LayerNorm kept).
# Gemma 4's projector conversion writes no clip.use_gelu, so llama.cpp's clip loader gives its vision blocks GELU-quick
# (x·σ(1.702x)) where transformers uses gelu_pytorch_tanh; its features are computed with that activation.
TOWER = {"lfm2vl": {"vision_config.num_hidden_layers": 2}, "gemma4": {"vision_config.hidden_activation": "quick_gelu"},
         "gemma4moe": {"vision_config.hidden_activation": "quick_gelu"}}


# llama.cpp's InternVL graph appends the class token after the patches and adds the position table's rows in that
# order (patch i gets row i, the class token the last row) where transformers puts the class token first with row 0;
# its features are computed with the table's rows rotated so that transformers assigns them as llama.cpp does.
def llamacpp_internvl_positions(model):
    pos = model.model.vision_tower.embeddings.position_embeddings
    pos.data = torch.cat([pos.data[:, -1:], pos.data[:, :-1]], dim=1)


ADJUST = {"internvl": llamacpp_internvl_positions}


@torch.no_grad()
def features(name, folder, spec, img, overrides=None):
    from PIL import Image
    proc = None if name in ("lfm2vl", "glm4v", "glm4vmoe", "gemma4", "gemma4moe") else transformers.AutoImageProcessor.from_pretrained(folder, backend="pil")
    kw = {}
    if overrides:
        cfg = transformers.AutoConfig.from_pretrained(folder)
        for k, v in overrides.items():
            obj = cfg
            *path, k = k.split(".")
            for part in path:
                obj = getattr(obj, part)
            setattr(obj, k, v)
        kw["config"] = cfg
    model = getattr(transformers, spec["cls"]).from_pretrained(folder, dtype=torch.float32, attn_implementation="eager", **kw)
    model.eval()
    if name in ADJUST:
        ADJUST[name](model)
    pil = Image.fromarray(img)
    h, w = img.shape[:2]
    if name in ("qwen2vl", "qwen25vl", "qwen3vl"):
        out = proc(images=[pil], return_tensors="pt")
        pv, thw = out["pixel_values"], out["image_grid_thw"]
        feats = model.get_image_features(pixel_values=pv, image_grid_thw=thw)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0)
        if name == "qwen3vl":
            # the deepstack mergers' features follow each token's own, as llama.cpp concatenates them
            deep = model.get_image_features(pixel_values=pv, image_grid_thw=thw).deepstack_features
            feats = torch.cat([feats] + [torch.cat(list(d), dim=0) for d in deep], dim=-1)
        t, gh, gw = [int(v) for v in thw[0]]
        m, p, tp = proc.merge_size, proc.patch_size, proc.temporal_patch_size
        x = pv.numpy().reshape(t, gh // m, gw // m, m, m, 3, tp, p, p)[0, :, :, :, :, :, 0]
        chw = x.transpose(4, 0, 2, 5, 1, 3, 6).reshape(3, gh * p, gw * p)
        call = "get_image_features(pixel_values, image_grid_thw)"
    elif name in ("mistral3", "pixtral"):
        out = proc(images=[pil], return_tensors="pt")
        pv = out["pixel_values"]
        sizes = torch.tensor([[h, w]])
        feats = model.get_image_features(pixel_values=pv, image_sizes=sizes)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0) if isinstance(feats, (list, tuple)) else feats[0]
        chw = pv[0, :, :h, :w].numpy()
        call = "get_image_features(pixel_values, image_sizes)"
    elif name == "smolvlm":
        out = proc(images=[pil], return_tensors="pt", do_resize=False, do_image_splitting=False)
        pv = out["pixel_values"]
        feats = model.get_image_features(pixel_values=pv, pixel_attention_mask=out["pixel_attention_mask"])
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0) if isinstance(feats, (list, tuple)) else feats
        feats = feats.reshape(-1, feats.shape[-1])
        chw = pv[0, 0].numpy()
        call = "get_image_features(pixel_values, pixel_attention_mask) of processor(do_resize=False, do_image_splitting=False)"
    elif name in ("glm4v", "glm4vmoe"):
        # the fixture's preprocessor_config.json is the real model's (patch 14) while its tower's patches are 2
        # pixels: Glm4vImageProcessor's steps for an image it keeps are done here with the tower's sizes (rescale,
        # normalise, each patch's (channel, frame, row, column) values for two identical frames, patches grouped by
        # 2 × 2 merge blocks)
        cfg = json.load(open(os.path.join(folder, "preprocessor_config.json")))
        vc = model.config.vision_config
        p, m, tp = vc.patch_size, vc.spatial_merge_size, vc.temporal_patch_size
        mean, std = np.array(cfg["image_mean"], np.float32), np.array(cfg["image_std"], np.float32)
        chw = ((img.astype(np.float32) / 255 - mean) / std).transpose(2, 0, 1)
        gh, gw = h // p, w // p
        x = chw.reshape(3, gh // m, m, p, gw // m, m, p).transpose(1, 4, 2, 5, 0, 3, 6)
        x = np.repeat(x[:, :, :, :, :, None], tp, axis=5).reshape(gh * gw, 3 * tp * p * p)
        pv, thw = torch.from_numpy(np.ascontiguousarray(x)), torch.tensor([[1, gh, gw]])
        feats = model.get_image_features(pixel_values=pv, image_grid_thw=thw)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0)
        call = "get_image_features(pixel_values, image_grid_thw)"
    elif name in ("gemma4", "gemma4moe"):
        # Gemma 4's processor rescales only (the model maps [0, 1] to [-1, 1]); its patches of (row, column,
        # channel) values and their (x, y) positions are made here for an image it keeps (multiples of patch ×
        # pooling kernel)
        vc = model.config.vision_config
        p = vc.patch_size
        chw = (img.astype(np.float32) / 255).transpose(2, 0, 1)
        gh, gw = h // p, w // p
        patches = chw.reshape(3, gh, p, gw, p).transpose(1, 3, 2, 4, 0).reshape(gh * gw, p * p * 3)
        yy, xx = np.mgrid[0:gh, 0:gw]
        pos = torch.from_numpy(np.stack([xx, yy], axis=-1).reshape(gh * gw, 2))[None]
        pv = torch.from_numpy(np.ascontiguousarray(patches))[None]
        feats = model.get_image_features(pixel_values=pv, image_position_ids=pos)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0) if isinstance(feats, (list, tuple)) else feats.reshape(-1, feats.shape[-1])
        call = "get_image_features(pixel_values, image_position_ids)"
    elif name == "lfm2vl":
        # Lfm2VlImageProcessor needs torchvision: its steps for an image it neither resizes nor tiles are done here
        # (rescale, normalise with the preprocessor's mean and std, NaFlex patches of (row, column, channel) values)
        cfg = json.load(open(os.path.join(folder, "preprocessor_config.json")))
        p = cfg["encoder_patch_size"]
        mean, std = np.array(cfg["image_mean"], np.float32), np.array(cfg["image_std"], np.float32)
        chw = ((img.astype(np.float32) / 255 - mean) / std).transpose(2, 0, 1)
        gh, gw = h // p, w // p
        patches = chw.reshape(3, gh, p, gw, p).transpose(1, 3, 2, 4, 0).reshape(gh * gw, p * p * 3)
        pv = torch.from_numpy(np.ascontiguousarray(patches))[None]
        shapes, mask = torch.tensor([[gh, gw]]), torch.ones(1, gh * gw, dtype=torch.bool)
        feats = model.get_image_features(pixel_values=pv, spatial_shapes=shapes, pixel_attention_mask=mask)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = torch.cat(list(feats), dim=0) if isinstance(feats, (list, tuple)) else feats.reshape(-1, feats.shape[-1])
        call = "get_image_features(pixel_values, spatial_shapes, pixel_attention_mask)"
    else:
        out = proc(images=[pil], return_tensors="pt")
        pv = out["pixel_values"]
        feats = model.get_image_features(pixel_values=pv)
        feats = feats.pooler_output if hasattr(feats, "pooler_output") else feats
        feats = feats[0]
        chw = pv[0].numpy()
        call = "get_image_features(pixel_values)"
    assert chw.shape == (3, h, w), chw.shape
    return np.ascontiguousarray(chw, dtype="<f4"), np.ascontiguousarray(feats.float().numpy(), dtype="<f4"), call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixtures", required=True, help="testdata/convert")
    ap.add_argument("--only", nargs="+", required=True)
    args = ap.parse_args()
    import make_convert_fixtures as mk
    fixtures = os.path.abspath(args.fixtures)
    for name in args.only:
        spec = mk.FIXTURES[name]
        h, w = IMAGES[name]
        img = fixed_image(h, w)
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, spec.get("dir_name", name))
            mk.assemble(fixtures, name, folder)
            pv, feats, call = features(name, folder, spec, img, TOWER.get(name))
            if name in POOL2:
                _, pooled, _ = features(name, folder, spec, img, POOL2[name])
        dst = os.path.join(fixtures, name, "mmproj")
        os.makedirs(dst, exist_ok=True)
        pv.tofile(os.path.join(dst, "pixel_values.f32"))
        feats.tofile(os.path.join(dst, "image_features.f32"))
        info = OrderedDict()
        info["image"] = OrderedDict([("height", h), ("width", w), ("pattern", PATTERN)])
        info["pixel_values"] = OrderedDict([("shape", list(pv.shape)), ("sha256", sha256(pv.tobytes())),
                                            ("dtype", "float32 little-endian, [3, height, width]")])
        info["image_features"] = OrderedDict([("shape", list(feats.shape)), ("sha256", sha256(feats.tobytes())),
                                              ("dtype", "float32 little-endian, [tokens, width]")])
        if name in POOL2:
            pooled.tofile(os.path.join(dst, "image_features_pool2.f32"))
            info["image_features_pool2"] = OrderedDict([
                ("shape", list(pooled.shape)), ("sha256", sha256(pooled.tobytes())),
                ("config", ", ".join("%s %s" % kv for kv in POOL2[name].items()) + " (a pooling kernel of 2)")])
        if name in ADJUST:
            info["image_features"]["adjusted"] = "position table rows rotated: the class token's row last (llama.cpp's order)"
        if name in TOWER:
            info["image_features"]["config"] = ", ".join("%s %s" % kv for kv in TOWER[name].items())
        info["computed_with"] = OrderedDict([
            ("transformers", transformers.__version__), ("torch", torch.__version__),
            ("processor", "AutoImageProcessor.from_pretrained(folder, backend='pil')(images=[image])"),
            ("load", "%s.from_pretrained(folder, dtype=torch.float32, attn_implementation='eager')" % spec["cls"]),
            ("features", call),
        ])
        mk.write_json(os.path.join(dst, "image.json"), info)
        print(name, pv.shape, feats.shape)


if __name__ == "__main__":
    main()
