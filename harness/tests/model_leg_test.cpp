// The model leg end to end (harness/model_leg.h): a checkpoint written by circuit::
// writeLegCheckpoint, loaded by model/'s decoder like any Qwen3.5 checkpoint, runs hand-built
// programs token by token. The expected final memory is computed here from the inputs by hand;
// the interpreter's trace is the token-for-token reference (the leg itself never runs it).
// Free decode runs at about 0.7 tokens/s here (every token reads the 11 GB of weights), so per
// commit: one warp of the divergent program in fp32 (≈ 60 generated tokens) and a token budget;
// under QGPU_CIRCUIT_FULL two warps (the second partial), the faulting store, and bf16 (≈ 20×
// slower on this CPU). Measured: two warps, 125 prompt tokens prefilled in 8.5 s, 102 generated
// in 140 s, equal to the interpreter's.
#include "harness/model_leg.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "circuit/leg.h"
#include "oracle/interpreter.h"

namespace qgpu::harness {
namespace {

namespace fs = std::filesystem;
using machine::Op;
using machine::Operand;
using machine::Special;

bool full() {
  const char* v = std::getenv("QGPU_CIRCUIT_FULL");
  return v != nullptr && std::string(v) != "0";
}

machine::Instr op(Op o, uint8_t dst, Operand a, Operand b = {}) {
  machine::Instr in;
  in.op = o;
  in.dst = dst;
  in.src = {a, b, {}};
  return in;
}
machine::Instr mem(Op o, uint8_t dst, Operand addr, Operand value, int32_t offset) {
  machine::Instr in = op(o, dst, addr, value);
  in.offset = offset;
  return in;
}

constexpr int kMaxThreads = 6;
constexpr int kOut = 8;  // out[] starts at word 8

int threads() { return full() ? kMaxThreads : 4; }

// x in words 0..5; out[i] = i < 3 ? 2·x[i] + 1 + 100 : (2·x[i] + 1) ^ 5, through a divergent
// branch; word 8 + i. `storeOffset` moves the store (past memory: every lane faults).
machine::Program divergent(int32_t storeOffset = 4 * kOut) {
  machine::Program p;
  machine::Block b0;
  b0.ops = {op(Op::Shl, 1, Operand::s(Special::TidX), Operand::i(2)),
            mem(Op::Ld, 2, Operand::r(1), {}, 0),
            op(Op::Shl, 3, Operand::r(2), Operand::i(1)),
            op(Op::Or, 3, Operand::r(3), Operand::i(1))};
  machine::Instr lt = op(Op::SetLtU, 0, Operand::s(Special::TidX), Operand::i(3));
  lt.dstPred = 0;
  b0.ops.push_back(lt);
  b0.term = {machine::TermKind::Branch, 0, false, 1, 2};
  machine::Block b1;
  b1.ops = {op(Op::Add, 3, Operand::r(3), Operand::i(100))};
  b1.term = {machine::TermKind::Jump, machine::kNoPred, false, 0, 3};
  machine::Block b2;
  b2.ops = {op(Op::Xor, 3, Operand::r(3), Operand::i(5))};
  b2.term = {machine::TermKind::Jump, machine::kNoPred, false, 0, 3};
  machine::Block b3;
  b3.ops = {mem(Op::St, 0, Operand::r(1), Operand::r(3), storeOffset)};
  b3.term.kind = machine::TermKind::Exit;
  p.blocks = {b0, b1, b2, b3};
  return p;
}

machine::Launch launch() {
  machine::Launch l;
  l.gridX = 1;
  l.blockX = static_cast<uint32_t>(threads());
  for (int i = 0; i < kMaxThreads; ++i) l.global[static_cast<size_t>(i)] = static_cast<uint32_t>(7 * i + 3);
  return l;
}

struct Leg : ::testing::Test {
  static inline std::string dir;
  static inline std::unique_ptr<model::Decoder> fp32;  // loaded once: 11 GB, ≈ 20 s
  static void SetUpTestSuite() {
    dir = (fs::temp_directory_path() / ("qgpu_model_leg_test_" + std::to_string(::getpid()))).string();
    Status s = circuit::writeLegCheckpoint(dir);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto dec = model::Decoder::load(dir, {model::ComputeDtype::F32, "cpu"});
    ASSERT_TRUE(dec.ok()) << dec.error().message;
    fp32 = std::move(dec).value();
  }
  static void TearDownTestSuite() {
    fp32.reset();
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  static std::vector<trace::Token> interpreterRun(const machine::Program& p) {
    oracle::RunOptions o;
    o.maxSteps = circuit::kLegMaxStepLimit;
    auto r = oracle::run(p, launch(), o);
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->trace : std::vector<trace::Token>{};
  }
  void runBoth(model::ComputeDtype dtype) {
    ASSERT_TRUE(fp32 != nullptr);
    std::unique_ptr<model::Decoder> bf16;
    if (dtype == model::ComputeDtype::BF16) {
      auto loaded = model::Decoder::load(dir, {dtype, "cpu"});
      ASSERT_TRUE(loaded.ok()) << loaded.error().message;
      bf16 = std::move(loaded).value();
    }
    model::Decoder* dec = bf16 ? bf16.get() : fp32.get();
    // The divergent program: END and the hand-computed memory.
    auto r = runLeg(*dec, divergent(), launch(), 2000);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->stop, LegStop::End);
    EXPECT_EQ(r->run, interpreterRun(divergent()));
    for (int i = 0; i < threads(); ++i) {
      const uint32_t x = launch().global[static_cast<size_t>(i)];
      const uint32_t want = i < 3 ? 2 * x + 1 + 100 : (2 * x + 1) ^ 5u;
      EXPECT_EQ(r->global[static_cast<size_t>(kOut + i)], want) << "out[" << i << "]";
    }
    for (int w = kOut + threads(); w < machine::kGlobalWords; ++w)
      EXPECT_EQ(r->global[static_cast<size_t>(w)], 0u) << "word " << w;
    // A token budget shorter than the run stops there.
    auto b = runLeg(*dec, divergent(), launch(), 5);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b->stop, LegStop::Budget);
    EXPECT_EQ(b->run.size(), 5u);
    std::cout << "[leg] " << model::computeDtypeName(dtype) << ": " << r->prompt.size()
              << " prompt tokens in " << r->prefillSeconds << " s, " << r->run.size()
              << " generated in " << r->decodeSeconds << " s" << std::endl;
    // The store past memory: FAULT where the interpreter faults, nothing written.
    if (!full()) return;
    auto f = runLeg(*dec, divergent(4 * 200), launch(), 2000);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->stop, LegStop::Fault);
    EXPECT_EQ(f->run, interpreterRun(divergent(4 * 200)));
    EXPECT_EQ(f->global, launch().global);
  }
};

TEST_F(Leg, RunsADivergentProgramTokenForTokenFp32) { runBoth(model::ComputeDtype::F32); }

TEST_F(Leg, RunsADivergentProgramTokenForTokenBf16) {
  if (!full()) GTEST_SKIP() << "bf16: under QGPU_CIRCUIT_FULL";
  runBoth(model::ComputeDtype::BF16);
}

TEST_F(Leg, RefusesAProgramThePipelineDoesNotExecuteBeforeRunning) {
  ASSERT_TRUE(fp32 != nullptr);
  fp32->reset();
  machine::Program p = divergent();
  p.blocks[1].ops[0] = op(Op::Mul, 3, Operand::r(3), Operand::r(2));
  auto r = runLeg(*fp32, p, launch(), 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(r.error().message.find("'mul' (block B1, op 0)"), std::string::npos) << r.error().message;
  EXPECT_EQ(fp32->position(), 0);  // nothing was fed to the model
}

}  // namespace
}  // namespace qgpu::harness
