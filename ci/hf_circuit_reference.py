#!/usr/bin/env python3
"""Records Hugging Face transformers' greedy tokens on the named circuit checkpoints.

The C++ test circuit/tests/hf_circuit_test.cpp rebuilds the same checkpoints
(circuit/tests/circuit_cases.h, deterministic) and compares transformers' tokens, model::Decoder's
greedy tokens and the trace encoder's expected tokens, from the fixtures this script writes:

    circuit/tests/data/hf_circuit_<case>.safetensors
        tensors  prompt_tokens [P] I64, prompt_offsets [n+1] I64 (prompt i = tokens[off[i]:off[i+1]]),
                 expected_tokens [G] I64, expected_offsets [n+1] I64 (the tool's, for staleness),
                 greedy_<dtype> [G] I64 (transformers' tokens), gap_<dtype> [G] F32 (its top minus
                 second logit at each generated position), for dtype f32 and bf16
        metadata qgpu_fixture=hf-circuit, version=1, case, weights_fnv1a64 (of model.safetensors),
                 dtypes, use_cache=false, transformers, torch, python

Every circuit layer is `linear_attention`, and transformers 5.24 cannot decode such a checkpoint
with a cache (`get_seq_length can only be called on Attention layers`), so greedy decoding here
runs without one: a full forward over prompt + generated tokens per new token (the chunked delta
rule, chunk 64, at every step). Slow, and exact: it is the path the circuit must be exact on.

Usage (where PyPI is reachable; see ci/requirements-hf.txt):
    python3 -m venv ci/.venv && ci/.venv/bin/pip install -r ci/requirements-hf.txt
    ninja -C build qgpu_make_circuit
    ci/.venv/bin/python ci/hf_circuit_reference.py --make-circuit build/circuit/qgpu_make_circuit
Review the diff of circuit/tests/data before committing regenerated fixtures.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file
from transformers import Qwen3_5ForCausalLM

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def load(ckpt, dtype, name):
    model, info = Qwen3_5ForCausalLM.from_pretrained(
        ckpt, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    # Every weight must come from the checkpoint: a freshly initialised one would make the
    # comparison meaningless.
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{name}: checkpoint and transformers disagree: {bad}")
    return model.eval()


def greedy_no_cache(model, prompt, steps):
    """`steps` greedy tokens, one full forward (no cache) per token; and each step's logit gap."""
    ids = list(prompt)
    out, gaps = [], []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()
            top2 = torch.topk(logits, 2).values
            token = int(logits.argmax())
            out.append(token)
            gaps.append(float(top2[0] - top2[1]))
            ids.append(token)
    return out, gaps


def run_dtype(ckpt, dname, prompts, expected, name):
    """Greedy decoding of every prompt in one dtype: (tokens per prompt, gaps of all positions)."""
    torch.set_num_threads(1)
    model = load(ckpt, DTYPES[dname], name)
    start = time.time()
    greedy, gaps, wrong = [], [], 0
    for p, e in zip(prompts, expected):
        g, gap = greedy_no_cache(model, p, len(e))
        wrong += sum(1 for a, b in zip(g, e) if a != b)
        greedy.append(g)
        gaps.extend(gap)
        print(f"  {name} {dname}: prompt of {len(p)}, {len(e)} tokens, {time.time() - start:.0f} s",
              flush=True)
    print(f"{name} {dname}: {len(prompts)} prompts, {len(gaps)} generated tokens, "
          f"{wrong} differ from the encoder's, smallest gap {min(gaps):g}, "
          f"{time.time() - start:.0f} s", flush=True)
    return greedy, gaps


def concat(rows):
    flat = [t for r in rows for t in r]
    offsets = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    return np.array(flat, dtype=np.int64), offsets


def run_case(name, tool, out_dir, dtypes):
    with tempfile.TemporaryDirectory() as work:
        ckpt = os.path.join(work, "ckpt")
        subprocess.run([tool, name, ckpt], check=True)
        with open(os.path.join(ckpt, "case.json")) as f:
            case = json.load(f)
        prompts = [p["prompt"] for p in case["prompts"]]
        expected = [p["expected"] for p in case["prompts"]]
        tensors = {}
        tensors["prompt_tokens"], tensors["prompt_offsets"] = concat(prompts)
        tensors["expected_tokens"], tensors["expected_offsets"] = concat(expected)
        # One process per dtype (the two runs are independent; one torch thread each).
        with ProcessPoolExecutor(max_workers=len(dtypes)) as pool:
            runs = {d: pool.submit(run_dtype, ckpt, d, prompts, expected, name) for d in dtypes}
            for dname, fut in runs.items():
                greedy, gaps = fut.result()
                tensors[f"greedy_{dname}"], _ = concat(greedy)
                tensors[f"gap_{dname}"] = np.array(gaps, dtype=np.float32)
    meta = {
        "qgpu_fixture": "hf-circuit",
        "version": "1",
        "case": name,
        "what": case["what"],
        "weights_fnv1a64": case["weights_fnv1a64"],
        "dtypes": ",".join(dtypes),
        "use_cache": "false",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "attn_implementation": "eager",
    }
    path = os.path.join(out_dir, f"hf_circuit_{name}.safetensors")
    save_file(tensors, path, metadata=meta)
    print(f"{path}: written")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-circuit", default="build/circuit/qgpu_make_circuit")
    ap.add_argument("--out", default="circuit/tests/data")
    ap.add_argument("--case", action="append", help="only these cases (default: all)")
    ap.add_argument("--dtype", action="append", choices=sorted(DTYPES), help="default: f32 and bf16")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    names = subprocess.run([args.make_circuit, "--list"], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in names:
        if args.case and name not in args.case:
            continue
        run_case(name, args.make_circuit, args.out, args.dtype or ["f32", "bf16"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
