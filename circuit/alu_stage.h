// qgpu/circuit/alu_stage.h — the ALU stage: for each of the warp's four lanes one op per pass,
// the op chosen by the fetched opcode, built from the gadgets of circuit/logic.h and
// circuit/alu_bits.h in four MLP layers (S0..S3; docs/circuit.md §9 "Built: the ALU stage").
//
// Inputs (clean ±u sign fields, as the operand layer leaves them): the head word's opcode field
// (bits 4..10 of OP(a), docs/trace.md "Prompt": the op's row in oracle/isa.def as a kOpcodeBits
// binary number), and per lane l the source words a_l, b_l, c_l (src0..src2) and the predicate
// source bits p_l (psrc0), q_l (psrc1). Outputs per lane: the result word r_l (the register
// result of an op whose isa.def row writes a register) and the predicate result bit s_l (of an op
// that writes a predicate); each is exactly ±u on every token, the word 0 / false for an op the
// stage does not compute (memory, warp ops, divisions, the multiplies: aluStageExclusion).
//
// The ops (every row of oracle/isa.def of class Alu, Cmp, Sel or Pred except divisions, which the
// host expands, and the multiplies, which are the MUL stage's) and what they share, per lane:
//   S0  opcode decode: one detector per stage op on the 7 opcode bits → the op one-hot (shared by
//       the lanes; the shift ops first, in kShiftOps order, as the shifter's prep reads them);
//       the adder's operands X = add|sub ? a : 0, Y = add ? b : sub ? ~b : neg|abs ? ~a : 0,
//       cin = sub|neg|abs, as 8-literal detectors on (opcode bits, one data bit) — so add, sub,
//       neg and abs share ONE adder; bfe's level 1 without its shifter (m, r and the signed
//       fill f; bfe.u reads the same m, r); popc, clz, bfind.u, prmt into their own fields.
//   S1  the lane-shared shifter's prep (the five shifts, and bfe's W = {0, a}, s = min(pos, 32):
//       ShiftPrepSpec::bfe); the adder's level 1; ONE level 1 for the five comparators eq,
//       lt.u, le.u, lt.s, le.s (ne = ¬eq, gt = ¬le, ge = ¬lt): its G, P do not depend on the
//       op, and the signed ones flip only the msb, so they read the unsigned bus below their
//       own top nibble (logic.h CompareSpec::top); the result word r begun: its cancel, −u and
//       the cases of popc, clz, bfind, prmt (kAluResultFirstLayer).
//   S2  the shifter's window (a shift's result, or bfe's sh = a >> pos); the adder's level 2
//       (sum); the comparators' level 2.
//   S3  the result: r = −u + Σ 2u·[case] over disjoint cases, each one detector gated by the op's
//       one-hot dim (popc, clz, bfind, prmt's cases, the −u and r's cancel already in S1, so
//       that those four fields are dead after S1): mov a; add/sub/neg the sum; abs sign(a) ?
//       sum : a; min/max lt ? a : b (or b : a); and/or/xor/not straight from a, b (1–2
//       detectors per bit); brev a's bits reversed (a wiring); the shifts the window; bfe's
//       level 2 (keep = m ∧ r selects sh; bfe.s's fill, alu_bits.h) as 1 / 3 cases per bit;
//       selp p ? a : b. s = −u + 2u·[case]: set.* from the comparators (negated where above),
//       pand/por/pxor/pnot/pmov from p, q, pconst = [a ≠ 0] (a is its immediate).
// Every case detector is an AND of ≤ 34 literals (N = Σ ℓ − (k − 1), |N| ≤ 67), so it is exact in
// fp32 and bf16 (rule R1, R2: on λG, off ≤ −λG); at most one case per output bit fires.
//
// Costs (4 lanes; derived by hand in alu_stage_spec_test, docs/circuit.md §9 "Built: the ALU
// stage"): S0 4,349, S1 4,300, S2 4,944, S3 3,408 units — each under 2b's 6,144; the bus is
// 42 + 4 × 522 = 2,130 dims, over 2b's 2,048 with the operands (§9 says what would fit). With
// busLayout = AluBusLayout::Liveness (circuit/layout.h) the bus's fields share dims by live range
// (peak 1,086 for four lanes, and the span too; bfe's sh and m, r, f are then two fields, the
// BfeSpec naming the 32 dims before m, which level 1 never touches with shiftOutside).
//
// Errors: Usage for a spec that does not fit (widths, the wrong number of layers, a bus of the
// wrong size, a layer without room), OverLimit for λG < 89 (from the pieces). A refused spec may
// leave units written: discard the weights.
//
// Failing twin: each layer's ctx.lowGainTwin (λG = 4): off units leak, the outputs are inexact.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "circuit/layout.h"
#include "circuit/logic.h"
#include "circuit/units.h"
#include "circuit/weights.h"
#include "common/diag.h"
#include "oracle/machine.h"

