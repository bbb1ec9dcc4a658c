#!/usr/bin/env python3
"""Trains qgpu's embedded default base model: a tiny Qwen3.5 (byte-level, 256 tokens) on real text.

Why: KL measurements on text need a base model whose next-token distributions mean something; a
random checkpoint's do not, and the real Qwen3.5-2B cannot be downloaded on our machines. This
model is small enough to commit and still learns English letter/word statistics.

Corpus: the licence texts in Debian's /usr/share/common-licenses (freely redistributable, present
on every Debian machine); Apache-2.0 is held out for evaluation. The model is transformers'
Qwen3_5ForCausalLM (so it is a standard Qwen3.5 checkpoint), layers [linear x3, full], seeded,
trained with AdamW on CPU, saved as bfloat16 safetensors to model/base/ with the training
provenance in model/base/TRAINING.json.

    ci/.venv/bin/python ci/train_base.py [--steps 1500] [--out model/base]

Status: not yet run to completion — on the shared 2-core build machine a training step took over
5 s (cause not investigated), so model/base/ does not exist yet and nothing depends on it.
"""
import argparse
import glob
import json
import math
import os
import time

import numpy as np
import torch
import transformers
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

HELD_OUT = "Apache-2.0"


def corpus(root="/usr/share/common-licenses"):
    train, held = b"", b""
    for path in sorted(glob.glob(os.path.join(root, "*"))):
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        if os.path.basename(path) == HELD_OUT:
            held = data
        else:
            train += data + b"\n\n"
    return np.frombuffer(train, dtype=np.uint8), np.frombuffer(held, dtype=np.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--out", default="model/base")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train, held = corpus()
    cfg = Qwen3_5TextConfig(
        vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"], num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
        tie_word_embeddings=True, max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25})
    model = Qwen3_5ForCausalLM(cfg).float()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    seq, batch = 128, 16
    start = time.time()
    for step in range(args.steps):
        idx = rng.integers(0, len(train) - seq - 1, size=batch)
        x = torch.from_numpy(np.stack([train[i:i + seq + 1] for i in idx]).astype(np.int64))
        lr = 3e-3 * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * (1 + math.cos(math.pi * step / args.steps)) / 2)
        for g in opt.param_groups:
            g["lr"] = lr
        loss = model(input_ids=x[:, :-1], labels=x[:, :-1]).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - start:.0f}s)", flush=True)
    model.eval()
    with torch.no_grad():
        h = torch.from_numpy(held[:1025].astype(np.int64))[None]
        held_loss = model(input_ids=h, labels=h).loss.item()
    model = model.to(torch.bfloat16)
    with torch.no_grad():
        held_loss_bf16 = model(input_ids=h, labels=h).loss.item()
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    info = {
        "what": "qgpu default base model: tiny Qwen3.5, byte-level (token = UTF-8 byte)",
        "corpus": "/usr/share/common-licenses/* (Debian), minus held-out " + HELD_OUT,
        "corpus_bytes": int(len(train)), "steps": args.steps, "batch": batch, "seq": seq, "seed": args.seed,
        "held_out_nll_nats_per_byte_f32": held_loss, "held_out_nll_nats_per_byte_bf16": held_loss_bf16,
        "uniform_nll": math.log(256), "transformers": transformers.__version__, "torch": torch.__version__,
    }
    with open(os.path.join(args.out, "TRAINING.json"), "w") as f:
        json.dump(info, f, indent=2)
    print(json.dumps(info, indent=2))


if __name__ == "__main__":
    main()
