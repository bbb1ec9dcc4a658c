// qgpu/circuit/logic.h — MLP gadgets: decode, lookup table, re-quantise, adder, comparator,
// multiplexer, and field cancellation. Each is a pure function of its spec that appends SwiGLU
// units (circuit/units.h) to one layer's MLP and returns the margins it was built with.
//
// Common ground (docs/circuit.md R1–R4, §9 "Built: the MLP gadgets"):
//   - A clean sign field holds ±u in the residual (u = ctx.unit, + = bit 1) on every token; the
//     first `ballast` dim holds +u on every token. The MLP's pre-norm maps a ±u dim to exactly
//     ±λ (λ = ctx.lambda: the caller's layout makes every circuit token's residual norm the same,
//     and a power of two keeps every product below exact). Write x̂ = x/u ∈ {−1, +1}.
//   - Every gate is λG·N with N an exact integer combination of x̂'s and constants; gate weights
//     are G·(small power-of-two multiples), constants are split over ballast dims (R4).
//   - A *detector unit* has N = +1 on exactly the inputs it detects and N ≤ −1 on every other:
//     silu(λG·N) is exactly λG or exactly −0 (λG ≥ 89, R2). With up = 1·ballast its output is
//     exactly w·λ²G, so an output weight w = d·u/(λ²G) adds exactly d·u.
//   - A *step pair* (clamped twins) computes [T ≥ θ] for an integer T exactly:
//     silu(λG(T−θ+1)) − silu(λG(T−θ)) = λG·[T ≥ θ] (both sides exact for every integer, the
//     positive side because silu(x) = x for x ≥ 17). Output independent of the margin T − θ.
//     |T − θ| ≤ 256 keeps the gate bf16-exact (bf16 rounds gate_proj's output to 8 bits).
//   - A *linear unit* (gate = G·ballast, always on at λG; up = a field dim) adds exactly
//     w·λG·λ·x̂: a copy, a cancel (−x), or a select when the gate is a detector instead.
//   Silent units sit at a gate ≤ −λG (silu exactly −0) or, for the lower twin of a step pair, at
//   exactly 0 (silu(0) = 0, also exact); `offMax` reports the former.
//   - Outputs are sign fields ±u with one magnitude for every input (R3). `Prior::Replace`
//     first cancels whatever the output dims held (one linear unit per dim), so a layout that
//     keeps every dim at ±u (pads hold +u) keeps the residual norm — and λ — constant at every
//     depth: the rule the compiler follows (docs/circuit.md §9, measured by the stacked test).
//
// Per gadget (units are for the gadget alone; Replace adds one unit per output dim):
//   decode     k ≤ 8 bits → 2^k dims, dim p = +u iff input = p. 2^k detectors (+2u on dim p) and
//              one constant unit (−u on every dim): 2^k + 1 units. Margins ±λG.
//   lookup     any function of k ≤ 8 bits to m ≤ 32 bits: one detector per input pattern, writing
//              the whole output word (±u per dim): 2^k units. Margins ±λG.
//   requantise a field whose dims hold ±r (r = y·u) or, for an empty memory row, exactly 0 →
//              a clean ±u field; empty → the stated word `emptyValue`. Per bit j two detectors,
//              P_j: N = k·y·x̂_j − (ky − 1) (on iff x̂ > 0) and M_j: N = −k·y·x̂_j − (ky − 1),
//              k the power of two with 2 ≤ ky < 4 (off: N ≤ −1 at x = 0, ≤ −(2ky − 1) at −r).
//              With `lambdaEmpty` > 0 (empty reads possible: their token's MLP sees another norm,
//              λ_e) one constant unit writes emptyValue scaled for λ_e and P_0, M_0 also cancel
//              it on present tokens (they fire with λ): 2V + 1 units, exact when λ and λ_e are both
//              powers of two in the caller's layout.
//   adder      n = 4·nibbles bits (≤ 32), s = a + b' + cin, b' = b or ~b (sub = ~b with cin 1).
//              Level 1 (layer L): per nibble j, T_k(c) = Σ_{i≤k} 2^i(a_i + b'_i) + c; sum bit k for
//              carry-in c is [T_k ≥ 2^k] − [T_k ≥ 2^{k+1}] + [T_k ≥ 3·2^k] (3 step pairs), for
//              c = 0 and 1 (S⁰, S¹), and G_j = [A+B ≥ 16], P_j = [A+B ≥ 15]: 52 units per nibble +
//              1 constant; bus = 10 dims per nibble. Level 2 (layer L' > L): carry into nibble j
//              c_j = [Σ_{m<j} 2^m(G_m + P_m) + cin ≥ 2^j] (the signed-digit carry look-ahead,
//              |T − θ| ≤ 256 for j ≤ 8), sum bit = S⁰ + c_j·(S¹ − S⁰): a linear copy of S⁰ and a
//              step pair on c_j with up = S¹ − S⁰: 3 units per bit; carry out (optional) 2 + 1.
//              No threshold ever sums more than 256 units, so fp32's 24-bit accumulator and bf16's
//              8-bit gate outputs both stay exact (a one-level 32-bit threshold would not).
//   compare    eq ne ltu leu lts les of two n-bit fields → one sign bit. Level 1: G_j, P_j of
//              a' + ~b' (a' = a, b' = b; signed: top bits flipped, i.e. a ^ msb, b ^ msb) — 4 units
//              per nibble + 1 constant. Level 2: lt = ¬[carry out of a' + ~b' + 1],
//              le = ¬[carry out of a' + ~b'] (one step pair + 1 constant); eq = [all nibbles
//              propagate-only] = detector N = Σ_j (p_j − g_j)/2 − (nibbles − 1), ne its negation.
//   mux        out = field i where selector = i: one-hot selector (n sign dims, exactly one +1)
//              or binary (k dims, n ≤ 2^k). Per (i, bit j) one unit: gate = detector of i, up = the
//              dim of field i bit j (linear), output exactly u·x̂: n·m units. A selector that
//              names no field writes 0.
//   cancel     −x on every dim of a field (linear units; exact when λ is the layout's λ).
//   pad        +u on every dim of a field whatever it held: one linear unit per dim with
//              up = λ(1 − x̂) (the ballast minus the dim), adding u − x (circuit/layout.h's pad
//              restores, before an attention head or an adding MLP writes onto the pad).
//
// Errors: Usage for a spec that does not fit (widths, table size, a weight bf16 cannot hold),
// OverLimit for λG < 89. A refused spec may leave some of its units written in the layer (the
// UnitWriter writes unit by unit): discard the weights.
//
// Failing twin (ctx.lowGainTwin): G is set so that λG = 4 and rule R2 is skipped: off units leak
// silu(−4) = −0.07 and on units give silu(4) = 3.93 instead of 4, so magnitudes (and, summed,
// signs) go wrong. `AdderSpec::unclamped` / `CompareSpec::unclamped` is the other twin: single
// units instead of step pairs, so an output is proportional to its margin (R3 broken).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// What one MLP layer's gadgets share.
struct MlpContext {
  Field ballast;             // dim 0 (and the rest, for split constants) holds +u on every token
  double lambda = 1;         // pre-norm output of a +u dim at this MLP's input (power of two)
  float gain = 128;          // G, a power of two; λG ≥ 89 (rule R2)
  float unit = 16;           // u: magnitude of a clean sign field
  bool lowGainTwin = false;  // failing twin: λG = 4, rule R2 not enforced
};

