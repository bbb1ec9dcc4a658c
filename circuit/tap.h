// qgpu/circuit/tap.h — gadgets: one-row DeltaNet heads. A tap head copies fields of the token
// `tap` positions back into the current position's residual (the conv is the only diagonal path,
// docs/circuit.md §5); a latch holds the fields of the last token that enabled it. Both are one
// construction (`OneRowHead` in tap.cpp) that differs only in the key, the conv tap of the values
// and the absence channels.
//
// Both write only their own head's weights (q/k/v channels, conv taps, b, a, z, out_proj columns,
// A_log and dt_bias of the head, the shared gated-norm weight = 1). The head's key head must not be
// shared with another gadget (with Hv = Hk every value head has its own). Pure functions of their
// spec.
//
// The full layout (docs/circuit.md §3.2, §9): every circuit dim holds ±1 unit u at every layer
// input, so the pre-norm maps each to exactly ±λ with λ one power of two (1 when every dim of the
// residual is ±u). Inputs come from the pre-normed residual h; ballast.dims[0] is +u on every
// token. The out field holds the layout's +u pad at the head's layer input (it is a fresh field)
// and the head *replaces* it: it adds −2u where the copied bit is 0 and exactly 0 where it is 1,
// so the out dims hold ±u afterwards, Σx² does not change and λ stays the same power of two at the
// next layer input. (A head cannot cancel an arbitrary prior value — its read depends on other
// positions — so a head's destination is always a pad; rewriting a field is an MLP's job.)
//
// Tap head maths (V = sources.size() bits; a source that is the ballast itself copies as a
// "present" bit: +1 for a real token; K = conv kernel 4; tap t ∈ 1..K−1 is conv weight index
// K−1−t; every pre-activation is λ·N with N an exact integer, R1):
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
//   out_proj (HeadPrior::Pad): out_j = −c·(y_2j+1 + y_2V+j), c = 2u / (√(dv/V)·λGz), a power of
//     two when λ is: the 0 rail or the padding adds exactly −2u to the pad +u (→ −u), the 1 rail
//     adds nothing (→ +u). The padding lands the canonical "no token" record: every bit −u, so
//     present = −1 and (for the token layout's fields) isChunk = isTerminal = −1, chunk 0. (The
//     absence channels read the source token's ballast, so a tap of a tap — a copied record one
//     level down — pads the same way.)
//   HeadPrior::Zero (the accumulate twin, and a layout whose out dims hold 0): out_j =
//     (c/2)·(y_2j − y_2j+1 − y_2V+j) = ±u.
// Padding::Zero (failing twin) omits the absence channels: the padding reads exactly 0, so in the
// full layout the first t positions keep the pad (+u: "present") in their records.
//
// Latch maths (V value bits, 2V ≤ dv, dv/V a power of 4):
//   key channel 0 = G·enable, key channel 1 (scratch) = −G·enable → one-hot on the enabled row
//   query channel 0 = G·ballast; value rails ±Gv·x[src_j] at the current token; beta 1, decay 1
//   → row 0 holds the sources of the last enabled token, read at every token (after its write);
//   out_j as the tap head's without absence channels. Before the first enabled token the row is
//   empty and reads exactly 0: the head adds 0, the out field keeps its pad (every bit +u).
//
// λ need not be a power of two for the construction to work (c is then rounded to bf16 and the
// read size reported in `readUnitError`), but only a power of two makes the read exactly ±u.
//
// The read height, any key head dim (docs/circuit.md §9 "Key head dim"): the delta rule scales
// the l2-normed query by dk^-½ (the chunked rule multiplies by fl32(dk^-½) = s, the decode divides
// by fl32(√dk)). With dk a power of 4, s is a power of two: a one-row read of hot value channels of
// height λGv is λGv·s, a power of two, and everything after it (the gated norm, silu(z),
// out_proj) is exact. With dk = 128 (the `2b` shape) s = fl(2^-3.5): the read 128·s = 11.3137083
// is no power of two, the gated norm's rsqrt returns √(dv/V)·(1 ± a few ulp), and fp32
// head-written dims end 1–4 ulp off ±u (the `Nominal` twin, measured). A compensated height h
// with fl(h·s) = X (181.01934814453125·s = 16, `OneRowCompensated`) fixes the decode path but not
// the chunked one, whose matmul accumulates s·U_j with the product unrounded (FMA), so a
// telescoping sum s·h − s·h of a row's overwrite leaves a residue (measured). The gadget therefore
// makes the *query's coefficient* a power of two instead, on both paths:
//   key   4-hot on rows 0..3 (constant, or enable-keyed with scratch rows 4..7): the l2norm of a
//         4-hot of height λG is exactly ½ per row, Σk² = 1, so the delta rule still replaces the
//         row group exactly (every row holds h/2), as with one-hot keys (R6, R7)
//   query rows 0 and 1 at heights a = λG and b = a + k·ulp(a) (b's pieces on the ballast, R4):
//         their l2norm entries e_a ≠ e_b scaled by s sum to t = fl(q_a + q_b) = 2^-3 on both paths
//         (dk = 128, λG = 128: b = 128 + 3·2^-16), checked by `planOneRowRead` under the
//         correctly rounded rsqrt and 1/sqrtf (measured through model/: torch's agrees)
//   read  chunked: (q·kᵀ) = ½·t exactly (two terms), times U_j ∈ {0, ±h} (h a power of two: every
//         product exact, FMA or not); decode: Σ_i fl(S_i·q_i) = (h/2)·t — both X = h·t/2, with
//         h = 2X/t a power of two and X the power of two at or above λGv·s (16 for λGv = 128:
//         h = 256, the dk = 64 read bit for bit).
// The cost: 4 key rows per row group (8 with the latch's scratch rows) instead of 1 (2), and the
// value gain doubled (h = 2λGv at dk = 128; the margin only grows). bf16 was exact either way.
#pragma once

