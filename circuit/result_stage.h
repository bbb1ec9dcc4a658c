// qgpu/circuit/result_stage.h — the result stage (docs/circuit.md §4.1 T1, §9 "Built: the result
// stage"): at an op's executing position, the MLP layers between the ALU's per-lane results and
// the record emitter's output buffer (circuit/record_emit.h). It decides the op's record for the
// register- and predicate-writing ops — `WU(r) v`, `WR(r) v{popcount(m)}`, `WP(p) v(bits)` or
// `NOP` (docs/trace.md "What one op writes") — and writes it in exactly the encoding the
// emitter's buffer latches take (`RecordOutcomeFields`: tag in the emit encoding, mask, 4 lane
// values), so the emitter reads it with `RecordEmitSpec::outcomeFrom`.
//
// Inputs (clean ±u sign fields, +u = 1, at the executing position; the stage computes at every
// position, only the emitter's latch enable `exec` makes a position count):
//   head     the op's head word OP(a) (32 bits, trace::packedLayout(PackedWord::OpHead): opcode,
//            dst, dstPred code, guard predicate code, guard negate; a predicate code is p + 1,
//            0 = none). The front end's fetched word has inverted polarity (−u = 1): with
//            `headInverted` every head literal's sign flips (circuit/pipeline.h reads it so).
//   mask     m, the step's active lanes (the WM latch, 4 bits)
//   per lane r_l (32) and s_l (1): the ALU stage's register result and predicate result;
//            old_l (32): dst's value before the op (a 4th register-file read port per lane, keyed
//            by (dst, w): 4 more heads in the operand layer, regfile.h);
//            g_l (1): the guard predicate's value (the predicate file's guard port);
//            oldP_l (1): dstPred's bit before the op (a 2nd predicate-file port keyed by dstPred).
//
// The destination kind is decoded from the opcode bits against oracle/isa.def's Dst column (one
// AND per op row: the table stays the one definition; no extra ROM bit). Memory ops: a load's
// regrec is this stage's with r_l = the loaded word (the memory stage's select into r; not built
// here); a store's or atomic's memrec comes from the memory stage at its own record position.
//
// Construction (4 MLP layers F..F+3, F = firstLayer; every AND a clamped pair, assembler.h
// `addAnd`, Gλ = mlpGain; every output field cancelled first, then −u + 2u·Σ(disjoint ANDs), so
// each dim ends at exactly ±u: the full layout of docs/circuit.md §3.2):
//   F    guard-true gt_l = [code = 0] + [g_l ∧ ¬neg] + [¬g_l ∧ neg]
//                          − [code = 0 ∧ g_l ∧ ¬neg] − [code = 0 ∧ ¬g_l ∧ neg]   (exactly 0/1)
//        kind: isReg = Σ_{op: Dst = Reg} [opcode = op], isPred likewise (7-literal ANDs);
//        dstZero = [dst = 0].
//   F+1  the guard merge into the lane values: v_l,i = [gt_l ∧ r_l,i] + [¬gt_l ∧ old_l,i]
//        (bit 0 also ∧ ¬isPred); bit 0 of a predicate op: wp_l = [isPred ∧ m_l ∧ gt_l ∧ s_l] +
//        [isPred ∧ m_l ∧ ¬gt_l ∧ oldP_l] (guard-false lanes keep their bit, inactive lanes 0) —
//        the emitter's WP reads bit 0 of every lane.
//   F+2  per lane pair (a < b, 6 pairs) and bit i: differ_ab,i = [v_a,i ∧ ¬v_b,i] + [¬v_a,i ∧ v_b,i].
//   F+3  the tag (emit encoding: family sign one-hot, index bits, −u above) and the mask:
//          WR, index r−1:  [isReg ∧ dst = r]                           r = 1..15
//          WU:             [isReg ∧ ¬dstZero ∧ m = M ∧ ¬differ_ab,i for all a < b in M, all i]
//                          → +2u on WU, −2u on WR                     M = 1..15
//          WP, index p:    [isPred ∧ dstPred = p + 1]                  p = 0..7
//          NOP:            [¬isReg ∧ ¬isPred] + [¬isPred ∧ isReg ∧ dstZero]
//          mask bits:      [m_l]; the 28 word bits −u (no memrec here)
//        so WU exactly when every pair of active lanes agrees on all 32 merged bits (one active
//        lane: always WU), otherwise WR.
//
// Costs (4 lanes; pinned by hand in tests/result_stage_spec_test.cpp): units F: 7 cancels + 2 +
// 2·(17 guard + isa.def's Reg and Pred rows + 1); F+1: 128 + 2 + 2·264 = 658; F+2: 192 + 2 +
// 2·384 = 962; F+3: 64 + 2 + 2·44 = 154. The widest AND: 2 + 4 + 6·32 = 198 literals (M = 1111).
// Dims: 4 + 3 (F), 6·32 = 192 (F+2), the outcome 4·32 + 32 + 32 = 192. No heads.
//
// Errors: Usage for fields of the wrong width, layers outside the config, a head word whose
// packed layout does not match; OverLimit for Gλ < 178 (addAnd). A refused spec may leave units
// written: discard the weights.
//
// Failing twin (`ResultStageTwin::WuOverAllLanes`): WU decided over all four lanes, not the
// active ones — wrong (WR) whenever an inactive lane's merged value differs.
#pragma once

#include <array>
#include <cstdint>

#include "circuit/record_emit.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kResultStageLayers = 4;
inline constexpr int kResultPairs = kRecordLanes * (kRecordLanes - 1) / 2;

enum class ResultStageTwin : uint8_t {
  None,            // the gadget
  WuOverAllLanes,  // failing twin: WU iff all 4 lanes' merged values are equal (not the active)
};

struct ResultLane {
  Field r;        // 32: the ALU's register result
  Field s;        // 1: the ALU's predicate result
  Field old;      // 32: dst's value before the op
  Field guard;    // 1: the guard predicate's value
  Field oldPred;  // 1: dstPred's bit before the op
};

struct ResultStageSpec {
  TokenLayout tokens;   // ballast, unit, λ of the full layout
  int firstLayer = 0;   // MLPs of layers firstLayer .. firstLayer + 3
  Field head;           // 32: the head word OP(a), +u = 1 (−u = 1 with headInverted)
  bool headInverted = false;  // the front end's fetched word (ROM polarity: −u = bit set)
  Field mask;           // 4: m
  std::array<ResultLane, kRecordLanes> lanes;
  float mlpGain = 256;  // G of the ANDs (Gλ ≥ 178)
  ResultStageTwin twin = ResultStageTwin::None;
  // MLP units another stage already wrote in each of the four layers (the control stage's, in
  // circuit/pipeline.h): this stage's follow them.
  std::array<int, 4> firstUnit{};
};

struct ResultStage {
  Field guardTrue;                // F: 4 dims, gt_l
  Field kind;                     // F: isReg, isPred, dstZero
  Field differ;                   // F+2: 6 pairs × 32 bits, pair order (0,1) (0,2) (0,3) (1,2) …
  RecordOutcomeFields outcome;    // F+1 values, F+3 tag and wordMask: the emitter's inputs
  std::array<int, kResultStageLayers> units{};  // per layer, cancels included
  int dims = 0;                   // residual dims the stage allocated
  int maxFanIn = 0;               // literals of the widest AND
};

// Allocates the stage's fields from `alloc` (after the caller's) and writes its MLP units.
Expected<ResultStage> buildResultStage(CircuitWeights& weights, FieldAllocator& alloc,
                                       const ResultStageSpec& spec);

}  // namespace qgpu::circuit
