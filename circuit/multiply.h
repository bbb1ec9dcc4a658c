// qgpu/circuit/multiply.h — the multiplier: mul (low 32 bits of a·b), mulhi.u, mulhi.s and mad
// (low 32 bits of a·b + c) of 32-bit sign fields, as consecutive MLP layers built from the exact
// pieces of circuit/logic.h (detector, step pair, constant, Replace, the two-level adder). Every
// layer reads and writes clean ±u sign fields (the full layout, docs/circuit.md §3.2), so every
// decision is an exact integer threshold and every output has one magnitude.
//
// The pipeline (docs/circuit.md §9 "Built: the multiplier"):
//   stage 0  partial products. One detector unit per product bit: gate λG·x̂(a_i) (on iff a_i),
//            up = h(b_j) + h(ballast) = 2λ·b_j, so the unit adds exactly ±2u·a_i·b_j; with one
//            constant unit the dim holds u·(2·a_i·b_j − 1) (or its complement, below). A SwiGLU
//            unit is a product of two linear forms, so a bit product is one unit. Products whose
//            column i + j is at or above the result's width are not built: 528 for the low half
//            (mul, mad), all 1,024 for mulhi.
//   stage 1  column counts. Column k's bits sum to T_k ≤ 33; bit l of T_k (weight 2^(k+l)) is
//            Σ_θ ±[T_k ≥ θ] over the thresholds θ that are multiples of 2^l (+ when θ/2^l is
//            odd): one step pair per θ, shared by all bits of the count (its down row writes ±2u
//            to each bit it flips). Bits at columns ≥ the width are dropped (mod 2^width).
//            Column heights fall from ≤ 33 to ≤ 6.
//   stage 2  window counters: three adjacent columns at a time, S = Σ 2^(c−3g)·T_c ≤ 42, its 6
//            bits land at columns 3g..3g+5 (the same shared-threshold construction). Each column
//            then holds ≤ 2 bits: two rows, placed straight into the adder's operand fields.
//   stage 3, 4  the two-level adder (buildAdder) adds the rows: mul / mad done in 5 layers.
//   mulhi    the rows are 64 bits wide. The low half's carry out c32 comes from a 32-bit adder
//            over the rows' low halves (levels at stages 3, 4; its sum is discarded); the high
//            half is a 32-bit adder whose level 1 runs at stage 3 and whose level 2, at stage 5,
//            takes c32 as its carry-in: 6 layers. (A 64-bit two-level adder would need byte
//            digits, whose sum bits have step margins above 256: not bf16-exact.)
//   mulhi.s  Baugh–Wooley: the products a_31·b_j (j < 31) and a_i·b_31 (i < 31) have weight
//            −2^(i+j); written as complemented bits (1 − p)·2^(i+j) plus the constant
//            −2·(2^62 − 2^31) ≡ 2^63 + 2^32 (mod 2^64), i.e. two constant one-bits (columns 32
//            and 63) that enter stage 1's thresholds as constants.
//   mad      c's 32 bits join the matrix at stage 1 as one more row (column k: k + 2 bits).
//   gates    (the pipeline's multiply at its continuation position, docs/circuit.md "MUL in the
//            pipeline"): with `enable` literals every product unit's decision gains them,
//            N = x̂(a_i) + Σ ±x̂(lit) − k, so a product is 1 only where all k hold and the result
//            is 0 + the gated addend elsewhere; with `addendEnable` (mad) stage 0 also writes
//            c_k ∧ enable ∧ addendEnable into 32 more dims of region X, one detector each, and
//            those join the matrix instead of c: one Mad gadget is mul where addendEnable fails
//            and mad where it holds, with no unit or layer more but the 32 copies.
//   pass     (a gated mad) with `passEnable` literals, one of them the negation of an `enable`
//            literal, stage 0 also writes pass_k ∧ passEnable into the same 32 copies (a second
//            detector each): where passEnable holds, the products and c's copy are 0, so the
//            gadget writes `pass` unchanged — the pipeline's atomics pass their old word through
//            the multiplier, so that one result stage decides both regrecs. The two detectors of
//            a copy never fire together (the negated literal), so the copy ends at exactly ±u.
//
// Every threshold is over at most 42 + 1 units, so |N| ≤ 43 on both sides: exact in fp32 and in
// bf16 (whose gate output keeps 8 bits). Margins: on λG, off ≤ −λG (as the adder).
//
// The bus: four regions, one per stage output, each always replaced (its dims may hold any ±u
// before): `products` (stage 0: the partial products and the gated addend's copies), `counts`
// (stage 1's bits), `rows` (stage 2's two rows and, for mulhi, the low adder's discarded sum and
// c32 from stage 4) and `adder` (stage 3: the adders' buses). A region is read only by the next
// stage (`rows` by stages 3, 4 and, for mulhi, 5), so as separate fields they live a layer or two
// each and a layout by liveness (circuit/layout.h) gives each stage's dims back; in one field
// (multiplyBusIn) `rows` reuses `products`' dims and `adder` `counts`', as a dim is rewritten only
// in a layer at or after the one that last reads it (a layer reads its input before it writes).
//
// Errors: Usage for a spec that does not fit (widths, a bus of the wrong size, the wrong number
// of stages, a layer without room), OverLimit for λG < 89 (from the pieces).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "circuit/assembler.h"
#include "circuit/logic.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

