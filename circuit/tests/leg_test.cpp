// The model leg's torch-free side (circuit/leg.h): which programs the pipeline executes and the
// refusal's location, the model's config, the checkpoint sidecar, the final memory of a run.
#include "circuit/leg.h"
#include "model/tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace qgpu::circuit {
namespace {

using machine::Op;
using machine::Operand;

machine::Instr alu(Op op, uint8_t dst, Operand a, Operand b = {}) {
  machine::Instr in;
  in.op = op;
  in.dst = dst;
  in.src = {a, b, {}};
  return in;
}

machine::Program twoBlocks(const machine::Instr& second) {
  machine::Program p;
  machine::Block b0;
  b0.ops = {alu(Op::Shl, 1, Operand::s(machine::Special::TidX), Operand::i(2))};
  b0.term.kind = machine::TermKind::Jump;
  b0.term.next = 1;
  machine::Block b1;
  machine::Instr ld;
  ld.op = Op::Ld;
  ld.dst = 2;
  ld.src = {Operand::r(1), {}, {}};
  b1.ops = {ld, second};
  p.blocks = {b0, b1};
  return p;
}

TEST(Leg, ExecutesAluLoadsAndStores) {
  machine::Instr st;
  st.op = Op::StB8;
  st.space = machine::Space::Shared;
  st.src = {Operand::r(1), Operand::r(2), {}};
  EXPECT_TRUE(pipelineExecutes(twoBlocks(st)).ok());
  EXPECT_TRUE(pipelineExecutes(twoBlocks(alu(Op::Prmt, 3, Operand::r(2), Operand::i(7)))).ok());
}

// The spill slots: ldl into a register, stl of a register.
TEST(Leg, ExecutesTheSpillOps) {
  machine::Instr ldl;
  ldl.op = Op::LdLocal;
  ldl.dst = 3;
  ldl.offset = 1;
  EXPECT_TRUE(pipelineExecutes(twoBlocks(ldl)).ok());
  machine::Instr stl;
  stl.op = Op::StLocal;
  stl.offset = 1;
  stl.src = {Operand::r(2), {}, {}};
  EXPECT_TRUE(pipelineExecutes(twoBlocks(stl)).ok());
}

// The prefix atomics and the chain's, their old value to nowhere (dst r0) or to a register (the
// regrec), in both spaces.
TEST(Leg, ExecutesTheBuiltAtomicsWithOrWithoutADestination) {
  for (Op op : {Op::AtomAdd, Op::AtomAnd, Op::AtomOr, Op::AtomXor, Op::AtomExch, Op::AtomMinU,
                Op::AtomMaxU, Op::AtomMinS, Op::AtomMaxS})
    for (int dst : {0, 3})
      for (machine::Space space : {machine::Space::Global, machine::Space::Shared}) {
        machine::Instr in = alu(op, dst, Operand::r(2), Operand::r(1));
        in.space = space;
        EXPECT_TRUE(pipelineExecutes(twoBlocks(in)).ok())
            << machine::opInfo(op).mnemonic << " r" << dst;
      }
}

// mul and mad, into a register (NOP, then the product's regrec) or r0.
TEST(Leg, ExecutesMulAndMad) {
  for (Op op : {Op::Mul, Op::Mad})
    for (int dst : {0, 3}) {
      machine::Instr in = alu(op, dst, Operand::r(2), Operand::r(1));
      if (op == Op::Mad) in.src[2] = Operand::r(4);
      EXPECT_TRUE(pipelineExecutes(twoBlocks(in)).ok()) << machine::opInfo(op).mnemonic << " r" << dst;
    }
}

// Every op of isa.def's Warp class: shuffles and votes.
TEST(Leg, ExecutesTheWarpOps) {
  for (int i = 0; i < machine::kNumOps; ++i) {
    const auto op = static_cast<Op>(i);
    if (machine::opInfo(op).cls != machine::OpClass::Warp) continue;
    EXPECT_TRUE(pipelineExecutes(twoBlocks(alu(op, 3, Operand::r(2), Operand::r(1)))).ok())
        << machine::opInfo(op).mnemonic;
  }
}

TEST(Leg, RefusesWhatThePipelineDoesNotExecuteNamingBlockOpAndWhy) {
  struct Case {
    Op op;
    const char* mnemonic;
    const char* why;
  };
  for (const Case& c : {Case{Op::MulHiU, "mulhi.u", "high-half multiply"},
                        Case{Op::MulHiS, "mulhi.s", "high-half multiply"},
                        Case{Op::DivU, "div.u", "division"}}) {
    machine::Instr in = alu(c.op, 3, Operand::r(2), Operand::r(1));
    Status s = pipelineExecutes(twoBlocks(in));
    ASSERT_FALSE(s.ok()) << c.mnemonic;
    EXPECT_EQ(s.error().kind, ErrorKind::OverLimit);
    const std::string& m = s.error().message;
    EXPECT_NE(m.find(std::string("'") + machine::opInfo(c.op).mnemonic + "' (block B1, op 1)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(c.why), std::string::npos) << m;
  }
}

TEST(Leg, FinalGlobalAppliesTheRunsGlobalWritesInOrder) {
  std::array<uint32_t, machine::kGlobalWords> initial{};
  initial[3] = 7;
  initial[9] = 1;
  trace::MemWrite g1{machine::Space::Global, 0b0011, {{3, 10}, {4, 11}}};
  trace::MemWrite sh{machine::Space::Shared, 0b0001, {{9, 99}}};  // shared: not global memory
  trace::MemWrite g2{machine::Space::Global, 0b0001, {{3, 12}}};  // a later write of word 3 wins
  const std::vector<trace::TraceEvent> run = {trace::Exec{0, 0, 15}, g1, sh, g2, trace::Finished{}};
  const auto final = finalGlobal(initial, run);
  EXPECT_EQ(final[3], 12u);
  EXPECT_EQ(final[4], 11u);
  EXPECT_EQ(final[9], 1u);
  for (int w = 0; w < machine::kGlobalWords; ++w) {
    if (w == 3 || w == 4) continue;
    EXPECT_EQ(final[static_cast<size_t>(w)], initial[static_cast<size_t>(w)]) << w;
  }
}

TEST(Leg, ModelShapesAndStepLimits) {
  auto m = buildLegModel(kLegStepLimit, WeightStorage::CountOnly);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const model::Qwen35Config& c = m->weights->config();
  EXPECT_EQ(c.vocabSize, trace::kVocabSize);
  EXPECT_EQ(static_cast<int>(c.layerTypes.size()), kExecuteMultiplyLayers);
  EXPECT_EQ(c.linearKeyHeadDim, 64);
  int widest = 0;
  for (int u : m->pipeline.units) widest = std::max(widest, u);
  EXPECT_EQ(c.intermediateSize, widest);
  const std::vector<int> heads = executePipelineHeads(64, legSpec());
  for (size_t l = 0; l < heads.size(); ++l)
    EXPECT_EQ(c.layerTypes[l] == model::LayerType::Full, heads[l] == 0) << "layer " << l;
  // The leg's limit is the compiled model's R1·R2·R3 (trace.md "Step ticks").
  EXPECT_EQ(static_cast<uint64_t>(kLegStepLimit), trace::tickPeriod(trace::kTickLevels + 1));
  for (int bad : {0, -1, kLegStepLimit + 1}) {
    auto refused = buildLegModel(bad, WeightStorage::CountOnly);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().kind, ErrorKind::Usage);
  }
}

// The leg packed into `2b` (circuit/pack.h): at its key head dim 128, within 16 heads and 6,144
// MLP units per layer and the 45 layers the target allows; and compact packed the same way at
// dk 64, as a CountOnly build writes it (the config's widths are the limits).
TEST(Leg, PacksIntoTheTwoBShape) {
  for (int dk : {128, 64}) {
    const LegShape shape{"2b", dk, 16, 6144, 45};
    auto p = packLeg(shape);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_LE(p->layers, 45) << dk;
    EXPECT_GT(p->layers, kExecuteMultiplyLayers) << dk;  // the widest layers split
    for (int l = 0; l < p->layers; ++l) {
      EXPECT_LE(p->headsIn[static_cast<size_t>(l)], 16) << l;
      EXPECT_LE(p->unitsIn[static_cast<size_t>(l)], 6144) << l;
    }
  }
  auto m =
      buildLegModel(kLegStepLimit, WeightStorage::CountOnly, LegShape{"packed", 64, 16, 6144, 45});
  ASSERT_TRUE(m.ok()) << m.error().message;
  const model::Qwen35Config& c = m->weights->writtenConfig();
  EXPECT_EQ(c.linearNumValueHeads, 16);
  EXPECT_EQ(c.intermediateSize, 6144);
  EXPECT_EQ(c.numLayers(), m->packing.layers);
  EXPECT_EQ(m->weights->config().numLayers(), kExecuteMultiplyLayers);  // the stages' layers
  // Too few layers: OverLimit naming them.
  auto refused = packLeg(LegShape{"short", 64, 16, 6144, 30});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(refused.error().message.find("allows 30"), std::string::npos)
      << refused.error().message;
}

// `2b` (legShapeByName): Qwen3.5-2B's widths — hidden 2048, 16 heads of key dim 128, MLP 6,144,
// at most 45 layers — and its 248,320-row vocabulary with the trace at the 243 spare rows from
// 248,077 (../shared/reference/qwen35-spec.md §8), as a CountOnly build writes the config; an
// untied lm_head (the 2B ties it: the readout reads the emit field, not the token fields).
TEST(Leg, TheTwoBShapeHasQwen35TwoBsWidthsAndTheTraceAtItsSpareRows) {
  auto shape = legShapeByName("2b");
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(shape->hidden, 2048);
  EXPECT_EQ(shape->keyHeadDim, 128);
  EXPECT_EQ(shape->heads, 16);
  EXPECT_EQ(shape->units, 6144);
  EXPECT_EQ(shape->layers, 45);
  EXPECT_EQ(shape->vocab, 248320);
  EXPECT_EQ(shape->firstTraceRow, 248077);
  EXPECT_LE(shape->firstTraceRow + trace::kVocabSize, shape->vocab);
  auto m = buildLegModel(kLegStepLimit, WeightStorage::CountOnly, *shape);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const model::Qwen35Config& c = m->weights->writtenConfig();
  EXPECT_EQ(c.hiddenSize, 2048);
  EXPECT_EQ(c.vocabSize, 248320);
  EXPECT_EQ(c.linearNumKeyHeads, 16);
  EXPECT_EQ(c.linearNumValueHeads, 16);
  EXPECT_EQ(c.linearKeyHeadDim, 128);
  EXPECT_EQ(c.linearValueHeadDim, 128);
  EXPECT_EQ(c.intermediateSize, 6144);
  EXPECT_EQ(c.numLayers(), m->packing.layers);
  EXPECT_LE(c.numLayers(), 45);
  EXPECT_FALSE(c.tieWordEmbeddings);
  for (model::LayerType t : c.layerTypes) EXPECT_EQ(t, model::LayerType::Linear);
  EXPECT_EQ(m->pipeline.tokens.rowOffset, 248077);

  auto unknown = legShapeByName("7b");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::Usage);
  EXPECT_NE(unknown.error().message.find("known: compact, 2b"), std::string::npos)
      << unknown.error().message;
  LegShape narrow = *shape;  // a residual narrower than the layout's span
  narrow.hidden = 1024;
  auto over = buildLegModel(kLegStepLimit, WeightStorage::CountOnly, narrow);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(over.error().message.find("residual dims, the shape has 1024"), std::string::npos)
      << over.error().message;
  for (int64_t first : {int64_t{-1}, int64_t{248320 - trace::kVocabSize + 1}}) {
    LegShape outside = *shape;
    outside.firstTraceRow = first;
    auto refused = buildLegModel(kLegStepLimit, WeightStorage::CountOnly, outside);
    ASSERT_FALSE(refused.ok()) << first;
    EXPECT_EQ(refused.error().kind, ErrorKind::Usage) << first;
    EXPECT_NE(refused.error().message.find("do not fit its vocabulary of 248320"),
              std::string::npos)
        << refused.error().message;
  }
}

TEST(Leg, TheCircuitSidecarIsCheckedOnRead) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("qgpu_leg_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto expectCheckpointError = [&](const std::string& what) {
    auto r = readLegCheckpoint(dir.string());
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint) << what;
    EXPECT_NE(r.error().message.find("circuit.json"), std::string::npos) << r.error().message;
  };
  expectCheckpointError("missing");
  // "memory", "memory+atomics", "memory+atomics+regrec+warp", "memory+atomics+inc+cas+regrec+warp",
  // "memory+atomics+inc+dec+cas+regrec+warp" and "memory+spill+atomics+inc+dec+cas+regrec+warp"
  // are an older qgpu's checkpoints, without the atomics' regrec, the warp ops, atom.inc, cas,
  // dec, the spill slots or mul and mad that pipelineExecutes now accepts.
  const std::string leg = "\"pipeline\": \"memory+spill+atomics+inc+dec+cas+regrec+warp+mul\"";
  for (const std::string& text :
       {std::string("not json"), std::string("{}"), "{" + leg + "}",
        std::string("{\"pipeline\": \"alu\", \"stepLimit\": 5}"),
        std::string("{\"pipeline\": \"memory\", \"stepLimit\": 64}"),
        std::string("{\"pipeline\": \"memory+atomics\", \"stepLimit\": 64}"),
        std::string("{\"pipeline\": \"memory+atomics+regrec+warp\", \"stepLimit\": 64}"),
        std::string("{\"pipeline\": \"memory+atomics+inc+cas+regrec+warp\", \"stepLimit\": 64}"),
        std::string(
            "{\"pipeline\": \"memory+atomics+inc+dec+cas+regrec+warp\", \"stepLimit\": 64}"),
        std::string("{\"pipeline\": \"memory+spill+atomics+inc+dec+cas+regrec+warp\", "
                    "\"stepLimit\": 64}"),
        "{" + leg + ", \"stepLimit\": 0}", "{" + leg + ", \"stepLimit\": 1000001}",
        "{" + leg + ", \"stepLimit\": \"64\"}", std::string("[1, 2]"),
        "{" + leg + ", \"stepLimit\": 64, \"firstTraceRow\": -1}",
        "{" + leg + ", \"stepLimit\": 64, \"firstTraceRow\": \"248077\"}",
        // Numbers that an int would wrap into range: 2^32 + 64, and a layer count of 2^32 + 5.
        "{" + leg + ", \"stepLimit\": 4294967360}",
        "{" + leg + ", \"stepLimit\": 18446744073709551615}",
        "{" + leg + ", \"stepLimit\": 64, \"layers\": 4294967301}",
        "{" + leg + ", \"stepLimit\": 64, \"hidden\": -2048}"}) {
    std::ofstream(dir / "circuit.json") << text;
    expectCheckpointError(text);
  }
  std::ofstream(dir / "circuit.json") << "{" + leg + ", \"stepLimit\": 64}";
  auto ok = readLegCheckpoint(dir.string());
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->stepLimit, 64);
  EXPECT_EQ(ok->firstTraceRow, 0);  // a checkpoint from before the trace could move
  std::ofstream(dir / "circuit.json")
      << "{" + leg + ", \"stepLimit\": 64, \"firstTraceRow\": 248077}";
  auto moved = readLegCheckpoint(dir.string());
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  EXPECT_EQ(moved->firstTraceRow, 248077);
  fs::remove_all(dir);
}

