// qgpu/circuit/tests/pipeline_spec_test.cpp — the execute pipeline's build (circuit/pipeline.h)
// without running it (count-only weights): the layers each stage lands in, the heads per layer,
// the wiring (the ALU's opcode is the fetched head word's opcode field, read inverted; a, b, c
// are ports 0, 1, 2; the result stage's fields on the ALU bus), the dims it takes, and its
// refusals. The run through the model is pipeline_test's.
#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "circuit/config.h"
#include "circuit/layout.h"
#include "circuit/multiply.h"
#include "circuit/pipeline.h"
#include "circuit/tests/kind_writers.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

// 3,604 when the caller supplied per lane old (32), guard, oldPred, p, q (4 × 36 = 144) and the
// emitter embedded exec (1): the front end's ports and exec replace them, 3,604 − 145 = 3,459.
// The control stage then adds its fields and its scheduler's (400: 114 of its own — control.h's
// fields, the emit encoding 28 and decides — and the scheduler's 286) and removes the emitter's
// next-token carrier field and latch (2 × 32): 3,459 + 400 − 64 = 3,795; and the result stage's
// own fields (result_stage_spec_test: 391), which sat on the dead ALU bus before the pipeline's
// layout by liveness placed every field: 4,186 dims, one field per value. The step ticks add 18
// (control.h: 3 quiet dims and a pad, the tick events and counter resets 2 + 2, due_1 and due_2,
// the EX latch 8; the limit's one nonzero digit takes atLimit's dim): 4,204 (60 fewer than before
// the layout's tie-breaks: the ALU bus by liveness now spans its peak, alu_stage_spec_test).
// With the ALU's result word begun in S1 (alu_stage.h) its bus spans 1,334, not 1,846: 512 fewer;
// with one level 1 for its five compares, 1,086: 248 fewer.
constexpr int kHidden = 3795 + 391 + 18 - 512 - 248;

// The pipelines built here beside the ALU-only one ({}): with memory ops, with atomics, with the
// atomics' regrec.
const ExecuteSpec kMemory{.memory = true};
const ExecuteSpec kAtomics{.memory = true, .atomics = true};
const ExecuteSpec kRegrec{.memory = true, .atomics = true, .atomicRegrec = true};

model::Qwen35Config config(int layers = kExecuteLayers, int hidden = kHidden, int units = 5200) {
  model::Qwen35Config c = linearConfig(hidden, layers, units, 1024);
  c.linearNumKeyHeads = c.linearNumValueHeads = 51;  // E+3 (see below)
  c.linearKeyHeadDim = 64;
  return c;
}

struct Built {
  Expected<ExecutePipeline> pipe = makeDiag(ErrorKind::Internal, "not built");
  int used = 0;
  std::vector<Field> taken;                       // (buildInOrder) every field taken
  std::vector<CircuitWeights::UnitRecord> units;  // (buildInOrder) every MLP unit written
};

// One field per value, in order, over the config's hidden size.
Built buildInOrder(const model::Qwen35Config& c, const ExecuteSpec& s = {}) {
  CircuitWeights w(c, WeightStorage::CountOnly);
  w.logUnits();
  FieldAllocator alloc(static_cast<int>(c.hiddenSize));
  Built b;
  b.pipe = buildExecuteModel(w, alloc, s);
  b.used = alloc.used();
  b.taken = alloc.taken();
  b.units = w.unitLog();
  return b;
}

// On the layout by liveness (what the model is built on: pipeline.h planExecuteLayout); the
// config's hidden size is replaced by the plan's.
Built build(const model::Qwen35Config& c, const ExecuteSpec& s = {}) {
  Built b;
  auto plan = planExecuteLayout(c, s);
  if (!plan.ok()) {
    b.pipe = plan.error();
    return b;
  }
  model::Qwen35Config planned = c;
  planned.hiddenSize = plan->hidden;
  CircuitWeights w(planned, WeightStorage::CountOnly);
  FieldAllocator alloc = plan->allocator();
  b.pipe = buildExecuteModel(w, alloc, s);
  b.used = alloc.used();
  return b;
}

TEST(ExecutePipelineSpec, StagesFollowEachOtherInSeventeenLayers) {
  const Built b = buildInOrder(config());
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  EXPECT_EQ(kExecuteLayers, 17);
  EXPECT_EQ(b.pipe->aluLayer, 5);
  EXPECT_EQ(b.pipe->resultLayer, 9);
  EXPECT_EQ(b.pipe->emitLayer, 13);
  // Heads: the front end with the select (operands.h: 5, 11, 28, 49, 35 at dk 64, the front end's
  // L+1 predicate-file tag latch and L+4's 4th register port and 4 predicate ports included); the
  // control stage's (control.h: the CTA counter at E, the PROG-tag latch and the three step
  // counters at E+1, +2 launch latches at E+3, 21 at S = E+5, the scheduler's 16 at S+1, the
  // fault and EX latches at E+13); the emitter's
  // 10 + 11 (record_emit.h: no next latch), none in the MLP-only stages.
  const std::vector<int> want = {6, 15, 28, 51, 35, 21, 16, 0, 0, 0, 0, 0, 0, 12, 11, 0, 0};
  EXPECT_EQ(b.pipe->heads, want);
  EXPECT_EQ(executePipelineHeads(64), want);
  // Units: the control stage's S..S+7 (control.h: S 32 + the scheduler's 244 + 2; S+2 13,
  // S+5 37, S+6 35) before the ALU stage's S0..S3 (alu_stage.h) and the result stage's
  // (result_stage.h) in the same layers.
  EXPECT_EQ(b.pipe->units[5], 278 + 4349);
  EXPECT_EQ(b.pipe->units[7], 13 + 4944);
  EXPECT_EQ(b.pipe->units[10], 37 + 658);
  EXPECT_EQ(b.pipe->units[11], 35 + 962);
  EXPECT_EQ(b.used, kHidden);
}

