// qgpu/circuit/counter.h — gadget: the event counter. Counts the events since the last reset and
// decides n ≥ N for chosen thresholds N (or, with the decode, reads n one-hot for n < K), exactly,
// in fp32 and bf16, on the chunked prefill and the recurrent decode. It is what a fixed depth
// cannot do by increment (docs/circuit.md §5: a value computed at depth d reaches shallower
// layers only through a token): the count lives in one DeltaNet head's state as a power of two.
//
// Three pieces, each a pure function of its spec that writes only its own head's (or units')
// weights, plus the layer-wide settings it relies on (A_log / dt_bias of its head, the shared
// gated-norm weight = 1):
//   buildEventCounter  layer L, one head: the count as 2^-n·x beside a constant reference c in
//                   the same state row, read into one *quiet* residual dim (a dim that is 0 in the
//                   layout) as the exact power of two ℓ(n) = 2^(e0 − n), tiny enough to leave
//                   Σx² unchanged.
//   buildThreshold  layer L' > L, one head per threshold N: a saturating sign head that turns ℓ(n)
//                   into a clean sign field, +u iff n ≥ N (the field holds a +u pad before L').
//   buildCountDecode  an MLP after L': thermometer bits [n ≥ 1..K] → one-hot dims n = 0..K−1 and
//                   "n ≥ K" (detectors, outputs replace the pads, logic.h's conventions).
//
// Inputs (pre-normed residual h; every ±u dim of x is ±λ in h; λ a power of two, one number for
// every token: docs/circuit.md R3; ballast.dims[0] is +u on every token):
//   event  1 sign dim: +u = this token is an event (counts one)
//   reset  1 sign dim: +u = this token sets the count to 0 (a token is never both)
//   a *plain* token is neither. Before the first reset of a sequence the count reads as
//   "infinite": every n ≥ N decision is true, every one-hot dim but "n ≥ K" false.
//
// Counter head maths (key head dim dk, value head dim dv ≥ 16 with dv/8 a power of 4; G = gain,
// λG ≥ 89 and a power of two; one state row, every pre-activation λ·(exact integer)·gain, R1):
//   key     = G·(event + reset + ballast)   → +λG on an event or reset (key exactly e_0, R7);
//             −λG on a plain token: its key is exactly 0 and it writes nothing (ZeroKey, R6)
//   query   = G·ballast                     → e_0, times dk^-½
//   value   channels 0..7 = Gc·(event + reset + ballast) → c = λGc on events and resets
//           channel 8     = Gx·reset                     → x = λGx on a reset, else −0
//   beta    b = (G/2)·(ballast − event)     → 0 on an event (β = sigmoid(0) = ½ exactly),
//             λG on every other token (β = 1 exactly)
//   decay   a = G·reset, A_log = 0, dt_bias = 0: exp(g) = 1 exactly on every other token and
//             exactly 0 on a reset (docs/circuit.md §2.1: the old count is multiplied by an exact
//             0 on both paths; a β = 1 rewrite instead would compute x − S, which fp32 rounds
//             once S < 2^-24·x, and leave the old count behind).
// Per token: reset: row ← (c,…,c, x) (cleared, then written with β = 1); event: row ← row +
// ½·((c,…,c, 0) − row) — the reference stays c exactly (½c + ½c), channel 8 halves exactly;
// plain: nothing. After n events since the last reset the row is (c on 0..7, x·2^-n on 8), and the
// read o = s·row, s = dk^-½. The gated norm divides by rms(o) = √(8c²s²/dv + (x2^-n s)²/dv + eps):
// with x/c ≤ 2^-13 the second term is below half an ulp of the first and vanishes (exactly), so
// the norm is the reference's alone, and
//   y_8 = x·2^-n/c · √(dv/8) · silu(z),   z = Gz·ballast → silu(z) = λGz = 32,
// an exact power of two (x, c, λGz and √(dv/8) are). out_proj copies y_8 into the quiet dim with
// the power-of-two weight that makes it ℓ(n) = 2^(e0 − n); channels 0..7 are not read. With
// ℓ(0)² ≤ u²·2^-26 (e0 ≤ −9 with u = 16) the quiet dim adds less than half an ulp to every partial
// sum of Σx² (each holds at least one u² = 256), so every later norm is unchanged bit for bit:
// the counter costs no λ. Without the reference refresh (events write 0 in 0..7: the twin
// `NoCompanion`) the norm removes 2^-n entirely; with beta not exactly ½ (`BetaOff`) the level
// drifts off the powers of two.
//
// Threshold head maths (layer L', λ' its pre-norm scale; one head, key/query row 0 constant):
//   F = h[quiet] − 1.5·ℓ(N)/u·λ'  (ballast)   so with K = 256u/(λ'ℓ(N)) (a power of two):
//   b = K·F = 2^(N−n)·256 − 384 : n ≤ N−1 → b ≥ 128 (up to 2^(N+8)); n ≥ N → b ∈ [−384, −128]
//   a = −K·F, A_log = 0, dt_bias = 0 → g = −softplus(a): n ≤ N−1 → softplus(a ≤ −128) = 0 exactly,
//       g = −0, decay 1; n ≥ N → a ∈ [128, 384], g = −a ≤ −128, decay exp(g) = 0 exactly. The
//       bounded side is the decaying one, so the chunked path's cumulative sums of g stay sums of
//       ≤ 64 numbers in [−384, −128] (no absorption: exp(Gi − Gj) is exactly 0 or 1).
//   value channels 0..7 = Gv·ballast (8 hot of height λ'Gv); z = Gz·ballast; conv [0,0,0,1].
//   n ≤ N−1: β = 1, decay 1: row 0 ← v, read v·dk^-½ → gated norm → exactly √(dv/8)·λ'Gz on 0..7.
//   n ≥ N:   β = 0, decay 0: the state is cleared and nothing is written: the read is exactly 0.
//   out_proj: out += −2u·y_0/(√(dv/8)·λ'Gz): the pad +u becomes −u iff n ≤ N−1, stays +u iff
//   n ≥ N. Σx² is the same either way (±u), so λ stays one number downstream.
// Every b and a above is a sum of two exact powers of two (fp32: exact while N − n ≤ 23; beyond,
// the rounding cannot move it across 128); bf16 rounds it to 8 bits, which keeps it ≥ 127 or
// ≤ −127. The rule: K ≤ 2^127 and ℓ(N)·λ'/u ≥ 2^-126 (normal in bf16), i.e.
// N ≤ min(119 − log2(u/λ') + e0, 126 − log2(u/λ') + e0) — `thresholdRange` (N ≤ 105 with u = 16,
// λ' = 1, e0 = −10). Key head dim (circuit/tap.h "The read height"): both heads read through
// `planOneRowRead` — one row for dk a power of 4; at dk = 128 a 4-hot key (rows 0..3, each
// holding v/2) and the query on rows 0 and 1 (λG, λG + δ; δ's piece on ballast dim 1, so the
// ballast needs 2 dims), value gains doubled: the read is the dk = 64 read bit for bit, and the
// chunked read's coefficient is a power of two (t/2 = 2^-4), so the a-th event of a chunk no
// longer picks up s's mantissa (measured exact, docs/circuit.md §9). `read = Nominal` keeps the
// one-row heads (the twin: fp32 magnitudes ulps off, the level up to 41 % off at dk = 128).
//
// Limit of the chunked prefill (measured, docs/circuit.md §9 "Built: the event counter"): the
// chunked rule writes a chunk's m halvings of one row as S − Σ_{a≤m} 2^-a·S, a sum that needs m
// significant bits, so at most 24 events may fall between a reset (or the chunk's start) and the
// end of one 64-token chunk (fp32's 24 bits); more and the level sticks at 2^-24 of its start.
// The recurrent decode has no such limit. The trace stays below it: a step is ≥ 3 tokens (EX, WM,
// a record), so ≤ 22 EX per 64; a record has ≤ 8 values between resets.
#pragma once

