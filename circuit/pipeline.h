// qgpu/circuit/pipeline.h — the execute pipeline (docs/circuit.md §4.1, §9 "Built: the execute
// pipeline"): the built stages placed one after another, so that a program of ALU ops runs end to
// end in the model, from the prompt's tokens to every token of the run — EX, WM, each op's record,
// CTA, END, LIMIT:
//   layers E..E+4    the front end with its payload banks (circuit/frontend.h) and the operand
//                    select (circuit/operands.h): the fetched head word, the operand words
//                    word[k][l] of the 3 sources in the 4 lanes, m (the WM latch); the control
//                    stage's counters, PROG-tag and launch latches and its decode (control.h),
//                    its heads and units after the select's
//   layers S..S+7    the control stage's scheduler (circuit/control.h, S = E + 5), its branch
//                    predicate the front end's port 0 (predPort[0]: at the terminator position the
//                    TERM word's predicate), read at E+4 before the predicate file's flip
//                    (ControlSpec::predInverted); no fault is supplied (no op here faults)
//   layers A..A+3    the ALU stage (circuit/alu_stage.h), A = E + 5, MLP only, its units after
//                    the scheduler's: opcode = the fetched head word's opcode bits read in the
//                    ROM's polarity (−u = 1: AluStageSpec::opcodeInverted), lane l's a, b, c =
//                    word[0..2][l], p, q = lane l's bit of the front end's predicate ports psrc0,
//                    psrc1 (predPort[1], predPort[2], raw bits, +u = true); r_l, s_l out; the bus
//                    by liveness (AluBusLayout::Liveness)
//   layers F..F+3    the result stage (circuit/result_stage.h), F = A + 4, MLP only (units after
//                    the scheduler's: ResultStageSpec::firstUnit): head = the fetched head word
//                    (headInverted), mask = m, r_l, s_l the ALU's, old_l = the front end's
//                    oldDst[l] (+u = 1), guard_l = lane l of predPort[0] (the guard predicate's raw
//                    bit: the result stage decodes the head word's code and negate itself, g_l),
//                    oldPred_l = lane l of predPort[3] (dstPred)
//   layer  E+13      the control stage's emit: the token at every reset, terminator and EX
//                    position (EX, WM, CTA, END, LIMIT) and `decides` there
//   layers R..R+3    the record emitter (circuit/record_emit.h), R = F + 4 = E + 13 (its heads
//                    after the control stage's fault latch), its buffer latches reading the result
//                    stage's outcome (RecordEmitSpec::outcomeFrom), enabled by the front end's exec
//                    = isOp ∧ ¬isTerm (RecordEmitSpec::execFrom); its last layer writes the control
//                    stage's token where the stage decides (RecordEmitSpec::overrideFrom) and the
//                    record's otherwise, into the one emit field lm_head reads
// 17 layers; only E..E+6 and R, R+1 hold heads (the others may be full_attention layers with zero
// weights: their attention adds exactly 0, and the config's heads then cost nothing there).
//
// With memory ops (ExecuteSpec::memory: ld, st, st.b8, st.b16 in both spaces, and FAULT where an
// executing lane's address faults), 18 layers:
//   layer  E+2       a third launch latch: the PROG word's sharedWords
//   (OperandsSpec::sharedWordsLatch) layer  E+4 MLP   the fetched offset word flipped to +u = 1
//   (the memory stage's adder reads it so) layer  E+5 MLP   the executing lanes e_l = exec ∧ m_l ∧
//   gt_l (the result stage's guard-true
//                    rule on the head word's guard code and negate and port 0's lane bit: the
//                    result stage's own gt, at F, is too late for the memory stage's L+4)
//   layers M..M+7    the memory stage (circuit/memory_stage.h, M = E + 5, prefixAtomics off): its
//                    heads (the data memories') at M..M+4 after the control stage's, its units
//                    after the ALU's and the result stage's; head = the fetched head word
//                    (headInverted), offset the flipped word, src0 / src1 / src2 = operand
//                    ports 0..2 (src2: atom.cas's swap value, read with the prefix atomics);
//                    the load also onto the ALU's r_l at M+4 = E+9 (loadOnto: the ALU writes 0
//                    for a memory opcode), in time for the result stage's merge at F+1; its fault
//                    into the control stage's supplied fault (ControlSpec::fault)
//   layer  E+13 MLP  the outcome select: per dim [writes ∧ memrec] + [¬writes ∧ the result stage's
//                    outcome] (the memrec's last lane is final after M+7 = E+12)
//   layers R..R+3    the record emitter at R = E + 14, latching the select's outcome
// Heads in E..E+9 and E+13..E+15.
//
// Nothing is supplied: the front end computes the fetched words, the operands, dst's old value,
// the four predicate ports and exec from the trace tokens alone, the control stage the tokens
// around the records. Code 0 (none) on a predicate port reads predicate 0 (port 0: the TERM
// word's predicate); every consumer ignores it there (unguarded: gt = 1; no psrc: the ALU does
// not read it; no dstPred: isPred = 0).
//
// Embeddings: the caller writes the trace rows first (writeTokenEmbeddings, before the build:
// it resets every dim), then each stage writes its own embedding dims at build (the register
// file's and the control stage's counter dims, the emitter's extras: writeRecordExtras).
//
// Every stage's own contract holds (their headers); the pipeline adds no gadget, only wiring and
// the polarity of the head-word and branch-predicate readers. Usage diag when the config lacks the
// layers, heads, units or dims; the stages' refusals pass through. A refused build may leave
// weights written.
//
// With atomics too (ExecuteSpec::atomics: atom.and, or, xor, exch, add, min.u/s, max.u/s whose
// dst is r0 — their memrec only), 20 layers: the memory stage with its prefix atomics (10 layers,
// M..M+9 = E+5..E+14: atom.add's prefix sum and min / max's compares; memory_stage.h), the outcome
// select at E+15 and the record emitter at E+16.
//
// With the atomics' regrec too (ExecuteSpec::atomicRegrec: those atomics with any dst — the old
// value into a register, trace.md's memrec + regrec, or NOP + regrec when no lane executes), 24
// layers: the regrec is written at the continuation position q (frontend.h isCont: the memrec's
// last token, or the NOP), where the front end fetches the continuation row and no op executes.
//   layer  E+5 MLP   the emitter's record positions: exec ∨ isCont (execRecord)
//   layer  E+15 GDN  10 latch heads (tap.h buildLatch, enable = exec: written at every op's
//                    executing position p, held across the memrec's tokens): the head word, the
//                    memory stage's atomOld_l (final at E+14), the front end's oldDst_l and the
//                    guard port's lane bits — at q they read what the atomic had at p
//   layers E+15..E+18  a second result stage on the latched fields (r_l = atomOld_l, old_l =
//                    oldDst_l, the guard from the latched head word and bits, m the WM latch):
//                    the regrec, WU or WR by the trace's rule
//   layer  E+15 MLP  the outcome at p: [writes ∧ memrec] + [¬writes ∧ the result stage's
//                    outcome] (the memrec is final after E+14), so that the memrec's and the
//                    result stage's fields do not wait to the select
//   layer  E+19 MLP  the outcome select: [isCont ∧ regrec] + [¬isCont ∧ the outcome at p]
//   layers R..R+3    the record emitter at R = E + 20, enabled by execRecord
//
// With the warp ops too (ExecuteSpec::warpOps, with memory: shfl.up / down / bfly / idx,
// vote.ballot / any / all), no layer more: circuit/warp_ops.h in the ALU's S1..S3 = E+6..E+8, on
// the operand select's words of all four lanes, the psrc0 port's lane bits and the executing
// lanes e (E+5), adding onto the ALU's r_l and s_l (the ALU writes 0 for a warp opcode).
//
// With the multiplies too (ExecuteSpec::multiply, with atomicRegrec: mul and mad — trace.md's
// NOP + regrec, the product written at the continuation position q as an atomic's old value is),
// 32 layers (docs/circuit.md "MUL in the pipeline"), the multiplier two lanes at a time so that
// only two lanes' buses are live in a layer:
//   layer  E+5 MLP   the op kind at p from the fetched opcode: isMul = [mul] + [mad], isMad
//   layer  E+15 GDN  the guard latch also holds isMul and isMad (its spare dims); 6 latch heads
//                    more hold the operand words a_l, b_l, c_l (ports 0..2) of lanes 0, 1
//   layers E+15..E+19  lanes 0, 1 of circuit/multiply.h's gated Mad on the held operands: the
//                    products gated by the held isMul, c by the held isMad (mul: a·b, mad: a·b +
//                    c), the held atomOld_l passed through where the held isMul fails
//                    (MultiplySpec::pass: an atomic's old word)
//   layer  E+19 GDN  6 latch heads hold lanes 2, 3's operand words
//   layers E+19..E+23  lanes 2, 3's gated Mad, beside lanes 0, 1's last stage
//   layers E+23..E+26  the regrec's result stage on the held fields, in place of the one at
//                    E+15..E+18 (r_l = the multiplier's word: the product, or the atomic's old
//                    word; its first layer reads no r_l, so it starts beside the multiplier's last
//                    stage): one stage decides both regrecs
//   layer  E+27 MLP  the outcome select as above; the outcome at p (E+15) has one term more,
//                    [isMul] → NOP (the multiply's first record)
//   layers R..R+3    the record emitter at R = E + 28
// mulhi.u and mulhi.s are not executed (the host expands them: host/lower/expand_multiply.h).
//
// Not here: mulhi.
//
// The layout: buildExecutePipeline takes its fields from the caller's allocator, in one order. On
// a fresh one that is one field per value (4,246 dims; 5,862 with memory). planExecuteLayout
// instead derives every field's live range from a count-only build's weights and lets fields
// that are never live together share dims (layout.h planByLiveness: 3,341 and 3,921 dims); the
// model is built on that plan (buildExecuteModel with a planned FieldAllocator).
//
// Failing twins (ExecuteTwin): each wires one input wrong and must write wrong results.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "circuit/alu_stage.h"
#include "circuit/control.h"
#include "circuit/frontend.h"
#include "circuit/layout.h"
#include "circuit/memory_stage.h"
#include "circuit/multiply.h"
#include "circuit/operands.h"
#include "circuit/record_emit.h"
#include "circuit/result_stage.h"
#include "circuit/tokens.h"
#include "circuit/warp_ops.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

