#!/usr/bin/env python3
"""Records Hugging Face transformers' Qwen3_5ForCausalLM outputs on tiny random checkpoints.

The C++ test model/tests/hf_crosscheck_test.cpp regenerates the same checkpoints (model/tiny.h,
seeded) and compares its logits and greedy tokens against the fixtures this script writes:

    model/tests/data/hf_<case>.safetensors
        tensors  prompt [L] I64, prefill_logits [L, V] F32, greedy [N+1] I64, decode_logits [N, V] F32
        metadata qgpu_fixture=hf-logits, version=1, case, seed, storage, compute, config (JSON),
                 weights_fnv1a64 (of model.safetensors), transformers, torch, python

prefill_logits: one forward over the whole prompt (HF's chunked delta rule, chunk 64, prompts are
longer than one chunk). Then greedy decoding with the cache, one token per forward (the recurrent
path): greedy[0] = argmax(prefill_logits[-1]), decode_logits[i] = logits after feeding greedy[i],
greedy[i+1] = argmax(decode_logits[i]).

Usage (where PyPI is reachable; see ci/requirements-hf.txt):
    python3 -m venv ci/.venv && ci/.venv/bin/pip install -r ci/requirements-hf.txt
    cmake --build build --target qgpu_make_tiny
    ci/.venv/bin/python ci/hf_reference.py --make-tiny build/model/qgpu_make_tiny
Review the diff of model/tests/data before committing regenerated fixtures.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file
from transformers import Qwen3_5ForCausalLM


def text_config(hidden, layer_types, vocab, heads, kv_heads, head_dim, lin_k_heads, lin_v_heads,
                lin_k_dim, lin_v_dim, tie, inter=None):
    return {
        "architectures": ["Qwen3_5ForCausalLM"],
        "model_type": "qwen3_5_text",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": inter or (2 * hidden + hidden // 2),
        "num_hidden_layers": len(layer_types),
        "layer_types": layer_types,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "linear_num_key_heads": lin_k_heads,
        "linear_num_value_heads": lin_v_heads,
        "linear_key_head_dim": lin_k_dim,
        "linear_value_head_dim": lin_v_dim,
        "linear_conv_kernel_dim": 4,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0,
                            "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10],
                            "mrope_interleaved": True},
        "attention_bias": False,
        "attention_dropout": 0.0,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": tie,
        "dtype": "float32",
    }


L, F = "linear_attention", "full_attention"
# Shapes: both layer types in several orders, GQA in both layer kinds, tied and untied heads,
# prompts longer than HF's 64-token chunk (two or three chunks).
CASES = [
    dict(name="mixed4", seed=11, storage="f32", compute="f32", prompt=80, decode=12,
         config=text_config(64, [L, L, L, F], 128, 4, 2, 32, 2, 4, 16, 16, True)),
    dict(name="fullfirst_untied", seed=12, storage="f32", compute="f32", prompt=70, decode=12,
         config=text_config(48, [F, L, F], 112, 2, 2, 32, 2, 2, 16, 24, False)),
    dict(name="deep_gqa", seed=13, storage="f32", compute="f32", prompt=130, decode=10,
         config=text_config(32, [L, F, L, L, F, L], 96, 4, 1, 16, 1, 2, 16, 16, True)),
    dict(name="bf16", seed=14, storage="bf16", compute="bf16", prompt=72, decode=8,
         config=text_config(64, [L, L, L, F], 128, 4, 2, 32, 2, 4, 16, 16, True)),
    # Checkpoints transformers reads in its own way (issue 7); `variant` edits the generated file
    # (apply_variant; model/tests/decoder_test.cpp applies the same edit):
    # a tied config whose file also holds a distinct lm_head (transformers 5 uses the stored head),
    dict(name="tied_distinct_head", seed=15, storage="f32", compute="f32", prompt=70, decode=8,
         variant="head_negated", config=text_config(48, [L, F, L], 112, 2, 2, 32, 2, 2, 16, 16, True)),
    # F16 storage, loaded as float32,
    dict(name="f16", seed=16, storage="f16", compute="f32", prompt=70, decode=8,
         config=text_config(48, [L, L, F], 112, 2, 2, 32, 2, 4, 16, 16, True)),
    # and a tensor the model has no parameter for (an "unexpected key", ignored).
    dict(name="extra_tensor", seed=17, storage="f32", compute="f32", prompt=70, decode=8,
         variant="conv1d_bias", config=text_config(48, [L, F], 112, 2, 2, 32, 2, 2, 16, 16, True)),
]

# The tensor the extra_tensor case adds: one 1.0 per conv channel (a bias the model would feel).
EXTRA_TENSOR = "model.layers.0.linear_attn.conv1d.bias"


def apply_variant(ckpt, variant):
    """Edits model.safetensors of a generated checkpoint; returns the unexpected keys it adds."""
    if not variant:
        return set()
    from safetensors.numpy import load_file
    path = os.path.join(ckpt, "model.safetensors")
    tensors = load_file(path)
    if variant == "head_negated":
        tensors["lm_head.weight"] = -tensors["model.embed_tokens.weight"]
        added = set()
    elif variant == "conv1d_bias":
        channels = tensors["model.layers.0.linear_attn.conv1d.weight"].shape[0]
        tensors[EXTRA_TENSOR] = np.ones(channels, dtype=np.float32)
        added = {EXTRA_TENSOR}
    else:
        raise SystemExit(f"unknown variant {variant}")
    save_file(tensors, path, metadata={"format": "pt"})
    return added


def fnv1a64(data: bytes) -> int:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def load(ckpt, dtype, name, unexpected=frozenset()):
    model, info = Qwen3_5ForCausalLM.from_pretrained(
        ckpt, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    # Every weight must come from the checkpoint: a freshly initialised one would make the
    # comparison meaningless. Unexpected keys are only those the case added on purpose.
    if set(info.get("unexpected_keys") or ()) == set(unexpected):
        info["unexpected_keys"] = []
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{name}: checkpoint and transformers disagree: {bad}")
    return model.eval()


def run_greedy(model, prompt, steps, forced=None):
    """Prefill, then `steps` cached single-token forwards of the greedy (or `forced`) tokens."""
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(prompt)[None], use_cache=True)
        cache = getattr(out, "cache", None) or out.past_key_values
        prefill = out.logits[0].float().numpy()
        greedy = [int(prefill[-1].argmax())]
        decode = []
        for i in range(steps):
            token = forced[i] if forced else greedy[-1]
            out = model(input_ids=torch.tensor([[token]]), cache=cache, use_cache=True)
            cache = getattr(out, "cache", None) or out.past_key_values
            row = out.logits[0, -1].float().numpy()
            decode.append(row)
            greedy.append(int(row.argmax()))
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    return f32(prefill), greedy, f32(np.stack(decode))


def run_case(case, make_tiny, out_dir):
    with tempfile.TemporaryDirectory() as work:
        cfg_path = os.path.join(work, "input_config.json")
        with open(cfg_path, "w") as f:
            json.dump(case["config"], f)
        ckpt = os.path.join(work, "ckpt")
        subprocess.run([make_tiny, cfg_path, ckpt, str(case["seed"]), case["storage"]], check=True)
        with open(os.path.join(ckpt, "model.safetensors"), "rb") as f:
            digest = fnv1a64(f.read())  # of the generated file, before any variant edit
        unexpected = apply_variant(ckpt, case.get("variant"))
        dtype = torch.bfloat16 if case["compute"] == "bf16" else torch.float32
        model = load(ckpt, dtype, case["name"], unexpected)
        if case.get("variant") == "head_negated":
            # The point of the case: transformers must have kept the stored head, not tied it.
            head, embed = model.lm_head.weight, model.model.embed_tokens.weight
            if head.data_ptr() == embed.data_ptr() or torch.equal(head, embed):
                raise SystemExit(f"{case['name']}: transformers tied the head after all")
        vocab = case["config"]["vocab_size"]
        rng = np.random.default_rng(case["seed"])
        prompt = rng.integers(0, vocab, size=case["prompt"], dtype=np.int64)
        prefill, greedy, decode = run_greedy(model, prompt, case["decode"])
        extra = {}
        if case["compute"] == "bf16":
            # bf16 noise floor: HF in fp32 on the same weights, teacher-forced with the bf16 greedy
            # tokens, so the C++ test can require its bf16 error to be no worse than HF's own.
            ref = load(ckpt, torch.float32, case["name"])
            pre32, _, dec32 = run_greedy(ref, prompt, case["decode"], forced=greedy)
            extra = {"prefill_logits_f32ref": pre32, "decode_logits_f32ref": dec32}
    meta = {
        "qgpu_fixture": "hf-logits",
        "version": "1",
        "case": case["name"],
        "seed": str(case["seed"]),
        "storage": case["storage"],
        "compute": case["compute"],
        "config": json.dumps(case["config"]),
        "weights_fnv1a64": f"{digest:016x}",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "attn_implementation": "eager",
        "variant": case.get("variant", ""),
    }
    tensors = {
        "prompt": prompt,
        "prefill_logits": prefill,
        "greedy": np.array(greedy, dtype=np.int64),
        "decode_logits": decode,
        **extra,
    }
    path = os.path.join(out_dir, f"hf_{case['name']}.safetensors")
    save_file(tensors, path, metadata=meta)
    print(f"{path}: prompt {len(prompt)}, greedy {greedy}")


# Qwen3.5's pre-tokeniser regex (qwen35-spec.md §8).
QWEN35_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
TOKENIZER_TRAIN = [
    "The quick brown fox jumps over the lazy dog. It's 2026; we'll see what they've done!",
    "Qwen3.5 runs on GPUs: 4 lanes per warp, 15 registers, 126 words of memory.\n\n  Indented\tline\r\n",
    "Zażółć gęślą jaźń — съешь же ещё этих мягких французских булок. Ünïcödé çåfé naïve",
    "def f(x):\n    return x * 2  # comment\n\n\nint main() { return 0; }",
    "नमस्ते दुनिया, 日本語のテキスト, 한국어 텍스트, emoji 🙂🚀 and e\u0301 combining",
]
TOKENIZER_CASES = TOKENIZER_TRAIN + [
    "I'M HERE, YOU'RE THERE, THEY'LL GO, 'S 'T 'D",
    "numbers 1234567890 and 3.14159, x=-1e-9",
    "trailing spaces   \n   \n\n leading   words  ",
    "Cafe\u0301 vs Café (NFC), A\u030a vs Å",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "unseen: ξένο κείμενο, עברית, العربية, ᚠᛇᚻ",
    "",
    " ",
    "a\r\n\r\nb",
]


def make_tokenizer(out_dir):
    """A small byte-level BPE with Qwen3.5's normaliser, pre-tokeniser and decoder, trained on a
    few lines, plus the reference encodings of TOKENIZER_CASES by the `tokenizers` library."""
    import tokenizers
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.train_from_iterator(TOKENIZER_TRAIN * 3, trainer)
    tok.add_tokens([tokenizers.AddedToken("<think>", special=False, normalized=False)])
    tdir = os.path.join(out_dir, "tokenizer_small")
    os.makedirs(tdir, exist_ok=True)
    tok.save(os.path.join(tdir, "tokenizer.json"))
    # A config-only added token, as Qwen3.5's tokenizer_config.json has (qwen35-spec.md §8).
    cfg = {"added_tokens_decoder": {str(tok.get_vocab_size()): {"content": "<tts_pad>", "special": True}}}
    with open(os.path.join(tdir, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in TOKENIZER_CASES]
    with open(os.path.join(tdir, "cases.json"), "w") as f:
        json.dump({"qgpu_fixture": "hf-tokenizer", "version": 1, "tokenizers": tokenizers.__version__,
                   "cases": cases}, f, indent=1, ensure_ascii=False)
    print(f"{tdir}: vocab {tok.get_vocab_size()}, {len(cases)} cases")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-tiny", default="build/model/qgpu_make_tiny")
    ap.add_argument("--out", default="model/tests/data")
    ap.add_argument("--case", action="append", help="only these cases (default: all)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    make_tokenizer(args.out)
    for case in CASES:
        if args.case and case["name"] not in args.case:
            continue
        run_case(case, args.make_tiny, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