// With memory ops: the 3,795 above, plus the sharedWords latch (8), the flipped offset word (32),
// the fault (1), the executing lanes (4), the memory stage's own dims without the prefix atomics
// (memory_stage_spec_test's list: kind 27, the spill slots' products and base 25 + 7, 4 × 116,
// read addresses 64, lane faults 4 (the fault is the pipeline's), loads 128, the memrec 192, the
// pairs 36, atomOld 96: 1,043), the data
// memories' (the assembler's 6 records × 8 + value 32, tag 1, tag latch 8, quiet 3, heavy 1,
// thresholds 8, addrEnable 1, writes 2, address latch 8, 8 reads × (32 + fault 1): 376) and the
// outcome select (4 × 32 + 32 + 32 = 192), the op's class (2: the ALU's and the memory stage's
// guards) and the ALU's op groups (7: with those guards the groups' bus fields share dims,
// alu_stage.h AluBusLayout::ByGroup, so the bus is 690 dims, not 1,086).
constexpr int kMemoryHidden =
    kHidden + 8 + 32 + 1 + 4 + 1043 + 376 + 192 + 2 + kAluGroups + 690 - 1086;
// With atomics: the memory stage's prefix-atomic fields on top — memory_stage_spec_test's 4,033
// dims with them (atom.add with its adders' buses, min / max, inc, dec, cas) against 1,041
// without, less the op fault, which is the pipeline's in both (memFault): 2,991 —, one field per
// value; on the layout by
// liveness they live only in E+8..E+14, past the ALU's peak (atom.dec writes nothing before
// E+8), but atom.cas's swap values (the operand select's third word per lane, 128 dims) are read
// up to E+14, so they are live through the peak: 3,952 (measured, peak live 3,947; 4,031 before
// the spill slots and the layout's tie-breaks, 3,935 before atom.cas, as the memory pipeline
// then; the memory pipeline now 3,896). With the layout's pad restores (layout.h: attention-written
// fields no longer hold dims from the embedding on) 3,429, the memory pipeline 3,358; with the
// ALU's result word begun in S1, 3,045 and 2,846; with the ROM's words one field each
// (frontend.h: the six words other than the head word dead after E+4), 2,853 and 2,655; with
// min / max's lt.s from lt.u (memory_stage.h: 320 compare bus dims fewer at E+10, E+11), 2,870
// (peak live 2,851, the ALU's E+7: the first fit places the pads a little wider); with the ALU's
// compares on one level 1, 2,622; with atom.add's adders on buses of their own (320 dims more one
// field per value: the address adders' bus then dies after E+6), 2,407 (peak live 2,406, E+5),
// as the memory pipeline; the same (peak live 2,407: the kind isMinMaxDec) with the atomics'
// own fields on shared dims (Field::kinds, memory_stage.h) and the wide fields first; 2,153 (peak
// live 2,145, E+6) with the ALU's bus and the memory stage's address path on shared dims too (the
// op's class at E+4 guarding both), as against 2,089 for the memory pipeline; 1,827 (peak live
// 1,815, the memory stage's E+9) with the ALU's op groups on shared dims (alu_stage.h ByGroup: the
// bus from 1,086 to 690), the memory pipeline 1,700; 1,828 and 1,701 with the kind dim
// isAddMinMaxDec (the guard of the pairs' masks, memory_stage.h).
constexpr int kAtomicsHidden = kMemoryHidden + 3715 + 4 * 80 - 1043 - 1;
constexpr int kAtomicsPlanned = 1828;
// With the atomics' regrec: execRecord (1), the held head word (32), guard bits (8, the latch's
// V = 8), atomOld and oldDst per lane (4 × 64), the second result stage's own fields
// (result_stage_spec_test: 391) and the outcome at p (192: selected at E+15, then again with the
// regrec at E+19).
constexpr int kRegrecHidden = kAtomicsHidden + 1 + 32 + 8 + 4 * 64 + 391 + 192;
// On the layout by liveness the held fields are the latches' (attention-written fields keep their
// dims from the embedding on: layout.h), so they are live at the ALU's peak: 263 dims more
// (measured: 4,184); with the step ticks 4,311 (measured: peak live 4,198, the rest placement);
// with atom.cas's swap values live through the peak 4,343 (peak live 4,295; the same with
// atom.dec, whose fields are all written past the peak); with the spill slots and the layout's
// tie-breaks (layout.h: the ALU bus spans its peak) 4,249 (peak live 4,245). With the pad
// restores the latches' fields live from an MLP at most three layers before them: 3,429 (peak
// live 3,429); with the ALU's result word begun in S1, 3,055 (peak live 3,048, the memory stage's
// E+10); with the ROM's words one field each, 2,870 (peak live 2,856); with min / max's lt.s from
// lt.u, 2,870 (peak live 2,853, the ALU's E+7); with the ALU's compares on one level 1 and
// atom.add's adders on buses of their own, 2,470 (peak live 2,467, the memory stage's E+12); with
// the atomics' own fields on shared dims, 2,409 (peak live 2,409, the ALU's E+5); with the ALU's
// bus and the address path on shared dims, 2,155 (peak live 2,147, E+6); with the ALU's op groups
// on shared dims, 1,931 (peak live 1,916, the memory stage's E+12); with the pairs' masks on
// shared dims by kind (add, min / max, dec), 1,850 (peak live 1,826, E+9); with the memory
// stage's last layer selecting per kind (memory_stage.h L+9: the widest layer, 7,146 units, so
// the pads find room earlier), 1,888 (peak live 1,826, E+9).
constexpr int kRegrecPlanned = 1888;