#include <cstdint>
#include <vector>

#include "circuit/tokens.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// The height of a one-row head's hot value channels (see the header: "The read height").
enum class ReadHeight : uint8_t {
  Exact,    // every read a power of two on both paths at the layer's key head dim (the rule)
  Nominal,  // one row, h = λGv: exact only when dk is a power of 4 (the twin: the construction
            // before 2b)
  OneRowCompensated,  // candidate (b), measured and rejected: one row, the fp32 h with
                      // fl(h·s) = X; exact on the decode path, not on the chunked one (its
                      // matmul fuses c·U_j into the sum unrounded, docs/circuit.md §9)
  NormRail,           // memories (circuit/memory.h "Key head dim"): one row per cell and, where
                      // the one-row read is no power of two, a constant value channel that fixes
                      // the gated norm's mean, so that a hot channel lands on a power of two
};

// How a one-row head reads, for a key head dim (header: "The read height").
struct OneRowRead {
  float scale = 0;          // s = fl32(dk^-½), the chunked rule's query scale
  int keyRows = 1;          // 1: key e_r (dk a power of 4, or Nominal); 4: key ½ on rows r..r+3
  std::vector<float> queryHeights;  // the query's pre-activations on rows r (and r+1)
  float querySum = 0;       // keyRows 4: t = fl(q_r + q_r+1), a power of two on both paths
  float height = 0;         // h: a hot value channel's pre-activation (a power of two)
  float read = 0;           // X: what the read returns per hot channel
  bool powerOfTwo = false;  // X is a power of two on both paths (always for Exact)
};

// The read for hot value channels of nominal height λGv and a query of height λG. Exact with dk
// a power of 4 (or Nominal): one row, h = λGv. Exact otherwise: a 4-hot key, the query on two of
// its rows at λG and the first b > λG (in ulp steps) whose scaled l2norm entries sum to a power
// of two t on both paths (checked under the correctly rounded rsqrt and 1/sqrtf), h =
// 2X/t with X the power of two at or above λGv·s. `queryGrid` > 0 restricts b − a to multiples of
// it (a decoder's query row sums terms up to A·λG: its pieces must sit on that sum's fp32 grid);
// 0: ulp(a). Usage diag for non-positive inputs or when no b within 2^16 steps works.
Expected<OneRowRead> planOneRowRead(int64_t keyHeadDim, double nominalHeight,
                                    ReadHeight mode = ReadHeight::Exact,
                                    double queryHeight = 128, double queryGrid = 0);

