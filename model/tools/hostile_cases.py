#!/usr/bin/env python3
"""Writes the model cases of the hostile-input suite: corpus/hostile/model-*.json.

Each case is one `qgpu` command on files written into the case's temp dir ({dir}). A checkpoint
fits in a case file because every byte of it is ASCII: the model is stored in F16 with only
non-negative values whose low byte is below 0x80 (0x0000 = 0, 0x3c00 = 1, 0x4000 = 2,
0x7e00 = NaN), so the runner can write it as text (each \\u00XX escape is one byte).

The model: hidden 4, one Gated DeltaNet layer, vocab 256 (the byte tokenizer), every weight zero
except the tied embeddings (row 255 all 2.0, the others all 1.0). The layer then adds nothing,
the final norm maps every embedding row to all ones, and the logit of token t is the sum of row t:
4 for t < 255 and 8 for t = 255, so greedy decoding emits byte 0xff forever -- never UTF-8.

Usage: python3 model/tools/hostile_cases.py [--out corpus/hostile]
"""
import argparse
import json
import os
import struct

HIDDEN, VOCAB, INTER = 4, 256, 2
KH, VH, KD, VD, CONV = 1, 1, 2, 2, 2

CONFIG = {
    "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
    "vocab_size": VOCAB, "hidden_size": HIDDEN, "intermediate_size": INTER,
    "num_hidden_layers": 1, "layer_types": ["linear_attention"],
    "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8,
    "linear_num_key_heads": KH, "linear_num_value_heads": VH, "linear_key_head_dim": KD,
    "linear_value_head_dim": VD, "linear_conv_kernel_dim": CONV, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True, "dtype": "float16",
}


def tensors():
    """(name, shape, fill) of model/config.cpp languageTensors() for CONFIG, in its order."""
    conv = 2 * KH * KD + VH * VD
    a = "model.layers.0.linear_attn."
    m = "model.layers.0."
    return [
        ("model.embed_tokens.weight", [VOCAB, HIDDEN], "embed"),
        (a + "in_proj_qkv.weight", [conv, HIDDEN], 0), (a + "in_proj_z.weight", [VH * VD, HIDDEN], 0),
        (a + "in_proj_b.weight", [VH, HIDDEN], 0), (a + "in_proj_a.weight", [VH, HIDDEN], 0),
        (a + "conv1d.weight", [conv, 1, CONV], 0), (a + "dt_bias", [VH], 0), (a + "A_log", [VH], 0),
        (a + "norm.weight", [VD], 0), (a + "out_proj.weight", [HIDDEN, VH * VD], 0),
        (m + "input_layernorm.weight", [HIDDEN], 0), (m + "post_attention_layernorm.weight", [HIDDEN], 0),
        (m + "mlp.gate_proj.weight", [INTER, HIDDEN], 0), (m + "mlp.up_proj.weight", [INTER, HIDDEN], 0),
        (m + "mlp.down_proj.weight", [HIDDEN, INTER], 0),
        ("model.norm.weight", [HIDDEN], 0),
    ]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def f16_bytes(name, shape, fill):
    n = numel(shape)
    if fill == "embed":
        words = [0x3c00] * ((VOCAB - 1) * HIDDEN) + [0x4000] * HIDDEN
    else:
        words = [0x0000] * n
    return b"".join(struct.pack("<H", w) for w in words)


def safetensors(entries, trailing=b"", duplicate=None):
    """entries: (name, dtype, shape, data). A header whose 8-byte length has only ASCII bytes."""
    header, offset, data = [], 0, b""
    for name, dtype, shape, blob in entries:
        header.append((name, {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}))
        offset += len(blob)
        data += blob
    if duplicate is not None:
        header.append(next(h for h in header if h[0] == duplicate))
    text = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in header) + "}"
    while len(text) % 8 or any(b >= 0x80 for b in struct.pack("<Q", len(text))):
        text += " "
    blob = struct.pack("<Q", len(text)) + text.encode() + data + trailing
    assert all(b < 0x80 for b in blob), "a byte the runner cannot write as text"
    return blob.decode("ascii")


def model(edit=None, **kw):
    entries = [(n, "F16", s, f16_bytes(n, s, f)) for n, s, f in tensors()]
    if edit:
        entries = edit(entries)
    return safetensors(entries, **kw)


def set_word(entries, name, index, word):
    out = []
    for n, d, s, b in entries:
        if n == name:
            b = b[:2 * index] + struct.pack("<H", word) + b[2 * index + 2:]
        out.append((n, d, s, b))
    return out


CFG = json.dumps(CONFIG, indent=1)
GEN = ["model", "generate", "{dir}", "--ids", "1", "-n", "3"]
INFO = ["model", "info", "{dir}"]


def case(cls, what, args, files, exit_code, kind=None, **extra):
    c = {"class": cls, "what": what, "args": args, "files": files, "exit": exit_code}
    if kind:
        c["kind"] = kind
    c.update(extra)
    c.setdefault("max_seconds", 30)
    c.setdefault("max_rss_mb", 1024)
    return c