inline constexpr int kExecuteLayers = 5 + kAluStageLayers + kResultStageLayers + kRecordLayers;
// With memory ops (ExecuteSpec::memory): one more layer, the outcome select at E+13, and the
// record emitter at E+14.
inline constexpr int kExecuteMemoryLayers = kExecuteLayers + 1;
// With atomics (ExecuteSpec::atomics): the memory stage's two prefix-atomic layers more, the select
// at E+15 and the emitter at E+16.
inline constexpr int kExecuteAtomicsLayers = kExecuteMemoryLayers + kMemoryStageLayers - kMemoryChainLayers;
// With the atomics' regrec (ExecuteSpec::atomicRegrec): a second result stage at E+15..E+18 on the
// latched fields, the select at E+19 and the emitter at E+20.
inline constexpr int kExecuteRegrecLayers = kExecuteAtomicsLayers + kResultStageLayers;
// The multiplier computes two lanes at a time: lanes 0, 1 from E+15, lanes 2, 3 from E+19 beside
// the first pair's last stage, so that only two lanes' buses are live in any layer.
inline constexpr int kMultiplyLanesAtOnce = 2;
inline constexpr int kMultiplyLaneGroups = kRecordLanes / kMultiplyLanesAtOnce;
// Layers one group of the multiplier adds: its stages (multiply.h) less the one it shares.
inline constexpr int kMultiplyGroupLayers = multiplyLayers(MulOp::Mad) - 1;
// With the multiplies (ExecuteSpec::multiply): the multiplier's groups at E+15..E+19 and
// E+19..E+23, its result stage from E+23 beside the last, the select at E+27 and the emitter at
// E+28.
inline constexpr int kExecuteMultiplyLayers =
    kExecuteRegrecLayers + kMultiplyLaneGroups * kMultiplyGroupLayers;