// Where the memory pipelines place their stages (layers from E), and their units per layer printed.
struct Placement {
  int memory, result, select, emit;
};
void expectPlacement(const ExecutePipeline& p, Placement want) {
  EXPECT_EQ(p.aluLayer, 5);
  EXPECT_EQ(p.memoryLayer, want.memory);
  EXPECT_EQ(p.resultLayer, want.result);
  EXPECT_EQ(p.selectLayer, want.select);
  EXPECT_EQ(p.emitLayer, want.emit);
}
void printUnits(const char* name, int hidden, const ExecutePipeline& p) {
  std::cout << "[pipeline spec] " << name << ": hidden " << hidden << "; units per layer:";
  for (int u : p.units) std::cout << " " << u;
  std::cout << std::endl;
}

TEST(ExecutePipelineSpec, WithMemoryTheMemoryStageAndTheSelectTakeOneMoreLayer) {
  const Built b = buildInOrder(config(kExecuteMemoryLayers, kMemoryHidden, 8000), kMemory);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  const ExecutePipeline& p = b.pipe.value();
  EXPECT_EQ(kExecuteMemoryLayers, 18);
  expectPlacement(p, {.memory = 5, .result = 9, .select = 13, .emit = 14});
  // As without memory, and: the sharedWords latch at E+2; the data memories' 3, 5, 8, 1, 16 at
  // E+5..E+9 (memory_stage_spec_test); the control stage's fault latch alone at E+13; the
  // emitter's 10 + 11 at E+14, E+15.
  const std::vector<int> want = {6, 15, 29, 51, 35, 24, 21, 8, 1, 16, 0, 0, 0, 2, 10, 11, 0, 0};
  EXPECT_EQ(p.heads, want);
  EXPECT_EQ(executePipelineHeads(64, kMemory), want);
  EXPECT_EQ(b.used, kMemoryHidden);
  // The wiring: the fault is the control stage's supplied one, the load lands on the ALU's r, the
  // emitter reads the select's outcome, the memory stage reads the flipped offset and e.
  EXPECT_EQ(p.memory.fault.offset, p.memFault.offset);
  EXPECT_EQ(p.outcome.tag.dims, p.result.outcome.tag.dims);
  EXPECT_NE(p.outcome.tag.offset, p.result.outcome.tag.offset);
  EXPECT_EQ(p.memExec.dims, 4);
  EXPECT_EQ(p.offset.dims, 32);
  EXPECT_EQ(p.operands.sharedWords.dims, 8);
  printUnits("with memory", b.used, p);
}

// With atomics (ExecuteSpec::atomics, the leg's pipeline) the memory stage has its prefix atomics
// (10 layers, E+5..E+14), the select moves to E+15, the emitter to E+16; the widest MLP is still
// E+5's (the prefix atomics' units go to E+9..E+14).
TEST(ExecutePipelineSpec, WithAtomicsTheSelectAndTheEmitterMoveTwoLayers) {
  const Built b = buildInOrder(config(kExecuteAtomicsLayers, kAtomicsHidden, 12000), kAtomics);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  const ExecutePipeline& p = b.pipe.value();
  EXPECT_EQ(kExecuteAtomicsLayers, 20);
  expectPlacement(p, {.memory = 5, .result = 9, .select = 15, .emit = 16});
  // As with memory, the emitter's heads two layers later.
  const std::vector<int> want = {6, 15, 29, 51, 35, 24, 21, 8, 1, 16, 0, 0, 0, 2, 0, 0, 10, 11, 0, 0};
  EXPECT_EQ(p.heads, want);
  EXPECT_EQ(executePipelineHeads(64, kAtomics), want);
  EXPECT_EQ(b.used, kAtomicsHidden);
  // The prefix atomics' values reach the memrec the select reads (memory_stage.h: final in L+9).
  EXPECT_EQ(p.memory.addNew[3].dims, 32);
  EXPECT_EQ(p.memory.mmNew[3].dims, 32);
  printUnits("with atomics", b.used, p);
  // The widest layer: E+14 (the memory stage's L+9, each selected kind's own cancels:
  // memory_stage.h; E+5, the ALU's S0 beside the memory stage's L, was until then).
  EXPECT_EQ(*std::max_element(p.units.begin(), p.units.end()), p.units[14]);
  auto refused = buildInOrder(config(kExecuteAtomicsLayers, kAtomicsHidden, 12000),
                              ExecuteSpec{.atomics = true});
  ASSERT_FALSE(refused.pipe.ok());
  EXPECT_EQ(refused.pipe.error().kind, ErrorKind::Usage);
}

