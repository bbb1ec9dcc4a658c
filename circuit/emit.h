// qgpu/circuit/emit.h — the readout: an untied lm_head whose argmax is the trace token named by an
// `emit` field of the final residual; and a first generating circuit built on the assembler.
//
// Emit maths. The emit field is a family sign one-hot (kNumFamilies dims: +1 on the family, −1
// on the others) and the index sign bits (tokenIndexBits() dims), every dim ±1 unit, which the
// final RMSNorm maps to ±λf (λf > 0, the same for every circuit token: constant norm). The
// lm_head row of trace token (f, i) holds +W on emit.family[f] and W·s_b(i) on emit.index[b]
// and nothing else, so its logit is W·λf·(familyMatch + Σ_b s_b(i)·index_b):
//   the named token:            W·λf·(1 + I)
//   same family, another index: ≤ W·λf·(1 + I − 2)  (at least one index bit disagrees)
//   another family:             ≤ W·λf·(−1 + I)
// so the named token wins by at least 2·W·λf logit units whatever the other residual dims hold
// (the rows read only the emit field; rows of non-trace tokens are left zero, and the named
// token's logit W·λf·(1 + I) > 0 beats them too). W is a power of two.
//
// The counter circuit (4 layers; hidden ≥ 4·(token fields) with room for 6 records, 3 value
// fields and the emit field): greedy decoding continues a trace-token sequence that ends with a
// value v (C* T) as   SEP  (v+1 as C* T)  SEP  (v+2 as C* T)  …   where SEP is a chosen
// non-chunk token. Layers:
//   L0, L1  the assembler (assembler.h): at a T, asm.value = the value of the run ending there
//   L2 GDN  a latch (tap.h) written at every T (enable = isTerminal) with asm.value: `held` = the
//           last completed value, at every later position (before the first T the row is empty,
//           the read is exactly 0 and `held` keeps its pad: every bit 1)
//   L2 MLP  next = held + 1: next_i = held_i ⊕ (held_0 ∧ … ∧ held_{i−1})
//           = [held_i] − AND(held_0..held_i) + AND(¬held_i, held_0..held_{i−1})   (clamped ANDs)
//   L3 MLP  the next token, into `emit`:
//             at a T: SEP;
//             otherwise, with r = the number of C's ending at p (0..6: p and the 6 records) and
//             n = len(next) (the chunks trace::encodeValue writes), chunk e = n − 1 − r of next:
//             C(chunk_e) if e > 0, T(chunk_0) if e = 0. With R_k = isC_0 ∧ … ∧ isC_{k−1} and
//             L_m = [len ≤ m] = AllOnes(next_{5m−1..31}) + AllZeros(next_{5m−1..31}) (L_7 = 1),
//             [r = r'][len = n] = (R_r' − R_{r'+1})(L_n − L_{n−1}), every product an AND of
//             literals, each multiplied by the literal of the output bit it sets.
//           A position where no rule applies (r ≥ n: not a sequence this circuit writes) emits
//           the all −1 field, whose argmax is the first trace token (PROG).
// Magnitudes: the full layout (docs/circuit.md §3.2) — every head writes over its field's +u pad,
// every MLP output is replaced (one cancel unit per dim, then ±u), so every dim of every circuit
// token is ±u at every layer input, λ = 1 there and at the final norm (λf = 1, margin 2W).
// Before the first T of a sequence the latch is empty and the emitted tokens are not specified
// (the prompt must contain a value before the first generated token).
#pragma once

#include "circuit/assembler.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/trace.h"

namespace qgpu::circuit {

struct EmitField {
  Field family;  // kNumFamilies dims
  Field index;   // tokenIndexBits() dims
};

// Writes the lm_head rows of the trace tokens (rows rowOffset + id; the config must be untied).
// Returns the guaranteed logit margin per unit of λf: 2W.
Expected<double> writeEmitHead(CircuitWeights& weights, const TokenLayout& tokens,
                               const EmitField& emit, float weight = 8);

struct CounterSpec {
  TokenLayout tokens;
  trace::Token separator = trace::single(trace::Family::Cta);  // any non-chunk token
  float headGain = 128;  // G = Gv of the heads (λG = 128), Gz = headGain/4
  float mlpGain = 256;   // L2, L3 ANDs (fan-in up to 43): Gλ = 256
  float emitWeight = 8;
  bool secondLevel = true;  // false: the assembler's failing twin (no second level)
};

struct Counter {
  Assembler assembler;
  Field held;   // L2 latch: the last completed value
  Field next;   // held + 1
  EmitField emit;
  std::array<double, 4> mlpLambda{};  // λ at each layer's MLP input (the layout's: 1)
  double finalLambda = 0;             // λf, the final norm's output of a +1 unit dim (1)
  std::array<int, 4> units{};         // MLP units per layer (incl. the Replace cancels)
  HeadMargins latch;
  double logitMargin = 0;             // 2·W·λf
};

// Needs a config with 4 linear_attention layers, ≥ 3 value heads (Hv = Hk) and an untied head.
Expected<Counter> buildCounter(CircuitWeights& weights, const CounterSpec& spec);

}  // namespace qgpu::circuit