#include <cstdint>
#include <vector>

#include "circuit/tap.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// Failing-twin knobs for the counter head: each breaks one rule and must corrupt decisions.
enum class EventCounterTwin : uint8_t {
  None,         // the gadget
  BetaOff,      // an event's beta logit is 1/8 instead of 0: β = sigmoid(1/8) ≈ 0.531, so an
                // event multiplies the row by 0.469, not ½ (the count drifts off the powers of 2)
  NoCompanion,  // events do not refresh the reference (they write 0 there): it halves with the
                // count, the ratio stays x/c and the gated norm removes 2^-n (every n reads 0)
};

struct EventCounterSpec {
  int layer = 0;          // decoder layer L (linear_attention)
  int head = 0;           // value head; its key head must be its own (Hv = Hk)
  Field ballast;          // dims[0]: +u on every token
  int event = 0;          // sign dim: +u = event
  int reset = 0;          // sign dim: +u = reset
  int quiet = 0;          // residual dim that is exactly 0 in the layout; receives ℓ(n)
  int levelExp = -10;     // e0: ℓ(0) = 2^e0 in the residual; ℓ(0)² must stay below 2^-16·u²/256
  double lambda = 1;      // pre-norm output of a ±u dim at layer L (a power of two)
  float unit = 16;        // u
  float gain = 128;       // G, a power of two; λG ≥ 89
  EventCounterTwin twin = EventCounterTwin::None;
  ReadHeight read = ReadHeight::Exact;  // the read (circuit/tap.h); Nominal: the one-row twin
};