// With the atomics' regrec (ExecuteSpec::atomicRegrec) the latches and the second result stage
// take E+15..E+18, the select moves to E+19 and the emitter to E+20; the emitter's record
// positions are exec ∨ isCont, and the second result stage reads only the held fields.
TEST(ExecutePipelineSpec, WithTheAtomicsRegrecASecondResultStageReadsTheHeldFields) {
  const Built b = buildInOrder(config(kExecuteRegrecLayers, kRegrecHidden, 12000), kRegrec);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  const ExecutePipeline& p = b.pipe.value();
  EXPECT_EQ(kExecuteRegrecLayers, 24);
  expectPlacement(p, {.memory = 5, .result = 9, .select = 19, .emit = 20});
  EXPECT_EQ(p.regrecLayer, 15);
  // As with atomics, the 10 latches at E+15 and the emitter's heads four layers later.
  const std::vector<int> want = {6, 15, 29, 51, 35, 24, 21, 8, 1,  16, 0, 0,
                                 0, 2,  0,  10, 0,  0,  0,  0, 10, 11, 0, 0};
  EXPECT_EQ(p.heads, want);
  EXPECT_EQ(executePipelineHeads(64, kRegrec), want);
  EXPECT_EQ(b.used, kRegrecHidden);
  EXPECT_EQ(p.emitter.exec.offset, p.execRecord.offset);
  for (int l = 0; l < 4; ++l) {
    const auto i = static_cast<size_t>(l);
    EXPECT_EQ(p.heldOld[i].dims, 32);
    EXPECT_EQ(p.heldDst[i].dims, 32);
    EXPECT_NE(p.heldOld[i].offset, p.memory.atomOld[i].offset);
  }
  EXPECT_EQ(p.regrec.outcome.tag.dims, p.outcome.tag.dims);
  printUnits("with the atomics' regrec", b.used, p);
  auto refused = buildInOrder(config(kExecuteRegrecLayers, kRegrecHidden, 12000),
                              ExecuteSpec{.memory = true, .atomicRegrec = true});
  ASSERT_FALSE(refused.pipe.ok());
  EXPECT_EQ(refused.pipe.error().kind, ErrorKind::Usage);
}

// With the multiplies (ExecuteSpec::multiply): the op kind at E+5 (2 dims), 12 operand latches
// more (32 dims each; lanes 0, 1 at E+15, lanes 2, 3 at E+19), four lanes of the gated Mad two at
// a time at E+15..E+23 (a product of 32 and a bus each, its four regions as fields of their own:
// multiplyBusRegions, pinned in multiply_spec_test), a result stage from E+23 in place of the
// regrec's at E+15 (the multiplier passes the held old words through: that one stage decides both),
// the select at E+27 and the emitter at E+28: 32 layers.
const ExecuteSpec kMultiply{.memory = true, .atomics = true, .atomicRegrec = true, .multiply = true};
// On the layout by liveness (measured): the operand words live on from E+4 to the latches at E+15,
// through the ALU's peak, so the plan grew by about their 384 dims over the regrec's 4,249, to
// 4,659. With the pad restores 4,199: the peak (3,737) is now the multiplier's four buses at
// E+17; the span is 462 more, since fields that need pads start early enough for their pads to
// fit the widest layer's units (3,983 with every pad just before its writer, layout.h). With the
// multiplier two lanes at a time (pipeline.h) 3,511: the peak is the ALU's (E+7); with the ALU's
// result word begun in S1 (alu_stage.h) 3,415, the peak the memory stage's (E+10: 3,114); with
// one result stage for both regrecs and the outcome at p selected at E+15, 3,203 (the leg's
// E+15..E+23 from 2,294–2,615 live to 1,883–2,268); with the ROM's words one field each, 2,943
// (peak live 2,922, E+10); with min / max's lt.s from lt.u, 2,876 (peak live 2,855, the ALU's
// E+7); with the ALU's compares on one level 1 and atom.add's adders on buses of their own, 2,602
// (peak live 2,597, the memory stage's E+12); with the atomics' own fields on shared dims (the
// memory stage's E+12 from 2,597 to 2,046 live) and the wide fields placed first, 2,411 (peak
// live 2,411, the ALU's E+5); with the ALU's bus and the address path on shared dims, 2,290 (peak
// live 2,268, the multiplier's E+18); with the multiplier's bus in four fields, one per stage's
// output, 2,157 (peak live 2,149, the ALU's E+6); with the ALU's op groups on shared dims, 2,121
// (peak live 2,068, the memory stage's E+13); with the head word's and oldDst's latches at E+16,
// 2,051 (peak live 2,046, E+12); with the memory stage's pairs' masks on shared dims by kind,
// 2,030 (peak live 1,980, the multiplier's E+15); with the memory stage's last layer selecting
// per kind (its E+14 the widest layer: the pads under it find room earlier), 2,040 (peak live
// 1,986, E+13). With every pad at the MLP right before its field's writer (the leg's:
// ExecuteSpec::padsUnderWidest false), 1,993 (peak live 1,980, the multiplier's E+15).
constexpr int kMultiplyPlanned = 2040;
constexpr int kMultiplyPadsLatestPlanned = 1993;
int busRegionDims() {
  const MultiplyBusDims r = multiplyBusRegions(MulOp::Mad, true);
  return r.products + r.counts + r.rows + r.adder;
}
const int kMultiplyHidden = kRegrecHidden + 2 + 12 * 32 + 4 * (32 + busRegionDims());