// The latch heads that hold one group's operand words (3 ports × 2 lanes), in the group's first
// layer (E+15 and E+19).
inline constexpr int kMultiplyLatchHeads = 3 * kMultiplyLanesAtOnce;
// The latch heads at E+15 that carry an atomic's fields from p to its continuation position: the
// head word, atomOld and oldDst per lane (32 bits each), the guard port's 4 lane bits. With the
// multiplies the head word's and oldDst's (read first by the result stage at E+23) are at E+16,
// where their pads do not sit beside the memory stage's last layers.
inline constexpr int kRegrecLatchHeads = 2 + 2 * kRecordLanes;
inline constexpr int kRegrecLateLatchHeads = 1 + kRecordLanes;
// The memory stage's layers in the pipeline: E+5 .. E+12 (no prefix atomics).
static_assert(kMemoryChainLayers == kAluStageLayers + kResultStageLayers);
// The control stage's emit layer is the record emitter's first: R = E + 13.
static_assert(kControlLayers == 5 + kAluStageLayers + kResultStageLayers + 1);

enum class ExecuteTwin : uint8_t {
  None,                 // the pipeline
  OpcodeWrongPolarity,  // the ALU reads the fetched opcode as +u = 1 (the ROM's is −u = 1)
  OperandsSwapped,      // the ALU's a and b read ports 1 and 0 (the wrong ports)
  GuardFromPsrc0Port,   // the result stage's guard reads psrc0's predicate port, not the guard's
  RegrecFromLoad,       // the regrec's old values are the memory stage's loads (the word before
                        // the op), not atomOld (before the lane: wrong after a same-word lane)
  ShuffleAnySource,     // a shuffle reads its source lane even where that lane does not execute
  MultiplyUnheld,       // the multiplier reads the operand words at q (the continuation row's),
                        // not those held from the multiply's position p
  NoPads,               // the layout's pad restores are not written: a head writes onto a dead
                        // field's word where it needs the +u pad
};