def cases():
    ok = model()
    nan = model(lambda e: set_word(e, "model.norm.weight", 2, 0x7e00))
    yield "model-nonfinite-generate", case(
        "non-finite-model", "one NaN weight (final norm): generate stops at the first logit with a typed error",
        GEN, {"config.json": CFG, "model.safetensors": nan}, 2, "Checkpoint",
        stderr_contains="non-finite logits at sequence position 0")
    yield "model-nonfinite-info", case(
        "non-finite-model", "one NaN weight: model info names the tensor in a warning",
        INFO, {"config.json": CFG, "model.safetensors": nan}, 0,
        stderr_contains="hold NaN or infinite values: model.norm.weight (1)")
    yield "model-json-non-utf8", case(
        "json-output", "--json model generate whose bytes (0xff) are not UTF-8: U+FFFD text and hex, no abort",
        ["--json"] + GEN, {"config.json": CFG, "model.safetensors": ok}, 0,
        stdout_contains='"text_hex": "ffffff"')
    yield "model-safetensors-duplicate-key", case(
        "safetensors", "a tensor named twice in the safetensors header",
        INFO, {"config.json": CFG, "model.safetensors": model(duplicate="model.norm.weight")}, 2, "Checkpoint",
        stderr_contains="duplicate key 'model.norm.weight'")
    yield "model-safetensors-trailing-bytes", case(
        "safetensors", "bytes after the last tensor (HF: MetadataIncompleteBuffer)",
        INFO, {"config.json": CFG, "model.safetensors": model(trailing=b"\0" * 4096)}, 2, "Checkpoint",
        stderr_contains="4096 trailing bytes")
    yield "model-extra-tensor", case(
        "transformers-parity", "an extra conv1d.bias (transformers: unexpected key, ignored): ignored with a warning",
        GEN, {"config.json": CFG, "model.safetensors": model(
            lambda e: e + [("model.layers.0.linear_attn.conv1d.bias", "F16", [6], b"\0" * 12)])}, 0,
        stderr_contains="ignoring 1 tensor")
    yield "model-tied-distinct-head", case(
        "transformers-parity", "tie_word_embeddings with a distinct stored lm_head: the stored head is used",
        GEN, {"config.json": CFG, "model.safetensors": model(
            lambda e: e + [("lm_head.weight", "F16", [VOCAB, HIDDEN], b"\0\x3c" * (VOCAB * HIDDEN))])}, 0,
        stderr_contains="using lm_head.weight")
    yield "model-info-wrong-rank", case(
        "model-validation", "a norm weight of rank 2: info refuses it as generate does",
        INFO, {"config.json": CFG, "model.safetensors": model(
            lambda e: [(n, d, [1] + s if n == "model.norm.weight" else s, b) for n, d, s, b in e])}, 2, "Checkpoint",
        stderr_contains="has rank 2")
    yield "model-info-wrong-dtype", case(
        "model-validation", "an I16 weight (same bytes as F16): info refuses it as generate does",
        INFO, {"config.json": CFG, "model.safetensors": model(
            lambda e: [(n, "I16" if n == "model.norm.weight" else d, s, b) for n, d, s, b in e])}, 2, "Checkpoint",
        stderr_contains="has dtype I16")
    yield "model-info-missing-tensor", case(
        "model-validation", "a tensor the config implies is absent",
        INFO, {"config.json": CFG, "model.safetensors": model(
            lambda e: [x for x in e if x[0] != "model.layers.0.mlp.down_proj.weight"])}, 2, "Checkpoint",
        stderr_contains="missing tensor 'model.layers.0.mlp.down_proj.weight'")
    yield "model-info-huge-vocab", case(
        "model-validation", "vocab_size 10^12 in config.json",
        INFO, {"config.json": json.dumps(dict(CONFIG, vocab_size=10**12)), "model.safetensors": ok}, 2, "Checkpoint",
        stderr_contains="'vocab_size' is 1000000000000")
    yield "model-info-huge-hidden", case(
        "model-validation", "hidden_size 2^40 in config.json",
        INFO, {"config.json": json.dumps(dict(CONFIG, hidden_size=2**40))}, 2, "Checkpoint",
        stderr_contains="'hidden_size' is 1099511627776")
    yield "model-info-config-vs-shapes", case(
        "model-validation", "config vocab_size disagrees with the stored embeddings",
        INFO, {"config.json": json.dumps(dict(CONFIG, vocab_size=300)), "model.safetensors": ok}, 2, "Checkpoint",
        stderr_contains="config implies [300, 4]")
    yield "model-config-json-syntax", case(
        "json-syntax", "config.json with a missing ':' on line 3: the error names line and column",
        INFO, {"config.json": '{\n  "model_type": "qwen3_5_text",\n  "b" 2\n}'}, 2, "Checkpoint",
        stderr_contains="config.json:3:7")
    yield "model-tokenizer-json-syntax", case(
        "json-syntax", "tokenizer.json with a missing value on line 2: the error names line and column",
        ["model", "generate", "{dir}", "--prompt", "x"],
        {"config.json": CFG, "model.safetensors": ok, "tokenizer.json": '{\n"model": }'}, 2, "Checkpoint",
        stderr_contains="tokenizer.json:2:10")
    yield "model-generate-zero-tokens", case(
        "usage", "generate -n 0: a usage error that gives the real range",
        ["model", "generate", "{dir}", "--ids", "1", "-n", "0"], {}, 2,
        stderr_contains="not in range 1 to 65536")
    yield "model-generate-ids-and-prompt", case(
        "usage", "--ids with --prompt: a usage error, not a silently ignored prompt",
        ["model", "generate", "{dir}", "--ids", "1", "--prompt", "x"], {}, 2, stderr_contains="excludes")
    yield "model-safetensors-is-directory", case(
        "input-caps", "model.safetensors is a directory (written as model.safetensors/keep)",
        INFO, {"config.json": CFG, "model.safetensors/keep": ""}, 2, "Io", stderr_contains="is a directory")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="corpus/hostile")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, c in cases():
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(c, f, indent=1)
            f.write("\n")
        print(name)


if __name__ == "__main__":
    main()