TEST(ExecutePipelineSpec, WithTheMultipliesOneResultStageDecidesTheProductAndTheOldWord) {
  const Built b = buildInOrder(config(kExecuteMultiplyLayers, kMultiplyHidden, 12000), kMultiply);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  const ExecutePipeline& p = b.pipe.value();
  EXPECT_EQ(kMultiplyGroupLayers, 4);  // mad's five stages (multiply.h), one shared
  EXPECT_EQ(kExecuteMultiplyLayers, 32);
  expectPlacement(p, {.memory = 5, .result = 9, .select = 27, .emit = 28});
  EXPECT_EQ(p.regrecLayer, 15);
  EXPECT_EQ(p.mulRegrecLayer, 23);
  // The regrec's latches (atomOld and the guard bits at E+15, the head word and oldDst at E+16)
  // and lanes 0, 1's 6 operand latches at E+15, lanes 2, 3's 6 at E+19; the emitter's heads at
  // E+28, E+29.
  const std::vector<int> want = {6, 15, 29, 51, 35, 24, 21, 8, 1, 16, 0, 0, 0,  2,  0, 11,
                                 5, 0,  0,  6,  0,  0,  0,  0, 0, 0,  0, 0, 10, 11, 0, 0};
  EXPECT_EQ(p.heads, want);
  EXPECT_EQ(executePipelineHeads(64, kMultiply), want);
  EXPECT_EQ(b.used, kMultiplyHidden);
  EXPECT_EQ(p.mulKind.dims, 2);
  for (int l = 0; l < 4; ++l) {
    const auto i = static_cast<size_t>(l);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(p.heldOperand[i][static_cast<size_t>(k)].dims, 32);
      EXPECT_NE(p.heldOperand[i][static_cast<size_t>(k)].offset, p.operands.word[static_cast<size_t>(k)][i].offset);
    }
    EXPECT_EQ(p.product[i].dims, 32);
  }
  EXPECT_EQ(p.mulRegrec.outcome.tag.dims, p.outcome.tag.dims);
  EXPECT_EQ(p.regrec.outcome.tag.dims, 0);  // no second result stage: the multiplies' decides both
  // The multiplier's units in E+15..E+23 (the outcome at p beside it at E+15); no layer over the
  // widest of the pipeline before them (E+5).
  printUnits("with the multiplies", b.used, p);
  for (int l = 15; l <= 23; ++l)
    EXPECT_LT(p.units[static_cast<size_t>(l)], p.units[5]) << "layer " << l;
  auto refused = buildInOrder(config(kExecuteMultiplyLayers, kMultiplyHidden, 12000),
                              ExecuteSpec{.memory = true, .atomics = true, .multiply = true});
  ASSERT_FALSE(refused.pipe.ok());
  EXPECT_EQ(refused.pipe.error().kind, ErrorKind::Usage);
}

// With the warp ops (ExecuteSpec::warpOps) the pipeline keeps its layers and heads: the gadget is
// MLP units in the ALU's S1..S3 (E+6..E+8), adding onto the ALU's r_l and s_l, guarded by the op
// class's third dim, isWarp (1 dim more).
constexpr int kWarpDims = 7 + 1 + 4 + 4 + 4 * (5 + 5 + 4);  // warp_ops.h's fields

TEST(ExecutePipelineSpec, TheWarpOpsLiveInTheAlusLayers) {
  CircuitWeights w(config(kExecuteRegrecLayers, kRegrecHidden + kWarpDims + 1, 12000),
                   WeightStorage::CountOnly);
  FieldAllocator alloc(kRegrecHidden + kWarpDims + 1);
  ExecuteSpec s = kRegrec;
  s.warpOps = true;
  auto p = buildExecuteModel(w, alloc, s);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(alloc.used(), kRegrecHidden + kWarpDims + 1);
  EXPECT_EQ(p->warp.dims, kWarpDims);
  EXPECT_EQ(p->opClass.dims, 3);
  EXPECT_EQ(p->heads, executePipelineHeads(64, kRegrec));
  std::cout << "[pipeline spec] with the warp ops: units per layer:";
  for (int u : p->units) std::cout << " " << u;
  std::cout << "; the gadget's S1..S3: " << p->warp.units[0] << ", " << p->warp.units[1] << ", "
            << p->warp.units[2] << "; widest AND " << p->warp.maxFanIn << std::endl;
  // The widest layer stays E+14's (the memory stage's last): the gadget's units go to E+6..E+8.
  EXPECT_EQ(*std::max_element(p->units.begin(), p->units.end()), p->units[14]);
  ExecuteSpec noMemory;
  noMemory.warpOps = true;
  CircuitWeights w2(config(), WeightStorage::CountOnly);
  FieldAllocator a2(kHidden);
  auto refused = buildExecuteModel(w2, a2, noMemory);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Usage);
}

// The warp ops gadget computes every op of isa.def's Warp class (a new one would be refused by
// pipelineExecutes until it does).
TEST(ExecutePipelineSpec, TheWarpOpsAreIsaDefsWarpClass) {
  std::vector<machine::Op> table;
  for (int i = 0; i < machine::kNumOps; ++i)
    if (machine::opInfo(static_cast<machine::Op>(i)).cls == machine::OpClass::Warp)
      table.push_back(static_cast<machine::Op>(i));
  EXPECT_EQ(table, std::vector<machine::Op>(warpOps().begin(), warpOps().end()));
}