// The checkpoint's tokenizer: one whitespace-free word per trace token, every id once, read back by
// model/'s WordLevel tokenizer; a run's ids decode to its trace's names and encode back.
TEST(Leg, TheTokenizerNamesEveryTraceToken) {
  const nlohmann::json j = traceTokenizerJson();
  ASSERT_EQ(j["model"]["vocab"].size(), static_cast<size_t>(trace::kVocabSize)) << "two tokens share a name";
  auto tok = model::WordLevelTokenizer::fromJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.error().str();
  EXPECT_EQ(tok->size(), static_cast<size_t>(trace::kVocabSize));
  std::vector<int64_t> all;
  std::string names;
  for (int id = 0; id < trace::kVocabSize; ++id) {
    all.push_back(id);
    names += (id ? " " : "") + trace::tokenName(static_cast<trace::Token>(id));
  }
  EXPECT_EQ(tok->decode(all), names);
  auto back = tok->encode(names);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(*back, all);
  auto unknown = tok->encode("EX(0) EX(99)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("'EX(99)'"), std::string::npos);
  // At `2b`'s rows: the same names, every id moved by the first row.
  auto moved =
      model::WordLevelTokenizer::fromJson(traceTokenizerJson(248077).dump(), "tokenizer.json");
  ASSERT_TRUE(moved.ok()) << moved.error().str();
  std::vector<int64_t> shifted;
  for (int64_t id : all) shifted.push_back(248077 + id);
  EXPECT_EQ(moved->decode(shifted), names);
  auto again = moved->encode(names);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(*again, shifted);
}

}  // namespace
}  // namespace qgpu::circuit