struct ExecuteSpec {
  TokenLayout tokens;   // the full layout (λ = 1) of the config's hidden size
  int layer0 = 0;       // E: layers E .. E + kExecuteLayers − 1
  int stepLimit = 64;   // the control stage's LIMIT (ControlSpec::stepLimit: 1..10^6, with ticks)
  // Memory ops (ld, st, st.b8, st.b16 in both spaces; the bitwise atomics' memrec): the memory
  // stage at E+5 .. E+12 and the outcome select; kExecuteMemoryLayers layers.
  bool memory = false;
  // With memory: atom.add / and / or / xor / exch / min / max / inc / dec / cas with dst r0 too
  // (the memory stage's prefix atomics); kExecuteAtomicsLayers layers.
  bool atomics = false;
  // With atomics: their old value into dst too (the regrec at the continuation position);
  // kExecuteRegrecLayers layers.
  bool atomicRegrec = false;
  // With atomicRegrec: mul and mad, their product at the continuation position;
  // kExecuteMultiplyLayers layers.
  bool multiply = false;
  // With memory (its executing lanes): the warp ops in the ALU's layers (circuit/warp_ops.h).
  bool warpOps = false;
  // The layout's pad restores (planExecuteLayout, circuit/layout.h planByLiveness): true keeps
  // them under the widest layer's units (a checkpoint whose layers are all as wide as the widest
  // gets no wider); false puts each at the MLP right before its field's writer, which holds the
  // fewest dims live (a packed checkpoint, circuit/pack.h, splits a layer that grows).
  bool padsUnderWidest = true;
  ExecuteTwin twin = ExecuteTwin::None;
};

struct ExecutePipeline {
  TokenLayout tokens;  // the spec's
  FrontEnd fe;
  Operands operands;
  Control control;
  Field opcode;                // the fetched head word's opcode bits (−u = 1)
  std::vector<AluLane> lanes;  // the ALU's lanes: a, b, c the operand words; r, s its results
  Field aluBus;
  AluStageReport alu;
  std::array<ResultLane, kRecordLanes> resultIn;  // the result stage's per-lane inputs (wiring)
  ResultStage result;
  // With memory: the flipped offset word (E+4, +u = 1), the executing lanes m ∧ gt ∧ exec (E+5),
  // the memory stage, its fault (the control stage's supplied fault) and the outcome select (E+13:
  // the memrec for a memory-writing op, the result stage's outcome otherwise).
  Field offset, memExec, memFault;
  // With memory: the op's class at E+4 from the fetched opcode, [isAlu, isMemoryStage] and with
  // the warp ops isWarp (+u = true: the ALU stage's ops; the memory stage's memory and spill ops;
  // the warp ops) — the guards under which the ALU's bus, the memory stage's address path and the
  // warp ops' fields share dims (weights.h Field::kinds).
  Field opClass;
  // With memory: the ALU's op groups at E+4 (alu_stage.h AluGroup, +u = the op is of that group),
  // the guards under which the groups' bus fields share dims.
  Field aluGroup;
  MemoryStage memory;
  RecordOutcomeFields outcome;
  // With atomicRegrec: the emitter's record positions exec ∨ isCont (E+5), the latched fields the
  // second result stage reads at the continuation position (E+15), and that stage (not built
  // with multiply: mulRegrec decides both).
  Field execRecord;
  Field heldHead, heldGuard;
  std::array<Field, kRecordLanes> heldOld, heldDst;
  ResultStage regrec;
  // With multiply: the op kind at p (E+5: isMul, isMad), the held operand words (by lane: ports
  // 0..2; lanes 0, 1 at E+15, lanes 2, 3 at E+19), the multiplier's words (the products, or an
  // atomic's old words) and their result stage (E+23): the regrec of both.
  Field mulKind;
  std::array<std::array<Field, 3>, kRecordLanes> heldOperand;
  std::array<Field, kRecordLanes> product;
  ResultStage mulRegrec;
  WarpOps warp;  // with warpOps
  RecordEmitter emitter;
  int aluLayer = 0, resultLayer = 0, emitLayer = 0;  // A, F, R
  int memoryLayer = -1, selectLayer = -1;  // with memory: E+5, E+13 (atomics: E+15, regrec: E+19)
  int regrecLayer = -1;                    // with atomicRegrec: E+15
  int mulRegrecLayer = -1;                 // with multiply: E+23
  std::vector<int> heads;                  // per layer E .. E + executeLayers(spec) − 1
  std::vector<int> units;                  // per layer, cancels and pad restores included
};