// What each build executes (pipelineExecutes with the spec): an atomic with a register
// destination only with the regrec, one with dst r0 from the atomics on, a load from memory on.
TEST(ExecutePipelineSpec, WhatEachBuildExecutes) {
  auto program = [](machine::Instr in) {
    machine::Program p;
    p.blocks.resize(1);
    p.blocks[0].ops.push_back(in);
    p.blocks[0].term.kind = machine::TermKind::Exit;
    return p;
  };
  machine::Instr ld;
  ld.op = machine::Op::Ld;
  ld.dst = 1;
  ld.src[0] = machine::Operand::i(0);
  machine::Instr atom = ld;
  atom.op = machine::Op::AtomAdd;
  atom.src[1] = machine::Operand::i(1);
  machine::Instr atomR0 = atom;
  atomR0.dst = 0;
  machine::Instr inc = atom, dec = atom;
  inc.op = machine::Op::AtomInc;
  dec.op = machine::Op::AtomDec;
  const ExecuteSpec alu, memory = kMemory, atomics = kAtomics, regrec = kRegrec;
  EXPECT_FALSE(pipelineExecutes(program(ld), alu).ok());
  EXPECT_TRUE(pipelineExecutes(program(ld), memory).ok());
  EXPECT_FALSE(pipelineExecutes(program(atomR0), memory).ok());
  EXPECT_TRUE(pipelineExecutes(program(atomR0), atomics).ok());
  const Status without = pipelineExecutes(program(atom), atomics);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(without.error().message.find("'atom.add' (block B0, op 0)"), std::string::npos)
      << without.error().message;
  EXPECT_TRUE(pipelineExecutes(program(atom), regrec).ok());
  EXPECT_TRUE(pipelineExecutes(program(inc), regrec).ok());
  EXPECT_FALSE(pipelineExecutes(program(dec), atomics).ok());  // its old value: the regrec
  EXPECT_TRUE(pipelineExecutes(program(dec), regrec).ok());
  machine::Instr shfl;
  shfl.op = machine::Op::ShflBfly;
  shfl.dst = 2;
  shfl.src = {machine::Operand::r(1), machine::Operand::i(1), machine::Operand::i(0x1f)};
  EXPECT_FALSE(pipelineExecutes(program(shfl), regrec).ok());
  ExecuteSpec warp = kRegrec;
  warp.warpOps = true;
  EXPECT_TRUE(pipelineExecutes(program(shfl), warp).ok());
  // mul and mad with the multiplies, into a register or r0; mulhi never (the host expands it).
  machine::Instr mul;
  mul.op = machine::Op::Mul;
  mul.dst = 3;
  mul.src = {machine::Operand::r(1), machine::Operand::r(2), machine::Operand::i(0)};
  machine::Instr mad = mul, mulR0 = mul, hi = mul, his = mul;
  mad.op = machine::Op::Mad;
  mad.src[2] = machine::Operand::r(4);
  mulR0.dst = 0;
  hi.op = machine::Op::MulHiU;
  his.op = machine::Op::MulHiS;
  for (const machine::Instr& in : {mul, mad, mulR0}) {
    EXPECT_FALSE(pipelineExecutes(program(in), regrec).ok());
    EXPECT_TRUE(pipelineExecutes(program(in), kMultiply).ok());
  }
  for (const machine::Instr& in : {hi, his}) {
    const Status refused = pipelineExecutes(program(in), kMultiply);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, ErrorKind::OverLimit);
    EXPECT_NE(refused.error().message.find("high-half multiply"), std::string::npos) << refused.error().message;
  }
}

TEST(ExecutePipelineSpec, TheAluReadsTheFetchedOpcodeAndThePortsInOrder) {
  const Built b = build(config());
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  int offset = -1;
  for (const trace::PackedField& f : trace::packedLayout(trace::PackedWord::OpHead))
    if (std::string(f.name) == "opcode") offset = f.offset;
  EXPECT_EQ(b.pipe->opcode.offset, b.pipe->fe.headWord.offset + offset);
  EXPECT_EQ(b.pipe->opcode.dims, kOpcodeBits);
  for (int l = 0; l < 4; ++l) {
    const AluLane& lane = b.pipe->lanes[static_cast<size_t>(l)];
    EXPECT_EQ(lane.a.offset, b.pipe->operands.word[0][static_cast<size_t>(l)].offset);
    EXPECT_EQ(lane.b.offset, b.pipe->operands.word[1][static_cast<size_t>(l)].offset);
    EXPECT_EQ(lane.c.offset, b.pipe->operands.word[2][static_cast<size_t>(l)].offset);
    // p, q: lane l's bit of the psrc0, psrc1 ports; the result stage's old, guard, oldPred: the
    // 4th register port and lane l's bit of the guard and dstPred ports (frontend.h).
    const FrontEnd& fe = b.pipe->fe;
    EXPECT_EQ(lane.p.offset, fe.predPort[1].offset + l);
    EXPECT_EQ(lane.q.offset, fe.predPort[2].offset + l);
    EXPECT_EQ(lane.p.dims + lane.q.dims, 2);
    const ResultLane& in = b.pipe->resultIn[static_cast<size_t>(l)];
    EXPECT_EQ(in.r.offset, lane.r.offset);
    EXPECT_EQ(in.s.offset, lane.s.offset);
    EXPECT_EQ(in.old.offset, fe.oldDst[static_cast<size_t>(l)].offset);
    EXPECT_EQ(in.old.dims, 32);
    EXPECT_EQ(in.guard.offset, fe.predPort[0].offset + l);
    EXPECT_EQ(in.oldPred.offset, fe.predPort[3].offset + l);
    EXPECT_EQ(in.guard.dims + in.oldPred.dims, 2);
  }
  // The emitter's exec is the front end's (no embedding dim of its own).
  EXPECT_EQ(b.pipe->emitter.exec.offset, b.pipe->fe.exec.offset);
  EXPECT_EQ(b.pipe->emitter.exec.dims, 1);
}

