// qgpu/circuit/tap.h — gadgets: one-row DeltaNet heads. A tap head copies fields of the token
// `tap` positions back into the current position's residual (the conv is the only diagonal path,
// docs/circuit.md §5); a latch holds the fields of the last token that enabled it.
//
// Both write only their own head's weights (q/k/v channels, conv taps, b, a, z, out_proj columns,
// A_log and dt_bias of the head, the shared gated-norm weight = 1). The head's key head must not be
// shared with another gadget (with Hv = Hk every value head has its own). Pure functions of their
// spec.
//
// Inputs come from the pre-normed residual h: every input dim holds ±1 unit in x, which the
// pre-norm maps to ±λ (λ = spec.lambda, one number for every circuit token because every layout is
// constant-norm, rule R3; λ need not be a power of two: weights that depend on it are rounded to
// bf16 and the resulting read size is reported). ballast.dims[0] is +1 unit on every token.
//
// Tap head maths (V = sources.size() bits; a source that is the ballast itself copies as a
// "present" bit: +1 for a real token; K = conv kernel 4; tap t ∈ 1..K−1 is conv weight index K−1−t; every pre-activation is
// λ·N with N an exact integer, R1):
//   key / query channel 0 : G·ballast, conv [0,0,0,1] → silu = λG, L2 norm → e_0 (constant)
//   b = G·ballast → beta = 1 (R6); A_log = −1000, a = 0 → decay exactly 1 (R5); the delta rule
//     with k = e_0, beta 1 replaces row 0 by v every token and the read (after the write) is v/√dk
//   value rails 2j, 2j+1  : ±Gv·x[src_j] at conv index K−1−t only → (λGv, −0) or (−0, λGv) when
//     the source token exists; exactly (0, 0) when p − t is before the sequence start (the conv's
//     zero padding)
//   absence channel 2V+j  : Gv·ballast with conv weights +1 at K−1 (now) and −2 at K−1−t:
//     λGv·(1 − 2·present) = −λGv (→ −0) for a real source, +λGv (hot) in the padding
//   so exactly V channels are hot, all of height λGv, in every case: the gated norm maps each hot
//   channel to √(dv/V) (dv/V a power of 4), times silu(z), z = Gz·ballast → λGz.
//   out_proj: out_j = c·(y_2j − y_2j+1 − y_2V+j), c = outUnit / (√(dv/V)·λGz) rounded to bf16:
//     a real source token lands its bits as ±readUnit; the padding lands the canonical "no token"
//     record: every bit −readUnit, so present = −1 and (for the token layout's fields) isChunk
//     = isTerminal = −1, chunk = 0. (The absence channels read the source token's ballast, so a
//     tap of a tap — a copied record one level down — pads the same way.) Every position gets the same number of ±readUnit dims (R3).
// Padding::Zero (failing twin) omits the absence channels: the padding reads exactly 0 and the
// first t positions have a different norm.
//
// Latch maths (V value bits, 2V ≤ dv, dv/V a power of 4):
//   key channel 0 = G·enable, key channel 1 (scratch) = −G·enable → one-hot on the enabled row
//   query channel 0 = G·ballast; value rails ±Gv·x[src_j] at the current token; beta 1, decay 1
//   → row 0 holds the sources of the last enabled token, read at every token (after its write);
//   out_j = c·(y_2j − y_2j+1), c = outUnit/(√(dv/V)·λGz) rounded to bf16; before the first enabled
//   token every out_j is exactly 0 (the row is empty).
#pragma once

#include <cstdint>
#include <vector>

#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

enum class Padding : uint8_t {
  Canonical,  // before the sequence start a tap reads the "no token" record (the gadget)
  Zero,       // the twin: it reads 0, and the residual's norm changes there
};

struct TapSpec {
  int layer = 0;
  int head = 0;
  int tap = 1;               // positions back, 1..K−1
  Field ballast;             // dims[0]: +1 unit on every token
  std::vector<int> sources;  // V residual dims (±1 unit on every token) to copy
  Field out;                 // V dims: out[j] = sources[j] of the token `tap` positions back
  double lambda = 2;         // this layer's pre-norm output of a +1 unit dim
  float gain = 64;           // G (key, query, beta): λG ≥ 89
  float valueGain = 64;      // Gv: λGv ≥ 89
  float zGain = 16;          // Gz: λGz ≥ 17
  float outUnit = 16;
  Padding padding = Padding::Canonical;
};

struct LatchSpec {
  int layer = 0;
  int head = 0;
  Field ballast;
  int enable = 0;            // residual dim: +1 unit writes the row, −1 writes the scratch row
  std::vector<int> sources;  // V dims to hold
  Field out;                 // V dims
  double lambda = 2;
  float gain = 64;
  float valueGain = 64;
  float zGain = 16;
  float outUnit = 16;
};

// The construction's margins, in pre-activation units (before SiLU / sigmoid).
struct HeadMargins {
  double keyOn = 0;     // λG: the constant (or enabled) key channel, the query, beta's logit
  double valueHot = 0;  // λGv: a hot rail / absence channel; every cold one is −λGv
  double gateZ = 0;     // λGz
  double readUnit = 0;  // the nominal size of a read bit in the residual (outUnit after rounding)
  double readUnitError = 0;  // |readUnit / outUnit − 1| from rounding c to bf16
};

// Usage diag for a spec that does not fit the config (head, dims, V with dv/V not a power of 4,
// tap outside 1..K−1); OverLimit when λG, λGv < 89 or λGz < 17 (rule R2).
Expected<HeadMargins> buildTap(CircuitWeights& weights, const TapSpec& spec);
Expected<HeadMargins> buildLatch(CircuitWeights& weights, const LatchSpec& spec);

// λ of a layout with `nonzeroDims` dims at ±unit in `hidden` dims: unit / √(n·unit²/hidden).
double normLambda(int nonzeroDims, int hidden);

}  // namespace qgpu::circuit
