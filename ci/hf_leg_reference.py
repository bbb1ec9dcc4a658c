#!/usr/bin/env python3
"""Runs Hugging Face transformers on the model leg's checkpoint and records its tokens.

The checkpoint is the one `qgpu circuit build` writes (the leg's pipeline: memory ops, atomics with
their regrec, mul and mad, warp ops; 32 layers, those without heads `full_attention` with zero
weights, 15.4 GB in fp32). For each kernel (clang, the circuit target's
program: divisions and mulhi expanded), `qgpu trace K --expand-division --expand-mulhi --ids` gives the
prompt and the interpreter's run; transformers' Qwen3_5ForCausalLM then runs the prompt and the
run in ONE forward without a cache (teacher-forced), and its argmax at every run position is
recorded. Transformers
5.24 cannot decode such a checkpoint with a cache (`get_seq_length can only be called on
Attention layers`), and a greedy decode without one is a full forward per token (hours here);
the teacher-forced forward is the same computation: a causal model's output at position i depends
only on tokens up to i, and the chunked delta rule's padding of the last chunk adds exact zeros
after it. So if transformers' argmax equals the next token at every run position, its greedy
decode without a cache writes exactly that run.

    circuit/tests/data/hf_leg_<kernel>.safetensors
        tensors  prompt [P] I64, run [R] I64 (the interpreter's), argmax_<dtype> [R] I64
                 (transformers' argmax after prompt + run[:i]), gap_<dtype> [R] F32 (its top minus
                 second logit), for dtype f32 and bf16
        metadata qgpu_fixture=hf-leg, version=1, kernel, compiler=clang, config_json (the
                 checkpoint's config.json text), step_limit, dtypes ("f32" or "f32,bf16": the C++
                 test wants fp32 in every fixture and bf16 in at least three), use_cache=false,
                 teacher_forced=true, transformers, torch, python

The C++ test (harness/tests/model_leg_test.cpp `TransformersWritesTheLegsTokens`) rebuilds the
checkpoint, checks the config and the prompt are the fixture's, and that the leg's own tokens
equal transformers' argmax and the interpreter's run.

Usage (where PyPI is reachable; see ci/requirements-hf.txt):
    python3 -m venv ci/.venv && ci/.venv/bin/pip install -r ci/requirements-hf.txt
    bash ci/build.sh
    ci/.venv/bin/python ci/hf_leg_reference.py --qgpu build/harness/qgpu
It needs about 18 GB of memory free (the fp32 model) and runs the dtypes one after the other;
`--bf16-kernel K` (repeatable) keeps bf16, which transformers runs slowly on a CPU, to those kernels.
A checkpoint whose circuit.json has a firstTraceRow (`qgpu circuit build --shape 2b`: 248077) is
fed the trace at those rows and its argmax read back from them; the fixtures keep trace tokens.
Such fixtures go elsewhere (`--out`): the C++ test's are the compact checkpoint's.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file
from transformers import Qwen3_5ForCausalLM

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# Divergence and reconvergence (divergent_branch); shared memory with barriers (transpose_shared,
# oddeven_sort's loop of them); mul and mad in the pipeline (matmul2x2); several warps
# (reverse); a data-dependent loop (fibonacci); the bit ALU (popcount); atomics: atom.add of four
# lanes on one global word (dot_atomic, the dot-product demo), shared atom.add with barriers
# (histogram_shared), atom.max.s (reduce_max_atomic), an old value into a register (atomic_exch:
# atom.exch's regrec); warp ops: shfl.bfly (shfl_xor_allreduce), vote.any / all / ballot (warp_vote);
# the step ticks: collatz (106 steps, a TICK(1) before step 101's EX); atom.inc's wrapping ticket
# into a register (fence_last_block); atom.cas in a multiply loop (atomic_cas_mul); atom.inc and
# atom.dec of four lanes on one word (atomic_inc_dec).
KERNELS = ["divergent_branch", "transpose_shared", "oddeven_sort", "matmul2x2", "reverse", "fibonacci",
           "popcount", "dot_atomic", "histogram_shared", "reduce_max_atomic", "atomic_exch",
           "shfl_xor_allreduce", "warp_vote", "collatz", "fence_last_block", "atomic_cas_mul",
           "atomic_inc_dec"]
RUN_TOKEN = 5  # oracle/trace.h: RUN, the prompt's last token


def trace(qgpu, kernel):
    out = subprocess.run([qgpu, "trace", kernel, "--expand-division", "--expand-mulhi", "--ids"],
                         check=True, capture_output=True, text=True).stdout.split()
    ids = [int(t) for t in out]
    end = ids.index(RUN_TOKEN) + 1
    return ids[:end], ids[end:]


def check_tokenizer(qgpu, ckpt, kernel, prompt, run, first):
    """The checkpoint's tokenizer.json, loaded by transformers, names the tokens as `qgpu trace`
    (trace token t at row first + t)."""
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=os.path.join(ckpt, "tokenizer.json"))
    names = subprocess.run([qgpu, "trace", kernel, "--expand-division", "--expand-mulhi", "--names"],
                           check=True, capture_output=True, text=True).stdout.split()
    rows = [first + t for t in prompt + run]
    if tok.decode(rows).split() != names or tok.encode(" ".join(names)) != rows:
        raise SystemExit(f"{kernel}: transformers' tokenizer does not name the trace's tokens")


def load(ckpt, dtype):
    model, info = Qwen3_5ForCausalLM.from_pretrained(
        ckpt, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"checkpoint and transformers disagree: {bad}")
    return model.eval()


def teacher_forced(model, prompt, run, first):
    """transformers' argmax (as a trace token: its row − first) and top-2 gap at every run
    position, one forward without a cache."""
    ids = torch.tensor([[first + t for t in prompt + run[:-1]]])
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits[0, len(prompt) - 1:].float()
    top2 = torch.topk(logits, 2, dim=-1).values
    return [a - first for a in logits.argmax(-1).tolist()], (top2[:, 0] - top2[:, 1]).tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qgpu", default="build/harness/qgpu")
    ap.add_argument("--checkpoint", help="a `qgpu circuit build` directory (default: build one)")
    ap.add_argument("--out", default="circuit/tests/data")
    ap.add_argument("--kernel", action="append", help=f"default: {', '.join(KERNELS)}")
    ap.add_argument("--dtype", action="append", choices=sorted(DTYPES), help="default: f32 and bf16")
    ap.add_argument("--bf16-kernel", action="append",
                    help="run bf16 only on these kernels (default: every kernel; bf16 here is slow: "
                         "about 4 minutes per kernel)")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    kernels = args.kernel or KERNELS
    dtypes = [d for d in ("f32", "bf16") if d in (args.dtype or DTYPES)]  # fp32 first, always named so

    def runs(kernel, dname):
        return dname != "bf16" or not args.bf16_kernel or kernel in args.bf16_kernel
    with tempfile.TemporaryDirectory() as work:
        ckpt = args.checkpoint or os.path.join(work, "ckpt")
        if not args.checkpoint:
            subprocess.run([args.qgpu, "circuit", "build", "--out", ckpt], check=True)
        with open(os.path.join(ckpt, "config.json")) as f:
            config_json = f.read()
        with open(os.path.join(ckpt, "circuit.json")) as f:
            circuit = json.load(f)
        step_limit = circuit["stepLimit"]
        first = circuit.get("firstTraceRow", 0)  # `2b`: the trace at rows 248077..
        traces = {k: trace(args.qgpu, k) for k in kernels}
        for k in kernels:
            check_tokenizer(args.qgpu, ckpt, k, *traces[k], first)
        print(f"tokenizer.json: transformers names every token as `qgpu trace` does", flush=True)
        results = {k: {} for k in kernels}
        for dname in dtypes:
            start = time.time()
            model = load(ckpt, DTYPES[dname])
            print(f"{dname}: loaded in {time.time() - start:.0f} s", flush=True)
            for k in kernels:
                if not runs(k, dname):
                    continue
                prompt, run = traces[k]
                t0 = time.time()
                argmax, gaps = teacher_forced(model, prompt, run, first)
                wrong = sum(1 for a, b in zip(argmax, run) if a != b)
                results[k][dname] = (argmax, gaps)
                print(f"  {k} {dname}: prompt {len(prompt)}, run {len(run)} tokens, {wrong} differ from the "
                      f"interpreter's, smallest gap {min(gaps):g}, {time.time() - t0:.0f} s", flush=True)
            del model
    os.makedirs(args.out, exist_ok=True)
    for k in kernels:
        prompt, run = traces[k]
        tensors = {"prompt": np.array(prompt, dtype=np.int64), "run": np.array(run, dtype=np.int64)}
        for dname, (argmax, gaps) in results[k].items():
            tensors[f"argmax_{dname}"] = np.array(argmax, dtype=np.int64)
            tensors[f"gap_{dname}"] = np.array(gaps, dtype=np.float32)
        meta = {
            "qgpu_fixture": "hf-leg", "version": "1", "kernel": k, "compiler": "clang",
            "config_json": config_json, "step_limit": str(step_limit),
            "dtypes": ",".join(d for d in dtypes if runs(k, d)),
            "use_cache": "false", "teacher_forced": "true", "transformers": transformers.__version__,
            "torch": torch.__version__, "python": platform.python_version(),
            "attn_implementation": "eager", "first_trace_row": str(first),
        }
        path = os.path.join(args.out, f"hf_leg_{k}.safetensors")
        save_file(tensors, path, metadata=meta)
        print(f"{path}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