// The token after a record is the control stage's: the emitter has no next-token latch, and its
// last layer copies the control stage's emit field where the stage decides (record_emit.h
// overrideFrom); the branch predicate is the front end's guard port (frontend.h: at the
// terminator position it reads the TERM word's predicate).
TEST(ExecutePipelineSpec, TheControlStageDecidesTheTokensAroundTheRecords) {
  const Built b = build(config());
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  EXPECT_EQ(b.pipe->emitter.next.dims, 0);
  EXPECT_EQ(b.pipe->emitter.inNext.dims, 0);
  EXPECT_EQ(b.pipe->control.decides.dims, 1);
  EXPECT_EQ(b.pipe->control.heads.back(), 2);  // the fault and EX latches at E+13 = R: heads 0, 1
  EXPECT_EQ(b.pipe->emitter.heads[0], 10);
  EXPECT_EQ(b.pipe->emitLayer, kControlLayers - 1);
}

TEST(ExecutePipelineSpec, TheSwappedPortsTwinIsWiredSwapped) {
  const Built b = build(config(), {.twin = ExecuteTwin::OperandsSwapped});
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  EXPECT_EQ(b.pipe->lanes[0].a.offset, b.pipe->operands.word[1][0].offset);
  EXPECT_EQ(b.pipe->lanes[0].b.offset, b.pipe->operands.word[0][0].offset);
}

TEST(ExecutePipelineSpec, TheGuardFromPsrc0TwinIsWiredToThatPort) {
  const Built b = build(config(), {.twin = ExecuteTwin::GuardFromPsrc0Port});
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  for (int l = 0; l < 4; ++l)
    EXPECT_EQ(b.pipe->resultIn[static_cast<size_t>(l)].guard.offset, b.pipe->fe.predPort[1].offset + l);
}

TEST(ExecutePipelineSpec, RefusesTooFewLayersAndASmallHidden) {
  const Built layers = build(config(16));
  ASSERT_FALSE(layers.pipe.ok());
  EXPECT_EQ(layers.pipe.error().kind, ErrorKind::Usage);
  EXPECT_NE(layers.pipe.error().message.find("outside the config"), std::string::npos);
  const Built small = buildInOrder(config(kExecuteLayers, kHidden - 1));
  ASSERT_FALSE(small.pipe.ok());
  EXPECT_EQ(small.pipe.error().kind, ErrorKind::OverLimit);
}


// ---- The layout by liveness (pipeline.h planExecuteLayout, layout.h planByLiveness) ----

struct Audit {
  int compared = 0, wrong = 0;
  std::string first;
};

// Pass 1 (one field per value over a scratch hidden size) and pass 2 (the plan), both count-only
// with their touches recorded; every (dim, point) of pass 2 must be touched exactly as the dims of
// the fields placed there were in pass 1, each within its own live range (ends included: a
// field's last reader and the next field's writer share a point). A weight that stayed at a
// field's old offset, or one written past a field, shows as a difference.
Audit auditLayout(const model::Qwen35Config& base, const ExecuteSpec& s,
                  LivenessPlan* out = nullptr) {
  Audit a;
  constexpr int kScratch = 16384;
  model::Qwen35Config c1 = base;
  c1.hiddenSize = kScratch;
  CircuitWeights w1(c1, WeightStorage::CountOnly);
  w1.recordTouches(16);
  FieldAllocator a1(kScratch);
  auto p1 = buildExecuteModel(w1, a1, s);
  EXPECT_TRUE(p1.ok()) << p1.error().message;
  if (!p1.ok()) return a;
  std::vector<int> units;  // by layer: where pads have room (none: at the latest MLP)
  if (s.padsUnderWidest) {
    units.assign(static_cast<size_t>(s.layer0), 0);
    units.insert(units.end(), p1->units.begin(), p1->units.end());
  }
  auto plan = planByLiveness(a1.taken(), w1.touches(), p1->tokens.fieldDims(), units);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  if (!plan.ok()) return a;
  // The pass above is planExecuteLayout's, written out for its touches: the same plan.
  auto real = planExecuteLayout(base, s, {}, kScratch);
  EXPECT_TRUE(real.ok()) << real.error().message;
  if (!real.ok()) return a;
  EXPECT_EQ(real->hidden, plan->hidden);
  for (size_t i = 0; i < plan->fields.size() && i < real->fields.size(); ++i)
    EXPECT_EQ(real->fields[i].offset, plan->fields[i].offset) << plan->fields[i].name;
  model::Qwen35Config c2 = base;
  c2.hiddenSize = plan->hidden;
  CircuitWeights w2(c2, WeightStorage::CountOnly);
  w2.recordTouches(16);
  FieldAllocator a2 = plan->allocator();
  auto p2 = buildExecuteModel(w2, a2, s);
  EXPECT_TRUE(p2.ok()) << p2.error().message;
  if (!p2.ok()) return a;
  EXPECT_EQ(a2.taken().size(), plan->fields.size());
  const ResidualTouches &t1 = w1.touches(), &t2 = w2.touches();
  // Pass 2's own units: the pad restores read and write their dims at their MLP, and read the
  // ballast's first dim there.
  std::set<std::pair<int, int>> padTouch, padRead;
  for (const PadRestore& pad : plan->pads) {
    const int k = mlpAt(pad.layer).key();
    for (int j = 0; j < pad.field.dims; ++j) padTouch.insert({pad.field.at(j), k});
    padRead.insert({p2->tokens.ballast.at(0), k});
  }
  std::vector<std::vector<size_t>> on(static_cast<size_t>(plan->hidden));
  for (size_t i = 0; i < plan->fields.size(); ++i)
    for (int j = 0; j < plan->fields[i].dims; ++j) on[static_cast<size_t>(plan->fields[i].at(j))].push_back(i);
  for (int d = 0; d < plan->hidden; ++d)
    for (int k = -1; k <= t2.lastKey(); ++k) {
      bool reads = false, writes = false;
      for (size_t i : on[static_cast<size_t>(d)]) {
        const LiveRange& r = plan->ranges[i];
        if (k < r.write.key() || k > r.lastRead.key()) continue;
        const int old = a1.taken()[i].offset + (d - plan->fields[i].offset);
        reads = reads || t1.reads(old, k);
        writes = writes || t1.writes(old, k);
      }
      reads = reads || padTouch.count({d, k}) > 0 || padRead.count({d, k}) > 0;
      writes = writes || padTouch.count({d, k}) > 0;
      ++a.compared;
      if (reads == t2.reads(d, k) && writes == t2.writes(d, k)) continue;
      ++a.wrong;
      if (a.first.empty())
        a.first = "dim " + std::to_string(d) + " at " + pointName(pointOfKey(k)) + ": pass 2 " +
                  (t2.reads(d, k) ? "reads" : "does not read") + ", " +
                  (t2.writes(d, k) ? "writes" : "does not write");
    }
  if (out) *out = *plan;
  return a;
}

