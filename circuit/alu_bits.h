// qgpu/circuit/alu_bits.h — the bit-level ALU gadgets: bitwise and/or/xor/not, the shifter
// (shl, shr.u, shr.s, and the funnel shifts shf.l / shf.r), popc, clz / bfind.u (priority
// detectors), brev, bfe.u / bfe.s and prmt (default mode). Each is a pure function of its spec
// that appends SwiGLU units (circuit/units.h) to one layer's MLP (bfe: two layers) and returns
// the margins it was built with (GadgetReport, circuit/logic.h).
//
// Common ground: exactly that of circuit/logic.h (docs/circuit.md R1–R4 and §9): a clean sign
// field holds ±u per dim (+ = bit 1), the pre-norm maps it to ±λ; write x̂ ∈ {−1, +1}, the bit
// is (x̂ + 1)/2. The three pieces, as in logic.h:
//   detector   gate λG·N, N = +1 exactly on the inputs it detects and ≤ −1 on every other; with
//              up = ballast it adds a constant d·u, with up = a field dim it *selects* that dim
//              (adds d·u·x̂). An AND of k literals ℓ_i ∈ {x̂, −x̂} is N = Σ ℓ_i − (k − 1).
//   step pair  silu(λG(T−θ+1)) − silu(λG(T−θ)) = λG·[T ≥ θ] for an integer T, the up either the
//              ballast (a constant) or a difference of dims ((x̂_p − x̂_q) ∈ {0, ±2}: exact).
//   linear     always on at λG; up = a field dim: copy, negate or cancel.
// Every gate here is λG·N with |N| ≤ 256 (bf16 rounds gate_proj's output to 8 significant
// bits), every up an exact small multiple of λ, every output ±u with one magnitude for every
// input. `Prior::Replace` first cancels what the output dims held (one linear unit per dim), the
// rule the full layout needs (λ the same power of two at every depth). Unit counts below are for
// the gadget alone; Replace adds one unit per output dim.
//
// Per gadget (n = 32-bit operands unless stated; cost for the 2b shape in docs/circuit.md §9
// "Built: the bit ALU"):
//   bitwise   not: out = −x̂_a (1 linear unit per bit). and: out = −u + 2u·[a ∧ b], detector
//             N = x̂_a + x̂_b − 1 (1 per bit + 1 constant); or: +u − 2u·[¬a ∧ ¬b] likewise;
//             xor: two selects per bit, gate N = ±x̂_a, up = b, down ∓1: out = a ? ¬b : b.
//             Units: not 32, and 33, or 33, xor 64. One layer, no bus.
//   shift     out_j = main_{j−k} (left) / main_{j+k} (right) while that index is in 0..31, else
//             the fill: fill_{32+j−k} / fill_{j+k−32} (Fill::Field: the funnel's other word),
//             0 (Fill::Zero) or main_31 (Fill::Sign). The amount k: Wrap → bits 0..4 of the
//             amount field (shf: c & 31); Clamp → the whole field as an unsigned number, k ≥ 32
//             meaning every bit is the fill (shl / shr.u: 0, shr.s: the sign) — "≥ 32" reads
//             every high bit: big = [Σ_{i≥5} bit_i ≥ 1], one step pair (T ≤ 27), and the 32
//             amount detectors D_k = AND(low 5 bits = k, every high bit 0), N = Σ_{i<5} ±x̂_i −
//             Σ_{i≥5} x̂_i − (dims − 1). One layer: per (k, j) one select (gate D_k, up = the
//             source dim, or the ballast with −1 for a zero fill): 32 × 32 = 1,024 units (+2 for
//             big). The alternative, a barrel of 5 mux stages (2 selects per bit and stage), is
//             320 units but 5 layers and a 32-dim bus per stage; the ALU has 2 layers (§4.1), and
//             1,024 units is 17 % of 2b's 6,144, so the one-layer form is the one built (§9).
//             Amount fields: 5..32 dims (Clamp: every dim read), ≥ 5 (Wrap: bits 0..4 read).
//             For 4 lanes and five ops the per-op form is too big; the lane-shared shifter below
//             serves all five.
//   lane-shared shifter (two layers, one per lane for all five shift ops): every shift is a
//             window of the 64-bit word W = {hi, lo}, out_j = W_{j+s}, s ∈ 0..32:
//               shl {a, 0}, s = 32 − k (k ≥ 32 → 0); shr.u {0, a}, shr.s {sign, a}, s = min(k, 32);
//               shf.l {b, a}, s = 32 − (c & 31); shf.r {b, a}, s = c & 31.
//             Prep (layer L) from the opcode one-hot (5 sign dims, none set = not a shift):
//             hi = −u + [shl]·(a+1)u + [shr.s]·(a_31+1)u + [shf.l ∨ shf.r]·(b+1)u (65 selects),
//             lo = −u + [¬shl]·(a+1)u (32), s one-hot (33 dims, none hot for a non-shift op): per
//             op group (shl; shr.u ∨ shr.s; shf.l; shf.r) 32 detectors AND(op, amount = k) (the
//             clamped ones also every high bit 0) and, for shl and shr, "op ∧ k ≥ 32" as one step
//             pair on T = Σ_{i≥5} b_i + 32·[op] ≥ 33 (132 units); one constant sets all three
//             fields to −u. An "either of two ops" literal is (ôp₁ + ôp₂ + 1) (±1 for a
//             one-hot). 230 units; bus = hi, lo, s = 97 dims. Window (layer L' > L): out = −u + Σ_s
//             [s]·(W_{j+s} + 1)u, 33 × 32 selects + 1 = 1,057 units; a non-shift op gives 0.
//   popc      count C = Σ bit_i (≤ n ≤ 32): one step pair per threshold θ = 1..n on T = Σ bit_i
//             (|T − θ| ≤ 32), each writing to every output bit k the change 2·(bit_k(θ) −
//             bit_k(θ−1))·u, plus one constant −u: 2n + 1 = 65 units. One layer.
//   priority  clz and bfind.u: n + 1 detectors, detector p = AND(bit_p, ¬bit_i for all i > p)
//             (N = x̂_p − Σ_{i>p} x̂_i − (n−1−p)), and one for "all zero"; exactly one fires and
//             writes the whole output word (clz: n−1−p, zero → n; bfind.u: p, zero → all ones):
//             33 units. One layer.
//   brev      out_j = in_{n−1−j}: a wiring. As a gadget one linear copy per bit (32 units);
//             inside a compiled pipeline it is free: the writer of brev's input permutes its own
//             down rows (any gadget's output dims are a list), so no unit is spent.
//   bfe       (two layers: L, L' > L) pos = b & 0xff, len = c & 0xff; bit i = a[pos+i] while
//             i < len and pos + i ≤ 31, else the fill: bfe.u 0, bfe.s len ≠ 0 ?
//             a[min(pos+len−1, 31)] : 0. Level 1 writes a bus of 96 (+1 signed) dims:
//               sh   = a >> pos (shift, Clamp over the 8 bits of pos, zero fill)       1,026 units
//               m_i  = [len ≥ i+1], a thermometer on T_len = Σ_{k<5} 2^k c_k +
//                      32·Σ_{k=5..7} c_k (≤ 127: equal to len when len < 32, ≥ 32 otherwise)   64
//               r_i  = [pos ≤ 31 − i] = 1 − [T_pos ≥ 32 − i], T_pos likewise                  64
//               f    (signed) = a[min(T''−1, 31)], T'' = T_pos + T_len (≤ 254; = pos + len when
//                      both < 32, ≥ 32 otherwise): f̂ = −1 + Σ_{θ=1..32} [T'' ≥ θ]·(y_{θ−1} −
//                      y_{θ−2}), y_k = x̂_{a_k} + 1, y_{−1} = 0 (telescoped one-hot select)    64
//               one constant sets m, f to −u and r to +u                                          1
//             (1,155 units unsigned, 1,219 signed).
//             Level 2: keep_i = m_i ∧ r_i; out_i = −u + keep_i·(x̂_sh_i + 1)·u (1 constant + 32
//             selects); signed adds 2u·[f ∧ m_0 ∧ ¬keep_i] as two disjoint 3-literal detectors
//             (¬m_i ∧ m_0 ∧ f) (i ≥ 1) and (m_i ∧ ¬r_i ∧ f) (m_i implies m_0): 33 / 96 units.
//   prmt      default mode: byte i of out = byte s & 7 of {b, a} (a = bytes 0..3), s = c's nibble
//             i; with s & 8 every bit of the byte is that byte's bit 7. Per (byte i, s) a 4-literal
//             detector on the nibble gates 8 selects (up = the source bits) or, sign mode, one
//             select of bit 7 written to all 8 dims: 4 × (8·8 + 8) = 288 units. One layer.
//   neg/abs   neg a = 0 − a is the adder of circuit/logic.h with a zero operand: zero + ~a +
//             carry-in 1 (2 layers, 417 + 96 units, bus 80); the lowering may as well emit
//             sub d, 0, a. abs a = mux(a_31: neg a, a): the adder's two levels, then a one-layer
//             32-bit mux (circuit/logic.h) selected by the sign bit a_31, 64 units:
//             3 layers (L, L+1, L+2). abs(INT_MIN) = INT_MIN falls out (neg INT_MIN = INT_MIN).
//             The ALU has 2 layers (§4.1) but the pipeline's next MLPs (memory, MUL) have room,
//             so the third level fits there; a 2-layer form (level 2's units gated by the sign,
//             a ¬sign-gated copy of a) is possible but not built.
//
// Errors: Usage for a spec that does not fit (widths, a Clamp with a field fill, a weight bf16
// cannot hold), OverLimit for λG < 89 (unless ctx.lowGainTwin). A refused spec may leave some of
// its units written (the UnitWriter writes unit by unit): discard the weights.
//
// Failing twins: ctx.lowGainTwin (λG = 4: off units leak, on units are 2 % short, rule R2), and
// for the shifter a semantic one: shl with Wrap instead of Clamp must fail on amounts ≥ 32.
#pragma once

