// qgpu/circuit/tests/pipeline_spec_test.cpp — the execute pipeline's build (circuit/pipeline.h)
// without running it (count-only weights): the layers each stage lands in, the heads per layer,
// the wiring (the ALU's opcode is the fetched head word's opcode field, read inverted; a, b, c
// are ports 0, 1, 2; the result stage's fields on the ALU bus), the dims it takes, and its
// refusals. The run through the model is pipeline_test's.
#include <gtest/gtest.h>

#include "circuit/pipeline.h"
#include "circuit/tests/config.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

constexpr int kHidden = 3664;

model::Qwen35Config config(int layers = kExecuteLayers, int hidden = kHidden) {
  model::Qwen35Config c = testing::linearConfig(hidden, layers, 4944, 1024);
  c.linearNumKeyHeads = c.linearNumValueHeads = 49;
  c.linearKeyHeadDim = 64;
  return c;
}

struct Built {
  Expected<ExecutePipeline> pipe = makeDiag(ErrorKind::Internal, "not built");
  int used = 0;
  ExecuteInputs in;
};

Built build(const model::Qwen35Config& c, ExecuteTwin twin = ExecuteTwin::None, int oldDims = 32) {
  CircuitWeights w(c, WeightStorage::CountOnly);
  FieldAllocator alloc(static_cast<int>(c.hiddenSize));
  Built b;
  ExecuteSpec s;
  s.tokens = planTokenLayout(alloc, static_cast<int>(c.hiddenSize)).value();
  for (ExecuteLaneInputs& x : b.in.lanes) {
    x.old = alloc.take("old", oldDims).value();
    x.guard = alloc.take("guard", 1).value();
    x.oldPred = alloc.take("oldPred", 1).value();
    x.p = alloc.take("p", 1).value();
    x.q = alloc.take("q", 1).value();
  }
  s.inputs = b.in;
  s.twin = twin;
  b.pipe = buildExecutePipeline(w, alloc, s);
  b.used = alloc.used();
  return b;
}

TEST(ExecutePipelineSpec, StagesFollowEachOtherInSeventeenLayers) {
  const Built b = build(config());
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  EXPECT_EQ(kExecuteLayers, 17);
  EXPECT_EQ(b.pipe->aluLayer, 5);
  EXPECT_EQ(b.pipe->resultLayer, 9);
  EXPECT_EQ(b.pipe->emitLayer, 13);
  // Heads: the front end with the select (operands.h: 5, 11, 28, 49, 35 at dk 64, the front end's
  // L+1 predicate-file tag latch and L+4's 4th register port and 4 predicate ports included), the
  // emitter's 11 + 11 (record_emit.h), none in the MLP-only stages.
  const std::vector<int> want = {5, 11, 28, 49, 35, 0, 0, 0, 0, 0, 0, 0, 0, 11, 11, 0, 0};
  EXPECT_EQ(b.pipe->heads, want);
  EXPECT_EQ(executePipelineHeads(64), want);
  // Units: the ALU stage's S0..S3 (alu_stage.h) and the result stage's (result_stage.h).
  EXPECT_EQ(b.pipe->units[5], 4349);
  EXPECT_EQ(b.pipe->units[7], 4944);
  EXPECT_EQ(b.pipe->units[10], 658);
  EXPECT_EQ(b.pipe->units[11], 962);
  EXPECT_EQ(b.used, kHidden);
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
    EXPECT_EQ(lane.p.offset, b.in.lanes[static_cast<size_t>(l)].p.offset);
  }
  // The result stage's fields lie inside the ALU bus (dead after S3), the emitter's after it.
  const Field& bus = b.pipe->aluBus;
  const Field& tag = b.pipe->result.outcome.tag;
  EXPECT_GE(b.pipe->result.guardTrue.offset, bus.offset);
  EXPECT_LE(tag.offset + tag.dims, bus.offset + bus.dims);
  EXPECT_GE(b.pipe->emitter.exec.offset, bus.offset + bus.dims);
}

TEST(ExecutePipelineSpec, TheSwappedPortsTwinIsWiredSwapped) {
  const Built b = build(config(), ExecuteTwin::OperandsSwapped);
  ASSERT_TRUE(b.pipe.ok()) << b.pipe.error().message;
  EXPECT_EQ(b.pipe->lanes[0].a.offset, b.pipe->operands.word[1][0].offset);
  EXPECT_EQ(b.pipe->lanes[0].b.offset, b.pipe->operands.word[0][0].offset);
}

TEST(ExecutePipelineSpec, RefusesTooFewLayersInputsOfTheWrongWidthAndASmallHidden) {
  const Built layers = build(config(16));
  ASSERT_FALSE(layers.pipe.ok());
  EXPECT_EQ(layers.pipe.error().kind, ErrorKind::Usage);
  EXPECT_NE(layers.pipe.error().message.find("outside the config"), std::string::npos);
  const Built width = build(config(), ExecuteTwin::None, 31);
  ASSERT_FALSE(width.pipe.ok());
  EXPECT_EQ(width.pipe.error().kind, ErrorKind::Usage);
  EXPECT_NE(width.pipe.error().message.find("lane 0"), std::string::npos);
  const Built small = build(config(kExecuteLayers, kHidden - 1));
  EXPECT_FALSE(small.pipe.ok());
}

}  // namespace
}  // namespace qgpu::circuit
