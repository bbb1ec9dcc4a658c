// qgpu/circuit/warp_ops.h — gadget: the warp ops (shfl.up / down / bfly / idx, vote.ballot /
// any / all; oracle/isa.def class Warp) in the ALU stage's layers S1..S3 (docs/circuit.md §9
// "Built: the warp ops"). A warp op is the one op class whose lane reads other lanes' operands;
// the operand select has every lane's words in the residual at once (operands.h word[k][l]), so a
// shuffle is a multiplexer over the four lanes and a vote a function of the four lanes' bits.
//
// Semantics (the interpreter's: oracle/interpreter.cpp, oracle/semantics.h shuffleSource and
// evalVote), per executing lane l (e = the executing lanes: active and guard-true):
//   shuffle   j = shuffleSource(op, l, b_l, c_l); r_l = a_j if j ≠ −1 and e_j, else a_l
//   ballot    r_l = Σ_j [e_j ∧ p_j] 2^j            (p_j: psrc0 in lane j)
//   any, all  s_l = ∃j e_j ∧ p_j;  s_l = ∀j ¬e_j ∨ p_j
// shuffleSource on a 4-lane warp, with b = b_l[4:0], clamp = c_l[4:0], seg = c_l[12:8],
// maxLane = (l ∧ seg) ∨ (clamp ∧ ¬seg) (bitwise, 5 bits: m_0..m_4), minLane = l ∧ seg:
//   up    j = l − b, valid iff maxLane ≤ j;   down  j = l + b, valid iff j ≤ maxLane
//   bfly  j = l ⊕ b, valid iff j ≤ maxLane;   idx   j = minLane ∨ (b ∧ ¬seg), valid iff j ≤ maxLane
// and j must be a lane, 0..3.
//
// Construction (3 MLP layers S1..S3 = firstLayer .. firstLayer + 2; every AND a clamped pair,
// assembler.h AndFieldWriter: each field cancelled, −u, + 2u·Σ(disjoint ANDs)):
//   S1  the op one-hot (7 dims: one AND of the opcode's literals each) and isShfl (4 ANDs);
//       per lane l: m_i = [l_i ∧ seg_i] + [¬seg_i ∧ clamp_i] (l_i the lane index's bit, a
//       constant: the first AND only where l_i = 1), idx's j bits J_i = [l_i ∧ seg_i] + [¬seg_i
//       ∧ b_i] (i = 0, 1) and its overflow bits n_i = [b_i ∧ ¬seg_i] (i = 2..4: j ≥ 4 iff one is
//       set); lane-shared v_j = [e_j ∧ p_j] and w_j = [¬e_j] + [e_j ∧ p_j].
//   S2  per lane l and source j ≠ l: sel_lj = Σ_op [op ∧ (j is op's source for lane l) ∧ valid ∧
//       e_j], the source test an AND on b_l's 5 bits (up: b = l − j, j < l; down: b = j − l,
//       j > l; bfly: b = l ⊕ j) or on J and ¬n (idx), the validity enumerated as disjoint
//       ANDs on the m bits: maxLane ≤ j ⟺ ¬m_4 ∧ ¬m_3 ∧ ¬m_2 ∧ (m_1 m_0) ∈ {0..j}; j ≤ maxLane ⟺
//       m_4 + ¬m_4 m_3 + ¬m_4 ¬m_3 m_2 + ¬m_4 ¬m_3 ¬m_2 ∧ (m_1 m_0) ∈ {j..3}. At most one j holds.
//   S3  onto the ALU's r_l and s_l (the ALU writes −u there for a warp opcode, so each output
//       bit gets at most one +2u): r_l,i += Σ_{j≠l} [sel_lj ∧ a_j,i] + [isShfl ∧ ∧_{j≠l} ¬sel_lj
//       ∧ a_l,i] + [ballot ∧ v_i] (i < 4); s_l += Σ_j [any ∧ v_j ∧ ∧_{k<j} ¬v_k] + [all ∧ w_0 ∧
//       w_1 ∧ w_2 ∧ w_3].
// The widest AND: op, 5 b bits, e_j and 5 m bits = 12 literals.
//
// Inputs are clean ±u sign fields at S1's input (+u = 1; the opcode in the ROM's polarity with
// opcodeInverted). Usage diag for fields of the wrong width or layers outside the config.
#pragma once

#include <array>

#include "circuit/alu_stage.h"
#include "circuit/layout.h"
#include "circuit/record_emit.h"
#include "circuit/tokens.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kWarpOpsLayers = 3;
inline constexpr int kWarpOps = 7;  // shfl.up, down, bfly, idx, vote.ballot, any, all

struct WarpOpsSpec {
  TokenLayout tokens;
  int firstLayer = 0;           // S1: MLPs of firstLayer .. firstLayer + 2
  Field opcode;                 // kOpcodeBits: the head word's opcode
  bool opcodeInverted = false;  // the ROM's polarity (−u = 1)
  Field exec;                   // 4: e, the executing lanes
  // Per lane: a, b, c the sources, p psrc0; r, s the ALU's results (added onto at S3).
  std::array<AluLane, kRecordLanes> lanes;
  float mlpGain = 128;  // G of the cancels (the ANDs use 2G)
  // MLP units already written in each of the three layers: this gadget's follow them.
  std::array<int, kWarpOpsLayers> firstUnit{};
  // Optional (0 dims: none): a 1-dim literal, +u at the warp ops alone, that guards every unit
  // the gadget writes (units.h UnitGuard): where another op executes its fields keep what their
  // dims held and r, s get nothing, so its fields are of kind kKindWarp (weights.h Field::kinds)
  // and may share dims with another kind's.
  Field guard;
  // Failing twin: a shuffle reads its source lane whether or not that lane executes (sel_lj
  // without e_j) — wrong wherever the source is inactive or guard-false and its word differs.
  bool sourceExecutesTwin = false;
};

struct WarpOps {
  Field op;      // S1: kWarpOps dims, the one-hot (order of the struct comment)
  Field isShfl;  // S1: 1 dim
  std::array<Field, kRecordLanes> maxLane;  // S1: m_0..m_4
  std::array<Field, kRecordLanes> idxLane;  // S1: J_0, J_1, n_2, n_3, n_4
  Field votes, allOk;                       // S1: v_j, w_j (4 dims each)
  std::array<Field, kRecordLanes> sel;      // S2: per lane, sel_lj for j = 0..3 (j = l: −u)
  std::array<int, kWarpOpsLayers> units{};  // per layer, cancels included
  int dims = 0;
  int maxFanIn = 0;
};

// The warp ops the gadget computes, in one-hot order.
const std::array<machine::Op, kWarpOps>& warpOps();

Expected<WarpOps> buildWarpOps(CircuitWeights& weights, FieldAllocator& alloc,
                               const WarpOpsSpec& spec);

}  // namespace qgpu::circuit