enum class MulOp : uint8_t {
  Lo,   // mul: low 32 bits of a·b
  HiU,  // mulhi.u: high 32 bits of the unsigned 64-bit product
  HiS,  // mulhi.s: high 32 bits of the signed 64-bit product
  Mad,  // mad: low 32 bits of a·b + c
};
const char* mulOpName(MulOp op);

// MLP layers the gadget spans (one stage per layer, in order): 5 for Lo and Mad, 6 for HiU/HiS.
constexpr int multiplyLayers(MulOp op) {
  return op == MulOp::HiU || op == MulOp::HiS ? 6 : 5;
}
// The bus's regions (header "The bus"); `gatedAddend`: a Mad with addendEnable literals, whose
// products region holds the addend's 32 copies too.
struct MultiplyBus {
  Field products, counts, rows, adder;
};
struct MultiplyBusDims {
  int products = 0, counts = 0, rows = 0, adder = 0;
};
MultiplyBusDims multiplyBusRegions(MulOp op, bool gatedAddend = false);
// The dims of the bus in one field: `rows` over `products`, `adder` over `counts`.
int multiplyBusDims(MulOp op, bool gatedAddend = false);
// The regions within one field of multiplyBusDims(op, gatedAddend) dims (Usage otherwise).
Expected<MultiplyBus> multiplyBusIn(const Field& bus, MulOp op, bool gatedAddend = false);

struct MultiplySpec {
  MulOp op = MulOp::Lo;
  Field a, b;  // 32 sign bits each
  Field c;     // Mad: the addend, 32 sign bits; otherwise 0 dims
  MultiplyBus bus;  // multiplyBusRegions(op, !addendEnable.empty()), each always replaced
  Field out;   // 32 dims
  Prior outPrior = Prior::Zero;
  // The gates (header): the products count where every `enable` literal holds; mad's c joins
  // where those and every `addendEnable` literal hold (Mad only). Empty: always.
  std::vector<Literal> enable;
  std::vector<Literal> addendEnable;
  // A gated mad's pass-through (header, "pass"): 32 sign bits written unchanged where every
  // `passEnable` literal holds; passEnable must hold the negation of an `enable` literal. Empty /
  // 0 dims: none.
  Field pass;
  std::vector<Literal> passEnable;
};

// One layer's writer and context; stage i of the gadget is written through stages[i].
struct MulStage {
  UnitWriter* units = nullptr;
  MlpContext ctx;
};

struct MultiplyReport {
  GadgetReport gadget;             // margins, total units
  std::vector<int> unitsPerLayer;  // by stage, Replace cancels included
  int partialProducts = 0;         // stage 0's product bits
  int countBits = 0;               // stage 1's output bits (region Y)
  int busDims = 0;
  std::vector<int> maxHeight;  // tallest column entering stage 1, stage 2, the adder
};

Expected<MultiplyReport> buildMultiply(std::span<const MulStage> stages, const MultiplySpec& s);

}  // namespace qgpu::circuit