// Builds the pipeline into `weights` (fields from `alloc`, after the token layout).
Expected<ExecutePipeline> buildExecutePipeline(CircuitWeights& weights, FieldAllocator& alloc,
                                               const ExecuteSpec& spec);

// ---- The model: the pipeline on a layout by liveness ----
//
// What a caller adds after the pipeline in both builds below (e.g. probes: lm_head rows reading
// fields, which keeps those fields live to the end); may be empty.
using ExecuteExtra = std::function<Status(CircuitWeights&, const ExecutePipeline&)>;

// The whole model on `alloc` (fresh, or planned): the token layout over the config's hidden size,
// the token embeddings, the pipeline (`spec` without its tokens), `extra`, then the planned
// allocator's pad restores (layout.h).
Expected<ExecutePipeline> buildExecuteModel(CircuitWeights& weights, FieldAllocator& alloc,
                                            ExecuteSpec spec, const ExecuteExtra& extra = {});

// The layout by liveness of that model (circuit/layout.h planByLiveness): built once with
// count-only weights over `scratchHidden` dims, one field per value, recording which block touches
// which dim; then planned. Build the model itself with `config.hiddenSize = plan.hidden` and
// plan.allocator(). `config` gives everything but the hidden size.
// Without memory ops the fields live a few layers each: hidden 3,855 one field per value, the
// plan's span in docs/circuit.md (pipeline_spec_test).
Expected<LivenessPlan> planExecuteLayout(model::Qwen35Config config, const ExecuteSpec& spec,
                                         const ExecuteExtra& extra = {}, int scratchHidden = 16384);

// The layers the pipeline `spec` builds (the warp ops add none).
inline int executeLayers(const ExecuteSpec& spec) {
  if (!spec.memory) return kExecuteLayers;
  if (!spec.atomics) return kExecuteMemoryLayers;
  if (!spec.atomicRegrec) return kExecuteAtomicsLayers;
  return spec.multiply ? kExecuteMultiplyLayers : kExecuteRegrecLayers;
}

// Value heads per layer of the pipeline `spec` builds, at a key head dim (0 where a layer holds
// none).
std::vector<int> executePipelineHeads(int64_t keyHeadDim, const ExecuteSpec& spec = {});

// Ok when the pipeline `spec` builds executes every op of `program`; else OverLimit naming the
// first op it does not execute (its mnemonic, block and index) and why. It executes an op iff the
// ALU stage computes it (aluStageExclusion is null); with memory a load or a store (ld, st, st.b8,
// st.b16, global or shared); with atomics an atom.add / and / or / xor / exch / min / max / inc /
// dec / cas whose dst is r0, and with atomicRegrec one with any dst; with multiply mul and mad;
// with warpOps the shuffles and votes. Never: mulhi.u, mulhi.s.
Status pipelineExecutes(const machine::Program& program, const ExecuteSpec& spec);

}  // namespace qgpu::circuit