enum class Prior : uint8_t {
  Zero,     // the output dims hold exactly 0 before this layer
  Replace,  // they hold anything linear (a pad +u, a dead field): cancelled first
};

// The margins a gadget was built with, in pre-activation units (λG·N), and its cost.
struct GadgetReport {
  int units = 0;
  double onMin = 0;   // smallest gate of a firing detector / step unit (≥ 17 needed)
  double offMax = 0;  // largest gate of a silent unit (≤ −88.8 needed)
  GadgetReport& operator+=(const GadgetReport& o);
};

struct DecodeSpec {
  Field in;   // k sign bits, 1 ≤ k ≤ 8 (bit i of the value in dim i)
  Field out;  // 2^k dims
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildDecode(UnitWriter& units, const DecodeSpec& s, const MlpContext& ctx);

struct LookupSpec {
  Field in;                     // k sign bits, 1 ≤ k ≤ 8
  Field out;                    // m dims, 1 ≤ m ≤ 32
  std::vector<uint32_t> table;  // 2^k words: out bit j for input p is bit j of table[p]
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildLookup(UnitWriter& units, const LookupSpec& s, const MlpContext& ctx);

struct RequantiseSpec {
  Field in;                 // V dims holding ±r or (empty) 0
  double magnitude = 16;    // r (> 0)
  Field out;                // V dims: ±u
  double lambdaEmpty = 0;   // 0: the input is never empty; else λ on tokens whose input is empty
  uint32_t emptyValue = 0;  // the word an empty input becomes
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildRequantise(UnitWriter& units, const RequantiseSpec& s,
                                       const MlpContext& ctx);

// Two levels in two layers: level 1's writer and context, level 2's writer and context.
struct AdderSpec {
  Field a, b;               // n sign bits each, n a multiple of 4, 4 ≤ n ≤ 32
  Field cin;                // 0 dims (constant carryIn) or 1 sign bit
  bool carryIn = false;     // the constant carry-in when cin has no dim
  bool invertB = false;     // s = a + ~b + cin (sub: invertB and carry-in 1)
  Field bus;                // 10 dims per nibble, written by level 1, read by level 2
  Field out;                // n dims
  Field cout;               // 0 or 1 dim: the carry out
  Prior busPrior = Prior::Zero, outPrior = Prior::Zero;
  bool unclamped = false;   // failing twin: level-2 carries as single units (output ∝ margin)
};
int adderBusDims(int bits);
Expected<GadgetReport> buildAdder(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                  const MlpContext& ctx2, const AdderSpec& s);

enum class CompareOp : uint8_t {
  Eq,   // a == b
  Ne,   // a != b
  LtU,  // a < b, unsigned
  LeU,  // a <= b, unsigned
  LtS,  // a < b, two's complement
  LeS,  // a <= b, two's complement
};
const char* compareOpName(CompareOp op);

struct CompareSpec {
  CompareOp op = CompareOp::Eq;
  Field a, b;               // n sign bits each, n a multiple of 4, 4 ≤ n ≤ 32
  Field bus;                // 2 dims per nibble (G_j, P_j); without the top's with `top`
  Field out;                // 1 dim: +u = true
  Prior busPrior = Prior::Zero, outPrior = Prior::Zero;
  bool unclamped = false;   // failing twin, as AdderSpec
  // Level 1 not written: the bus already holds it, from another compare of the same a, b and
  // signedness (level 1 does not depend on the op: Eq, Lt and Le of a, b share one bus).
  bool busWritten = false;
  // 0 or 2 dims: the top nibble's G, P in a field of their own (the bus then ends below it).
  // A signed compare differs from an unsigned one of the same a, b only in its top nibble (the
  // msb flipped in both operands), so it can read the unsigned compare's bus below the top and
  // write only `top` (busWritten covers the bus, topWritten the top; both with busPrior).
  Field top;
  bool topWritten = false;
};
int compareBusDims(int bits);
// Two's complement compares: their level 1 flips the msb of both operands.
bool isSignedCompare(CompareOp op);
// `s` on the one level 1 that compares of the same a, b share (busWritten, top, topWritten):
// `bus` (compareBusDims dims) written by the set's Eq and read by the others, the signed ones
// below its top nibble; `top` (2 dims) the signed ones' top nibble, written by the set's LtS. The
// set must hold an Eq, and an LtS where it holds a signed compare. Usage for a top of other than 2
// dims (a signed compare would read the unsigned top nibble).
Status shareLevel1(CompareSpec& s, const Field& bus, const Field& top);
Expected<GadgetReport> buildCompare(UnitWriter& level1, const MlpContext& ctx1,
                                    UnitWriter& level2, const MlpContext& ctx2,
                                    const CompareSpec& s);

enum class Selector : uint8_t {
  OneHot,  // n sign dims, exactly one +1
  Binary,  // k sign dims holding the index, n ≤ 2^k
};

struct MuxSpec {
  std::vector<Field> inputs;  // n ≥ 1 fields of m dims each
  Field select;
  Selector selector = Selector::OneHot;
  Field out;                  // m dims
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildMux(UnitWriter& units, const MuxSpec& s, const MlpContext& ctx);

// −x on every dim of `field` (it then holds exactly 0). One linear unit per dim.
Expected<GadgetReport> buildCancel(UnitWriter& units, const Field& field, const MlpContext& ctx);

// u − x on every dim of `field` (it then holds exactly the +u pad). One linear unit per dim.
Expected<GadgetReport> buildPad(UnitWriter& units, const Field& field, const MlpContext& ctx);

// The three pieces of the header, one call each, for gadgets built in other files
// (circuit/multiply.h). A decision N = Σ coef·x̂[dim] + constant is in units of λG; an up is
// given as terms on h (so up = λ·Σ w·x̂); an output {dim, d} adds d·u·(up/λ) to dim when the
// unit is on (with up = 1·ballast: exactly d·u).
struct LinearForm {
  std::vector<std::pair<int, double>> terms;  // (dim, coefficient of x̂)
  double constant = 0;
};
struct Output {
  int dim = 0;
  double d = 0;  // in units of u
};
// A detector (N = +1 on, ≤ −1 off) with the given up.
Expected<GadgetReport> addDetector(UnitWriter& units, const MlpContext& ctx, const LinearForm& n,
                                   const std::vector<Term>& up, const std::vector<Output>& out);
// A step pair: λG·[N ≥ 1] times up for an integer N (pass N = T − θ + 1 for [T ≥ θ]); the
// caller keeps N ≤ 256 on the positive side (bf16 rounds gate_proj's output to 8 bits).
Expected<GadgetReport> addStep(UnitWriter& units, const MlpContext& ctx, const LinearForm& n,
                               const std::vector<Term>& up, const std::vector<Output>& out);
// A constant d·u on each output dim (one linear unit).
Expected<GadgetReport> addConstant(UnitWriter& units, const MlpContext& ctx,
                                   const std::vector<Output>& out);

}  // namespace qgpu::circuit