#include <cstdint>
#include <optional>

#include "circuit/logic.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::circuit {

enum class BitwiseOp : uint8_t {
  And,  // a & b
  Or,   // a | b
  Xor,  // a ^ b
  Not,  // ~a (b unused)
};
const char* bitwiseOpName(BitwiseOp op);

struct BitwiseSpec {
  BitwiseOp op = BitwiseOp::And;
  Field a, b;  // n dims each (b: 0 dims for Not), 1 ≤ n ≤ 32
  Field out;   // n dims
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildBitwise(UnitWriter& units, const BitwiseSpec& s,
                                    const MlpContext& ctx);

enum class ShiftDir : uint8_t {
  Left,   // out_j = main_{j−k}
  Right,  // out_j = main_{j+k}
};
enum class ShiftFill : uint8_t {
  Zero,   // 0 bits shift in
  Sign,   // main's bit 31 shifts in (arithmetic right shift)
  Field,  // the bits of `fill` shift in (funnel: left takes fill's top bits, right its low bits)
};
enum class ShiftAmount : uint8_t {
  Wrap,   // k = amount & 31 (bits 0..4 read)
  Clamp,  // k = the whole amount field, unsigned; k ≥ 32 → every bit is the fill (Zero/Sign only)
};

struct ShiftSpec {
  ShiftDir dir = ShiftDir::Left;
  Field main;    // 32 dims
  ShiftFill fillKind = ShiftFill::Zero;
  Field fill;    // 32 dims for ShiftFill::Field, else 0
  ShiftAmount rule = ShiftAmount::Clamp;
  Field amount;  // Clamp: 5..32 dims; Wrap: ≥ 5 (bits 0..4 read)
  Field out;     // 32 dims
  Prior prior = Prior::Zero;
};
// The spec of a shift opcode of oracle/isa.def (Shl, ShrU, ShrS, ShfLW, ShfRW) on operand fields
// a, b, c: shl/shr by b with isa.def's "b >= 32" rules (Clamp over b's 32 dims), shf.l/shf.r as
// the funnel {b, a} by c & 31. nullopt for any other op.
std::optional<ShiftSpec> shiftSpecFor(machine::Op op, const Field& a, const Field& b,
                                      const Field& c, const Field& out, Prior prior);
Expected<GadgetReport> buildShift(UnitWriter& units, const ShiftSpec& s, const MlpContext& ctx);

// The lane-shared shifter: its opcode one-hot's dims, in this order.
constexpr machine::Op kShiftOps[] = {machine::Op::Shl, machine::Op::ShrU, machine::Op::ShrS,
                                     machine::Op::ShfLW, machine::Op::ShfRW};
struct ShiftPrepSpec {
  Field op;       // 5 sign dims, kShiftOps order: at most one +1 (none: not a shift op)
  Field a, b, c;  // 32 dims each (b: shl/shr amount, all 32 bits read; c: funnel amount, bits 0..4)
  Field hi, lo;   // 32 dims each: the window's word
  Field start;    // 33 dims: s one-hot (no dim hot when op names no shift)
  Prior prior = Prior::Zero;
  // Optional (0 or 2 sign dims, at most one +1, never with a shift op): the one-hot of bfe.u,
  // bfe.s. Either set → W = {0, a}, s = min(b & 0xff, 32): the window is bfe's sh = a >> pos, so
  // bfe needs no shifter of its own (circuit/alu_stage.h; BfeSpec::shiftOutside). +34 units.
  Field bfe;
};
Expected<GadgetReport> buildShiftPrep(UnitWriter& units, const ShiftPrepSpec& s,
                                      const MlpContext& ctx);
struct WindowSpec {
  Field lo, hi;  // 32 dims each: W = {hi, lo}, W_i = lo_i (i < 32), hi_{i−32}
  Field start;   // 33 dims, at most one +1
  Field out;     // 32 dims: W_{j+s}; 0 when no start dim is hot
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildWindow(UnitWriter& units, const WindowSpec& s, const MlpContext& ctx);

struct PopcSpec {
  Field in;   // n dims, 1 ≤ n ≤ 32
  Field out;  // m dims, enough for n (⌊log2 n⌋ + 1 ≤ m ≤ 32); dims above the count's bits are 0
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildPopc(UnitWriter& units, const PopcSpec& s, const MlpContext& ctx);

enum class PriorityOp : uint8_t {
  Clz,    // leading zeros from bit n−1; all zero → n
  BfindU, // index of the most significant 1; all zero → all ones (0xffffffff)
};
struct PrioritySpec {
  PriorityOp op = PriorityOp::Clz;
  Field in;   // n dims, 1 ≤ n ≤ 32
  Field out;  // m dims, 1 ≤ m ≤ 32, wide enough for n
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildPriority(UnitWriter& units, const PrioritySpec& s,
                                     const MlpContext& ctx);

struct BrevSpec {
  Field in;   // n dims, 1 ≤ n ≤ 32
  Field out;  // n dims: out_j = in_{n−1−j}
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildBrev(UnitWriter& units, const BrevSpec& s, const MlpContext& ctx);

struct BfeSpec {
  bool isSigned = false;
  Field a;     // 32 dims
  Field b, c;  // ≥ 8 dims each: pos = bits 0..7 of b, len = bits 0..7 of c
  Field bus;   // bfeBusDims(isSigned): sh 0..31, m 32..63, r 64..95, f 96 (signed)
  Field out;   // 32 dims
  Prior busPrior = Prior::Zero, outPrior = Prior::Zero;
  // Level 1 leaves sh (bus dims 0..31) to the caller, who writes a >> pos there by the same layer
  // level 2 reads it (the lane-shared shifter with ShiftPrepSpec::bfe): 1,026 units fewer.
  bool shiftOutside = false;
};
int bfeBusDims(bool isSigned);
Expected<GadgetReport> buildBfe(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                const MlpContext& ctx2, const BfeSpec& s);
// Level 1 alone (circuit/alu_stage.h: bfe.u and bfe.s share one signed level 1, whose sh, m and r
// are the unsigned bus, and fold level 2 into the stage's result layer).
Expected<GadgetReport> buildBfeLevel1(UnitWriter& level1, const MlpContext& ctx1,
                                      const BfeSpec& s);

struct PrmtSpec {
  Field a, b;  // 32 dims each
  Field c;     // ≥ 16 dims: the four selector nibbles (bits 16..31 unused in the default mode)
  Field out;   // 32 dims
  Prior prior = Prior::Zero;
};
Expected<GadgetReport> buildPrmt(UnitWriter& units, const PrmtSpec& s, const MlpContext& ctx);

// abs over three layers: level 1 and 2 of the adder write neg = zero + ~a + 1 (bus:
// adderBusDims(32) dims), level 3 the mux by a_31. `zero`: 32 dims holding 0 (−u) on every token.
struct AbsSpec {
  Field a;     // 32 dims
  Field zero;  // 32 dims, the word 0 on every token
  Field bus;   // adderBusDims(32)
  Field neg;   // 32 dims: −a (written by level 2, read by level 3)
  Field out;   // 32 dims: |a|
  Prior busPrior = Prior::Zero, outPrior = Prior::Zero;  // bus and neg / out
};
Expected<GadgetReport> buildAbs(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                const MlpContext& ctx2, UnitWriter& level3,
                                const MlpContext& ctx3, const AbsSpec& s);

}  // namespace qgpu::circuit
