"""Dump the defaults of transformers' config classes as data for arch/configdefaults.json.

Run with transformers 5.24.0 importable:
    python arch/gen/dump_config_defaults.py > arch/configdefaults.json
    python arch/gen/dump_config_defaults.py siglip_vision_model pixtral smolvlm_vision idefics3_vision \
        llama4_vision_model siglip2_vision_model qwen2_audio_encoder voxtral_encoder internvl_vision \
        qwen2_5_omni_vision_encoder qwen2_5_omni_audio_encoder > arch/configdefaults_mm.json
(the second: the vision and audio towers' own config classes, applied to a multimodal checkpoint's vision_config by the
--mmproj conversion; the towers whose model_type is their model's are left out).

llama.cpp's converter reads a model's hyperparameters as AutoConfig.from_pretrained(dir).to_dict()
(conversion/base.py ModelBase.load_hparams), so a key that config.json leaves out has its config
class's default there. For each config.json model_type of the supported families this writes:
  fields      the dataclass fields the class itself declares (not PretrainedConfig's) with a
              plain default (default_factory fields and non-JSON values are left out);
  rope_theta  the rope base its rope standardisation puts in rope_parameters when config.json
              has none (default_theta; for a dict, the "global" one), or null for a class
              without rotary parameters;
  rope_local_theta  the sliding-window layers' base, for a class with two (default_theta["local"]).
Only facts (names and default values) are exported; the derivations of the classes' __post_init__
(head_dim, num_key_value_heads) are code, in arch/autoconfig.go.
gpt_neox is left out: its fixture follows transformers 4.57.6 (see testdata/convert/README.md).
"""
import dataclasses
import json
import math
import sys

import transformers
from transformers import CONFIG_MAPPING, PretrainedConfig

MODEL_TYPES = ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2",
               "gemma3_text", "phi3", "gpt2", "starcoder2", "bert",
               "phi", "nemotron", "minicpm3", "falcon", "stablelm", "olmo2", "granite", "smollm3", "gpt_bigcode", "olmo", "cohere", "exaone4", "seed_oss",
               # waves 3 and 4 (issues 15 and 16); the families without a transformers config class
               # (remote code: InternLM2, DeepSeek V1, SmallThinker, RWKV-6/7, Jina BERT, NeoBERT) are read as
               # config.json has them, as the converter does when AutoConfig fails.
               "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text", "qwen3_next", "qwen3_5",
               "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen3_vl",
               "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "deepseek_v2", "deepseek_v3", "deepseek_v32",
               "deepseek_v4", "gpt_oss", "glm", "glm4", "glm4_moe", "glm4_moe_lite", "llama4", "llama4_text", "mistral3",
               "ministral3", "ministral", "minimax_m2", "lfm2", "lfm2_moe", "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense",
               "hunyuan_v1_moe", "olmoe", "granitemoe", "granitemoeshared", "cohere2", "apertus", "arcee", "dots1",
               "internlm3", "xlm-roberta", "roberta", "camembert", "distilbert", "nomic_bert", "modernbert", "eurobert",
               "t5", "mamba", "falcon_mamba", "mamba2", "jamba", "bamba", "granitemoehybrid", "nemotron_h", "falcon_h1",
               "rwkv", "kimi_linear", "glm4v", "glm4v_text", "glm4v_moe", "glm4v_moe_text", "mistral4",
               "olmo3", "bloom", "mpt", "jais2", "phimoe", "dbrx", "afmoe", "cohere2_moe",
               "granite_swa", "granitemoe_swa", "mellum"]


def plain(v):
    """Whether v is a JSON scalar as json.dumps writes it (None, bool, int, finite float, str)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return v is None or isinstance(v, (bool, int, str))


def main():
    global MODEL_TYPES
    MODEL_TYPES = sys.argv[1:] or MODEL_TYPES
    base = {f.name for f in dataclasses.fields(PretrainedConfig)} if dataclasses.is_dataclass(PretrainedConfig) else set()
    out = {"source": "transformers %s models/<type>/configuration_<type>.py" % transformers.__version__,
           "model_types": {}}
    for mt in MODEL_TYPES:
        cls = CONFIG_MAPPING[mt]
        fields = {}
        for f in dataclasses.fields(cls):
            if f.name in base or f.name.startswith("_") or f.default is dataclasses.MISSING or not plain(f.default):
                continue
            fields[f.name] = f.default
        entry = {"class": cls.__name__, "fields": dict(sorted(fields.items()))}
        rope = cls().to_dict().get("rope_parameters")
        theta = getattr(cls, "default_theta", None)
        if rope is None:
            entry["rope_theta"] = None
        elif isinstance(theta, dict):
            entry["rope_theta"] = theta["global"]
            entry["rope_local_theta"] = theta["local"]
        else:
            entry["rope_theta"] = theta
        out["model_types"][mt] = entry
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