namespace qgpu::circuit {

// The opcode field's width: the head word's opcode bits (oracle/trace.cpp's kOpHeadWord).
inline constexpr int kOpcodeBits = std::bit_width(static_cast<unsigned>(machine::kNumOps - 1));
// MLP layers the stage spans.
inline constexpr int kAluStageLayers = 4;
// The stage layer that begins the result word r (its cancel, −u and the cases of popc, clz,
// bfind.u and prmt); S3 adds the other ops' cases. The predicate result s is written in S3.
inline constexpr int kAluResultFirstLayer = 1;

// Why the stage does not compute `op`, or nullptr when it does. The one table of the stage's
// ops: aluStageOps() lists exactly the ops with nullptr here, in one-hot order.
const char* aluStageExclusion(machine::Op op);
const std::vector<machine::Op>& aluStageOps();

struct AluLane {
  Field a, b, c;  // 32 sign dims each: src0, src1, src2 (unused sources hold anything)
  Field p, q;     // 1 dim each: psrc0, psrc1 of this lane
  Field r;        // 32 dims: the register result
  Field s;        // 1 dim: the predicate result
};

// How the bus's fields are placed in it.
enum class AluBusLayout : uint8_t {
  OneFieldPerValue,  // every value its own dims, in carve order (42 + 522 per lane)
  Liveness,          // circuit/layout.h: a field read last in stage layer k gives its dims to
                     // fields written in layer k or later (every bus write is a Replace)
  ByGroup,           // Liveness, and the op groups' fields (AluGroup) share dims while live:
                     // each group's writers guarded by its own literal (AluStageSpec::groupGuard)
};

// The ALU's op groups with bus fields of their own, read by no other group's ops (the result
// cases read them ANDed with the op's one-hot dim): the one adder (add, sub, neg, abs), the
// compares (set.*, min, max), the shifter (the shifts and bfe), popc, clz, bfind, prmt. Fields of
// two groups are never both written at one token, so with AluBusLayout::ByGroup they share dims
// (weights.h Field::kinds: kKindAluAdd …).
enum class AluGroup : uint8_t { Add, Compare, Shift, Popc, Clz, Bfind, Prmt };
inline constexpr int kAluGroups = 7;
// The group of a stage op; std::nullopt for one that reads no bus field but the one-hot (mov,
// the logic, brev, selp, the predicate ops).
std::optional<AluGroup> aluGroup(machine::Op op);
uint32_t aluGroupKind(AluGroup g);

struct AluStageSpec {
  Field opcode;                // kOpcodeBits sign dims
  // The opcode's polarity: false +u = 1 (a test field); true −u = 1, as the front end's fetched
  // head word holds it (circuit/frontend.h: the ROM reads inverted). Every opcode literal's sign
  // flips; nothing else changes (no extra unit, no extra layer).
  bool opcodeInverted = false;
  std::vector<AluLane> lanes;  // 1..kLanes
  Field bus;                   // aluStageBusDims(lanes.size(), busLayout) dims, always replaced
  Prior outPrior = Prior::Replace;  // r and s
  AluBusLayout busLayout = AluBusLayout::OneFieldPerValue;
  // Optional (0 dims: none): a 1-dim literal, +u at the ALU's ops alone, that guards every unit
  // the stage writes (units.h UnitGuard) but r's and s's cancel and −u: where another stage's op
  // executes, the bus keeps what its dims held, so the pipeline may put that stage's fields of
  // other kinds on it (weights.h Field::kinds). r and s are every token's; their cases AND the
  // one-hot, which is guarded too, so the guard holds them silent as well.
  Field guard;
  // Optional (0 dims: none), needed by AluBusLayout::ByGroup, and only with the guard:
  // kAluGroups dims in AluGroup order, dim g +u where the op is of group g, each guarding the
  // units that write its group's bus fields (the guard above the rest), so that where another
  // group's op executes those fields keep what their dims held.
  Field groupGuard;
};
int aluStageBusDims(int lanes, AluBusLayout layout = AluBusLayout::OneFieldPerValue);
// The bus's fields with their live ranges (stage layer i = mlpAt(i)), placed by `layout`; its
// report is the bus's peak, per-layer live dims and fragmentation. Usage for lanes outside
// 1..kLanes.
Expected<LayoutPlan> aluStageBusPlan(int lanes, AluBusLayout layout);

// One layer's writer and context; stage layer i is written through layers[i].
struct AluLayer {
  UnitWriter* units = nullptr;
  MlpContext ctx;
};

struct AluStageReport {
  GadgetReport gadget;             // margins, total units
  std::vector<int> unitsPerLayer;  // S0..S3, Replace cancels included
  int busDims = 0;
  AluBusLayout busLayout = AluBusLayout::OneFieldPerValue;  // the spec's
};

Expected<AluStageReport> buildAluStage(std::span<const AluLayer> layers, const AluStageSpec& s);

}  // namespace qgpu::circuit