// The fields of kinds (weights.h Field::kinds) in the leg's pipeline — the ALU's bus, the memory
// stage's address path and its atomics' own fields, the warp ops' — and every unit that writes
// one guarded (units.h UnitGuard): without that another kind's field on the same dims would be
// overwritten.
TEST(ExecutePipelineSpec, EveryWriterOfAFieldOfKindsIsGuarded) {
  ExecuteSpec leg = kMultiply;
  leg.warpOps = true;
  const Built b =
      buildInOrder(config(executeLayers(leg), kMultiplyHidden + kWarpDims + 1, 12000), leg);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  const auto n = kindWriters(b.taken, b.units);
  for (uint32_t kinds :
       {uint32_t{kKindAlu}, kKindMemoryStage, uint32_t{kKindAtomAdd}, uint32_t{kKindAtomInc},
        uint32_t{kKindAtomDec}, uint32_t{kKindAtomCas}, uint32_t{kKindWarp}}) {
    ASSERT_EQ(n.count(kinds), 1u) << kinds;
    EXPECT_GT(n.at(kinds).units, 0) << kinds;
    EXPECT_EQ(n.at(kinds).unguarded, 0) << kinds << ": unguarded writers";
  }
  std::cout << "[pipeline spec] the ALU's bus: " << n.at(kKindAlu).units
            << " writers, the address path: " << n.at(kKindMemoryStage).units
            << ", the warp ops' fields: " << n.at(kKindWarp).units << ", all guarded" << std::endl;
  // Twin: the ALU pipeline alone has no op class, so no field of kinds and no guard.
  const Built alone = buildInOrder(config(executeLayers({}), kHidden, 8000));
  EXPECT_TRUE(kindWriters(alone.taken, alone.units).empty());
}

TEST(ExecutePipelineSpec, TheLayoutByLivenessMovesEveryWeightWithItsField) {
  struct Case {
    ExecuteSpec spec;
    int planned, oneFieldPerValue;  // measured (docs/circuit.md)
    const char* name;
  };
  for (const Case& c :
       {Case{{}, 1940, kHidden, "ALU only"}, Case{kMemory, 1701, kMemoryHidden, "with memory"},
        Case{kAtomics, kAtomicsPlanned, kAtomicsHidden, "with atomics"},
        Case{kRegrec, kRegrecPlanned, kRegrecHidden, "with the regrec"},
        Case{kMultiply, kMultiplyPlanned, kMultiplyHidden, "with the multiplies"},
        Case{[] {
               ExecuteSpec s = kMultiply;
               s.padsUnderWidest = false;
               return s;
             }(),
             kMultiplyPadsLatestPlanned, kMultiplyHidden,
             "with the multiplies, pads at the latest MLP"}}) {
    LivenessPlan plan;
    const Audit a = auditLayout(config(executeLayers(c.spec), kHidden, 12000), c.spec, &plan);
    EXPECT_GT(a.compared, 0);
    EXPECT_EQ(a.wrong, 0) << a.first;
    EXPECT_LE(plan.hidden, c.planned);
    EXPECT_EQ(plan.report.oneFieldPerValue, c.oneFieldPerValue);
    std::cout << "[pipeline spec] " << c.name << ": layout by liveness "
              << plan.hidden << " dims (peak live " << plan.report.peak << " at "
              << pointName(plan.report.peakAt) << ", one field per value " << plan.report.oneFieldPerValue
              << "); audit " << a.compared << " (dim, point) pairs, " << a.wrong << " wrong" << std::endl;
  }
}

}  // namespace
}  // namespace qgpu::circuit