struct EventCounterMargins {
  double keyOn = 0;        // λG: the hot key / query channel; every cold one is −λG
  double companion = 0;    // c = λGc, the reference's value
  double countStart = 0;   // x = λGx, the count channel's value after a reset (x/c ≤ 2^-13)
  double resetLogit = 0;   // λG: the decay logit a on a reset (−λG elsewhere)
  double betaEvent = 0;    // an event's beta logit (0: β = ½ exactly)
  double betaOther = 0;    // every other token's (λG: β = 1 exactly)
  double level0 = 0;       // ℓ(0) in the residual
};

// Usage diag for a spec that does not fit the config or the exactness rules above (λ, gain not
// powers of two, dv/8 not a power of 4, ℓ(0) not tiny enough); OverLimit when λG < 89.
Expected<EventCounterMargins> buildEventCounter(CircuitWeights& weights,
                                               const EventCounterSpec& spec);

struct ThresholdSpec {
  int layer = 1;          // L' > the counter's layer
  int head = 0;           // value head (own key head)
  Field ballast;          // dims[0]: +u on every token
  int quiet = 0;          // the counter's quiet dim
  int levelExp = -10;     // the counter's e0
  int threshold = 1;      // N ≥ 1: out = +u iff n ≥ N
  int out = 0;            // a dim holding +u before layer L' (a pad); ±u after
  double lambda = 1;      // λ' at layer L' (a power of two)
  float unit = 16;
  float gain = 128;       // key/query/value heights λ'G; λ'G ≥ 89
  float zGain = 32;       // λ'Gz ≥ 17
  ReadHeight read = ReadHeight::Exact;  // the read (circuit/tap.h); Nominal: the one-row twin
};

struct ThresholdMargins {
  double betaOnMin = 0;    // n ≤ N−1: the smallest beta logit (128; its decay logit ≤ −128)
  double betaOffMax = 0;   // n ≥ N: the largest beta logit (−128; its decay logit ≥ 128)
  double betaOffMin = 0;   // n ≥ N: the smallest (−384): the decay logit stays ≤ 384
  double keyOn = 0;        // λ'G: the constant key / query channel
  double logitWeight = 0;  // K = 256u/(λ'ℓ(N)), the weight on the quiet dim
};

// The largest N that buildThreshold accepts for these parameters (K ≤ 2^127, ℓ(N)λ'/u normal).
int thresholdRange(int levelExp, double lambda, float unit);

// Usage diag for a spec outside the rules (N < 1 or beyond thresholdRange, λ not a power of two,
// dv/8 not a power of 4); OverLimit when λ'G < 89 or λ'Gz < 17.
Expected<ThresholdMargins> buildThreshold(CircuitWeights& weights, const ThresholdSpec& spec);

// The thresholds [n ≥ 1..K] of one counter on consecutive heads, K = outs.dims: threshold N is
// head first.head + N − 1 of first.layer and writes outs.at(N − 1); the other fields of `first`
// are shared (its threshold and out are not read). Returns the last threshold's margins.
Expected<ThresholdMargins> buildThresholds(CircuitWeights& weights, const ThresholdSpec& first,
                                           const Field& outs);

struct CountDecodeSpec {
  Field ballast;               // dims[0]: +u
  std::vector<int> atLeast;    // K sign dims, dim j−1 = [n ≥ j] for j = 1..K (thermometer)
  Field out;                   // K + 1 dims: dim j = +u iff n = j (j < K), dim K = +u iff n ≥ K;
                               // they hold anything linear before (cancelled: Prior::Replace)
  double lambda = 1;           // λ at this MLP's input (a power of two)
  float unit = 16;
  float gain = 128;            // λG ≥ 89
};

// Appends 2K + 3 units: K + 1 cancels (linear), one constant unit (−u on every out dim) and K + 1
// detectors writing +2u (N = [n ≥ j] − [n ≥ j+1] − 1 in ±1 terms, the missing ends read as the
// constants +1 and −1; exactly +1 on the one dim that holds, ≤ −1 elsewhere). Returns the units
// used. Usage / OverLimit as above.
Expected<int> buildCountDecode(UnitWriter& units, const CountDecodeSpec& spec);

}  // namespace qgpu::circuit