// The weights that make a pre-activation of λ·(±`lead`·x[sign] + rest) from a ±1 sign dim and the
// ballast: `lead` = bf16(height/λ) on `sign` (−lead for the cold rail), the remainder height/λ −
// lead as bf16 pieces on the ballast dims (constantTerms). sign < 0: all of height/λ on the
// ballast. Usage diag when the ballast has too few dims for the pieces.
struct HeightTerms {
  float lead = 0;            // the weight on the sign dim (0 when sign < 0)
  std::vector<Term> rest;    // ballast pieces
};
Expected<HeightTerms> heightTerms(double heightOverLambda, const Field& ballast, bool onSign);

enum class Padding : uint8_t {
  Canonical,  // before the sequence start a tap reads the "no token" record (the gadget)
  Zero,       // the twin: it reads 0 (no absence channels)
};

// What a head's out field holds at the head's layer input.
enum class HeadPrior : uint8_t {
  Pad,   // the full layout's +u pad: the head adds −2u·[bit 0], the field ends at ±u (the rule)
  Zero,  // exactly 0: the head adds ±u (in the full layout this is the accumulate twin)
};

struct TapSpec {
  int layer = 0;
  int head = 0;
  int tap = 1;               // positions back, 1..K−1
  Field ballast;             // dims[0]: +1 unit on every token
  std::vector<int> sources;  // V residual dims (±1 unit on every token) to copy
  Field out;                 // V dims: out[j] = sources[j] of the token `tap` positions back
  double lambda = 1;         // this layer's pre-norm output of a +1 unit dim
  float gain = 128;          // G (key, query, beta): λG ≥ 89
  float valueGain = 128;     // Gv: λGv ≥ 89
  float zGain = 32;          // Gz: λGz ≥ 17
  float outUnit = 16;        // u
  Padding padding = Padding::Canonical;
  HeadPrior prior = HeadPrior::Pad;
  ReadHeight read = ReadHeight::Exact;
};

struct LatchSpec {
  int layer = 0;
  int head = 0;
  Field ballast;
  int enable = 0;            // residual dim: +1 unit writes the row, −1 writes the scratch row
  std::vector<int> sources;  // V dims to hold
  Field out;                 // V dims
  double lambda = 1;
  float gain = 128;
  float valueGain = 128;
  float zGain = 32;
  float outUnit = 16;
  HeadPrior prior = HeadPrior::Pad;
  ReadHeight read = ReadHeight::Exact;
};

// The construction's margins, in pre-activation units (before SiLU / sigmoid).
struct HeadMargins {
  double keyOn = 0;     // λG: the constant (or enabled) key channel, the query, beta's logit
  double valueHot = 0;  // λGv: a hot rail / absence channel; every cold one is −λGv
  double gateZ = 0;     // λGz
  double readUnit = 0;  // the nominal size of the head's write per rail (2u for Pad, u for Zero,
                        // after rounding c to bf16)
  double readUnitError = 0;  // |readUnit / nominal − 1| from rounding c to bf16 (0 when λ is a
                             // power of two)
  OneRowRead read;           // the hot channels' height and what a read returns (planOneRowRead)
};

// A latch on the token layout with head gain G: the layout's ballast, unit and λ; G for the key,
// query and value rails, G/4 for the gate (λG = 128 → λGz = 32 ≥ 17, rule R2). The one latch
// spec of the front end's stages (frontend.h, operands.h, regfile.h, predfile.h).
LatchSpec tokenLatch(const TokenLayout& tokens, float headGain, int layer, int head, int enable,
                     std::vector<int> sources, const Field& out);

// Usage diag for a spec that does not fit the config (head, dims, V with dv/V not a power of 4,
// tap outside 1..K−1, too few ballast dims for the read height's pieces); OverLimit when λG, λGv < 89 or λGz < 17 (rule R2).
Expected<HeadMargins> buildTap(CircuitWeights& weights, const TapSpec& spec);
Expected<HeadMargins> buildLatch(CircuitWeights& weights, const LatchSpec& spec);

// λ of a layout with `nonzeroDims` dims at ±unit in `hidden` dims: unit / √(n·unit²/hidden)
// (1 for the full layout, n = hidden).
double normLambda(int nonzeroDims, int hidden);

}  // namespace qgpu::circuit
