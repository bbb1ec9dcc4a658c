// The model leg end to end (harness/model_leg.h): a checkpoint written by circuit::
// writeLegCheckpoint, loaded by model/'s decoder like any Qwen3.5 checkpoint, runs hand-built
// programs token by token. The expected final memory is computed here from the inputs by hand;
// the interpreter's trace is the token-for-token reference (the leg itself never runs it). The
// divergent program with two warps (the second partial), its faulting twin and a token budget, in
// fp32 and bf16; --check's comparator on flipped, dropped and extra tokens; `qgpu check`'s model
// rows (ModelLegs through runCheck) on catalog kernels, when a compiler is installed.
// Measured (the decoder holds the weights' nonzeros, model/README.md): 125 prompt tokens
// prefilled and 102 generated in about 3 s in all (was 150 s when every token read 11 GB).
#include "harness/model_leg.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "circuit/leg.h"
#include "harness/check.h"
#include "host/cuda/compile.h"
#include "kernels/catalog.h"
#include "model/safetensors.h"
#include "oracle/interpreter.h"

namespace qgpu::harness {
namespace {

namespace fs = std::filesystem;
using machine::Op;
using machine::Operand;
using machine::Special;

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

int threads() { return kMaxThreads; }

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

// A catalog kernel as the leg runs it: resolved, and built by clang with divisions and mulhi
// expanded (the circuit target: circuitBuildOptions).
struct CircuitTarget {
  kernels::KernelSpec spec;
  BuiltKernel kernel;
};
Expected<CircuitTarget> circuitTarget(const std::string& name) {
  QGPU_TRY(spec, resolveKernel(name, kernels::defaultCatalogDir()));
  const BuildOptions build = circuitBuildOptions();
  QGPU_TRY(kernel, buildKernel(spec, host::Compiler::Clang, build));
  return CircuitTarget{std::move(spec), std::move(kernel)};
}

machine::Launch launch() {
  machine::Launch l;
  l.gridX = 1;
  l.blockX = static_cast<uint32_t>(threads());
  for (int i = 0; i < kMaxThreads; ++i) l.global[static_cast<size_t>(i)] = static_cast<uint32_t>(7 * i + 3);
  return l;
}

// Every case of `report` a match, every model row's run compared token for token with none
// differing; the run tokens the model rows compared.
uint64_t expectEveryCaseMatches(const CheckReport& report) {
  uint64_t compared = 0;
  for (const CaseResult& c : report.cases) {
    SCOPED_TRACE(c.kernel + " " + backendName(c.backend) + ": " + c.detail);
    EXPECT_EQ(c.verdict, Verdict::Match);
    if (!isModel(c.backend)) continue;
    EXPECT_NE(c.detail.find(std::to_string(c.traceTokens) + " run tokens, 0 differ"),
              std::string::npos);
    compared += c.traceTokens;
  }
  return compared;
}

struct Leg : ::testing::Test {
  // `qgpu check --model fp32,bf16` with --check on `chosen` (clang; the interpreter row beside):
  // two sessions per dtype on the suite's checkpoint, run by runCheck's two model workers.
  static Expected<CheckReport> checkModelRows(const std::vector<kernels::KernelSpec>& chosen,
                                              const std::string& checkpoint = dir) {
    ModelLegOptions mo;
    mo.checkpoint = checkpoint;
    mo.check = true;
    const std::vector<Backend> legs = {Backend::ModelF32, Backend::ModelBf16};
    QGPU_TRY(opened, ModelLegs::open(mo, legs, 2));
    CheckOptions options;
    options.compilers = {host::Compiler::Clang};
    options.gpu = false;
    options.modelLegs = legs;
    options.modelCase = [&](const kernels::KernelSpec& s, host::Compiler c, Backend leg) {
      return opened->run(s, c, leg);
    };
    return runCheck(chosen, options);
  }

  static inline std::string dir;
  static inline std::unique_ptr<model::Decoder> fp32;  // loaded once: 11 GB, ≈ 20 s
  static void SetUpTestSuite() {
    dir = (fs::temp_directory_path() / ("qgpu_model_leg_test_" + std::to_string(::getpid()))).string();
    auto s = circuit::writeLegCheckpoint(dir);
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
    o.maxSteps = circuit::kLegStepLimit;
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
    auto f = runLeg(*dec, divergent(4 * 200), launch(), 2000);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->stop, LegStop::Fault);
    EXPECT_EQ(f->run, interpreterRun(divergent(4 * 200)));
    EXPECT_EQ(f->global, launch().global);
  }
};

TEST_F(Leg, RunsADivergentProgramTokenForTokenFp32) { runBoth(model::ComputeDtype::F32); }

TEST_F(Leg, RunsADivergentProgramTokenForTokenBf16) { runBoth(model::ComputeDtype::BF16); }

// --check's comparator (firstTokenDifference): equal runs give nothing; a flipped, a dropped and
// an extra token are each named at their position with both tokens and the interpreter's step.
TEST(LegCheck, TheComparatorNamesFlippedDroppedAndExtraTokens) {
  auto r = oracle::run(divergent(), launch(), {});
  ASSERT_TRUE(r.ok());
  const std::vector<trace::Token>& run = r->trace;
  ASSERT_GT(run.size(), 20u);
  const size_t prompt = trace::encodePrompt(divergent(), launch()).size();
  EXPECT_EQ(firstTokenDifference(run, run, prompt), "");
  std::vector<trace::Token> flipped = run;
  flipped[17] = flipped[17] == run[16] ? run[18] : run[16];
  ASSERT_NE(flipped[17], run[17]);
  const std::string f = firstTokenDifference(run, flipped, prompt);
  EXPECT_NE(f.find("token " + std::to_string(prompt + 17) + " (run token 17, step "), std::string::npos) << f;
  EXPECT_NE(f.find("interpreter " + trace::tokenName(run[17]) + ", model " + trace::tokenName(flipped[17])),
            std::string::npos) << f;
  std::vector<trace::Token> dropped(run.begin(), run.end() - 1);
  EXPECT_NE(firstTokenDifference(run, dropped, prompt).find("model (end)"), std::string::npos);
  std::vector<trace::Token> extra = run;
  extra.push_back(run.back());
  EXPECT_NE(firstTokenDifference(run, extra, prompt).find("interpreter (end)"), std::string::npos);
}

// `qgpu check --model fp32,bf16` on a representative subset of the catalog per commit (the whole
// catalog × both compilers: ci/model-leg.sh, nightly): bit ops (popcount), the pipeline's mul and
// mad (matmul2x2; matvec's mad in a loop), shared memory with barriers (transpose_shared,
// oddeven_sort's loop of barriers), several warps (reverse, stencil3), atomics (dot_atomic: the
// dot-product demo's atom.add, two lanes' adds on one word; atomic_exch: atom.exch's old value into
// a register, the regrec; fence_last_block: atom.inc's wrapping ticket into a register;
// atomic_cas_mul: atom.cas in a loop, a multiply after it; atomic_inc_dec: 16 lanes' atom.inc and
// atom.dec on one word), a warp op (shfl_xor_allreduce: shfl.bfly), a mulhi through the host's
// 16-bit halves (int64_ops' mulhi.u, one register borrowed through a spill slot); each the circuit
// target's program token for token; a kernel whose mulhi the expansion cannot fit
// (harness/tests/data/model_refused: the split would need 34 blocks) is refused without running,
// inconclusive with the op named. Two sessions per dtype, run by runCheck's two model workers.
TEST_F(Leg, CheckRunsTheModelRowsOfCatalogKernels) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  std::vector<kernels::KernelSpec> chosen;
  const std::vector<std::string> names = {"popcount",
                                          "matmul2x2",
                                          "transpose_shared",
                                          "oddeven_sort",
                                          "reverse",
                                          "stencil3",
                                          "dot_atomic",
                                          "atomic_exch",
                                          "fence_last_block",
                                          "atomic_cas_mul",
                                          "shfl_xor_allreduce",
                                          "atomic_inc_dec",
                                          "matvec",
                                          "int64_ops"};
  for (const std::string& name : names)
    for (const kernels::KernelSpec& spec : *catalog)
      if (spec.name == name) chosen.push_back(spec);
  ASSERT_EQ(chosen.size(), names.size());
  auto refused = kernels::parseKernelFile(std::string(QGPU_SOURCE_DIR) +
                                          "/harness/tests/data/model_refused/many_loops.cu");
  ASSERT_TRUE(refused.ok()) << refused.error().str();
  chosen.push_back(*refused);
  auto checked = checkModelRows(chosen);
  ASSERT_TRUE(checked.ok()) << checked.error().str();
  CheckReport report = std::move(checked).value();
  ASSERT_EQ(report.cases.size(), 3 * chosen.size());  // per kernel: interp, model-fp32, model-bf16
  for (const CaseResult& c : report.cases) {
    SCOPED_TRACE(c.kernel + " " + backendName(c.backend) + ": " + c.detail);
    if (c.backend == Backend::Interp) {
      EXPECT_EQ(c.verdict, Verdict::Match);
    } else if (c.kernel == "many_loops") {
      EXPECT_EQ(c.verdict, Verdict::Inconclusive);
      EXPECT_NE(c.detail.find("into 16-bit halves: the program would need 34 program blocks"),
                std::string::npos);
    } else {
      EXPECT_EQ(c.verdict, Verdict::Match);
      EXPECT_NE(c.detail.find(std::to_string(c.traceTokens) + " run tokens, 0 differ"), std::string::npos);
      EXPECT_GT(c.steps, 0u);
    }
  }
  EXPECT_EQ((report.tallies[{Backend::ModelBf16, "clang"}][Verdict::Match]),
            static_cast<int>(names.size()));
  uint64_t compared = 0;
  for (const CaseResult& c : report.cases) compared += isModel(c.backend) ? c.traceTokens : 0;
  std::cout << "[leg] check --model fp32,bf16 on " << names.size() << " catalog kernels (clang): " << compared
            << " run tokens compared, 0 differ" << std::endl;
}

// The spill slots through the model (no catalog kernel spills): harness/tests/data/model_spill's
// local_frame (a dynamically indexed per-thread array: a .local frame of 8 slots, two warps) and
// spill_pressure (16 words live per thread: the register allocator's spills, two warps, the
// second partial), their expected outputs worked out independently in the files; each through
// `check --model fp32,bf16` with --check, the interpreter's run token for token.
TEST_F(Leg, SpillSlotsRunThroughTheModelTokenForToken) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  std::vector<kernels::KernelSpec> chosen;
  for (const char* name : {"local_frame", "spill_pressure"}) {
    auto spec = kernels::parseKernelFile(std::string(QGPU_SOURCE_DIR) +
                                         "/harness/tests/data/model_spill/" + name + ".cu");
    ASSERT_TRUE(spec.ok()) << spec.error().str();
    chosen.push_back(*spec);
  }
  auto checked = checkModelRows(chosen);
  ASSERT_TRUE(checked.ok()) << checked.error().str();
  ASSERT_EQ(checked->cases.size(), 3 * chosen.size());
  const uint64_t compared = expectEveryCaseMatches(*checked);
  EXPECT_GT(compared, 8000u);
  std::cout << "[leg] the spill slots: " << chosen.size()
            << " kernels (clang), fp32 and bf16: " << compared << " run tokens compared, 0 differ"
            << std::endl;
}

// The leg against itself: the greedy run (one-token path) replayed on the chunked path gives the
// same tokens; its twin, a run with one token changed, is caught at that token.
TEST_F(Leg, TheChunkedPathReplaysTheRunAndCatchesAChangedToken) {
  ASSERT_TRUE(fp32 != nullptr);
  auto r = runLeg(*fp32, divergent(), launch(), 2000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto same = replayOnTheChunkedPath(*fp32, *r);
  ASSERT_TRUE(same.ok()) << same.error().str();
  EXPECT_EQ(*same, "");
  LegRun changed = *r;
  changed.run[40] = changed.run[40] == changed.run[39] ? changed.run[41] : changed.run[39];
  ASSERT_NE(changed.run[40], r->run[40]);
  auto caught = replayOnTheChunkedPath(*fp32, changed);
  ASSERT_TRUE(caught.ok()) << caught.error().str();
  EXPECT_NE(caught->find("run token 40: the one-token path " + trace::tokenName(changed.run[40])), std::string::npos)
      << *caught;
}

// A loop of more than 200 steps: TICK(1) after steps 100 and 200, each followed by the next
// step's EX, then END, token for token as the interpreter at the model's limit (R1·R2·R3; the
// LIMIT after the ticks is circuit_control_test's, at limits a run reaches in a test).
TEST_F(Leg, ALongLoopWritesTheStepTicksWhereTheInterpreterDoes) {
  ASSERT_TRUE(fp32 != nullptr);
  machine::Program p;
  machine::Block b0, b1, b2;
  b0.ops = {op(Op::Mov, 1, Operand::i(0))};
  b0.term = {machine::TermKind::Jump, machine::kNoPred, false, 0, 1};
  machine::Instr lt = op(Op::SetLtU, 0, Operand::r(1), Operand::i(210));
  lt.dstPred = 0;
  b1.ops = {op(Op::Add, 1, Operand::r(1), Operand::i(1)), lt};
  b1.term = {machine::TermKind::Branch, 0, false, 1, 2};
  b2.term.kind = machine::TermKind::Exit;
  p.blocks = {b0, b1, b2};
  machine::Launch l = launch();
  l.blockX = 1;
  oracle::RunOptions o;
  o.maxSteps = circuit::kLegStepLimit;
  auto want = oracle::run(p, l, o);
  ASSERT_TRUE(want.ok());
  auto r = runLeg(*fp32, p, l, 5000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stop, LegStop::End);
  EXPECT_EQ(r->run, want->trace);
  EXPECT_EQ(std::count(r->run.begin(), r->run.end(), trace::tick(1)), 2);
  std::cout << "[leg] a loop of " << want->blockExecs << " steps: " << r->run.size()
            << " run tokens, two TICK(1), equal to the interpreter's" << std::endl;
}

// `qgpu circuit margins`: popcount's run measured on both paths; every decision unit of the
// checkpoint (nonzero gate rows) seen, none in the band where rounding could move it. The
// twin: the same meter flags a value planted in the band.
TEST_F(Leg, MarginsOfACatalogRunAreOutsideTheBandOnBothPaths) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto target = circuitTarget("popcount");
  ASSERT_TRUE(target.ok()) << target.error().str();
  const BuiltKernel& kernel = target->kernel;
  ModelLegOptions mo;
  mo.checkpoint = dir;
  auto session = ModelSession::open(mo);
  ASSERT_TRUE(session.ok()) << session.error().str();
  auto m = (*session)->margins(kernel);
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(m->stop, LegStop::End);
  for (const circuit::MarginReport* r : {&m->prefill, &m->decode}) {
    EXPECT_TRUE(r->ok()) << r->table();
    EXPECT_GE(r->smallestAbs(), 17.0);
    int64_t units = 0, values = 0;
    for (const circuit::LayerMargins& l : r->layers)
      for (const circuit::DecisionMargin& d : l.decisions) units += d.units, values += d.values;
    EXPECT_GT(units, 10000);
    EXPECT_GT(values, units);
  }
  std::cout << "[leg] margins of popcount: smallest |x| " << m->prefill.smallestAbs() << " (prefill), "
            << m->decode.smallestAbs() << " (decode), 0 in band" << std::endl;
  // The twin: one MLP gate value of layer 5 moved into the band is counted there.
  auto meter = circuit::MarginMeter::fromCheckpoint(dir, {}, 1.0f);
  ASSERT_TRUE(meter.ok()) << meter.error().str();
  model::Activation gate;
  gate.name = "mlp_gate";
  gate.layer = 5;
  gate.rows = 1;
  gate.cols = fp32->config().intermediateSize;
  gate.data.assign(static_cast<size_t>(gate.cols), -128.0f);
  gate.data[0] = -20.0f;
  ASSERT_TRUE(meter->add(std::vector<model::Activation>{gate}).ok());
  EXPECT_FALSE(meter->report().ok());
}

// The transformers cross-check (fixtures by ci/hf_leg_reference.py: transformers 5.24's
// Qwen3_5ForCausalLM on this checkpoint, teacher-forced without a cache, fp32 and, on at least
// three kernels, bf16): the
// checkpoint's config and the kernel's prompt are the fixture's, transformers' argmax at every run
// position is the interpreter's next token, and the leg's own greedy run (model/) equals both.
TEST_F(Leg, TransformersWritesTheLegsTokens) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  const fs::path data = fs::path(QGPU_SOURCE_DIR) / "circuit/tests/data";
  std::vector<fs::path> fixtures;
  for (const auto& e : fs::directory_iterator(data))
    if (e.path().filename().string().rfind("hf_leg_", 0) == 0) fixtures.push_back(e.path());
  ASSERT_GE(fixtures.size(), 3u) << "the fixtures of ci/hf_leg_reference.py";
  std::ifstream configFile(fs::path(dir) / "config.json");
  const std::string config((std::istreambuf_iterator<char>(configFile)), std::istreambuf_iterator<char>());
  size_t compared = 0, withBf16 = 0;
  for (const fs::path& path : fixtures) {
    auto file = model::SafetensorsFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().str();
    auto meta = (*file)->header().metadata;
    SCOPED_TRACE(path.filename().string());
    ASSERT_EQ(meta["qgpu_fixture"], "hf-leg");
    ASSERT_EQ(meta["version"], "1");
    EXPECT_EQ(meta["config_json"], config) << "the circuit changed shape: regenerate with ci/hf_leg_reference.py";
    EXPECT_EQ(meta["step_limit"], std::to_string(circuit::kLegStepLimit));
    auto tokens = [&](const std::string& name) {
      const model::StTensorInfo* info = (*file)->header().find(name);
      EXPECT_NE(info, nullptr) << name;
      std::vector<trace::Token> out;
      if (info == nullptr) return out;
      auto bytes = (*file)->bytes(*info);
      std::vector<int64_t> ids(bytes.size() / 8);
      std::memcpy(ids.data(), bytes.data(), bytes.size());
      for (int64_t id : ids) out.push_back(static_cast<trace::Token>(id));
      return out;
    };
    auto target = circuitTarget(meta["kernel"]);
    ASSERT_TRUE(target.ok()) << target.error().str();
    const BuiltKernel& kernel = target->kernel;
    const machine::Launch l = kernel.image.toMachineLaunch();
    EXPECT_EQ(tokens("prompt"), trace::encodePrompt(kernel.program, l))
        << "the kernel's prompt changed";
    const std::vector<trace::Token> run = tokens("run");
    // Every fixture has fp32; bf16 where the script ran it (meta "dtypes").
    const std::string dtypes = meta["dtypes"];
    EXPECT_TRUE(dtypes == "f32" || dtypes == "f32,bf16") << dtypes;
    for (const char* dtype : {"f32", "bf16"}) {
      if (dtypes.find(dtype) != std::string::npos) {
        EXPECT_EQ(tokens(std::string("argmax_") + dtype), run) << dtype;
      }
    }
    withBf16 += dtypes.find("bf16") != std::string::npos ? 1 : 0;
    fp32->reset();
    auto leg = runLeg(*fp32, kernel.program, l, 5000);
    ASSERT_TRUE(leg.ok()) << leg.error().str();
    EXPECT_EQ(leg->run, run);
    compared += run.size();
  }
  EXPECT_GE(withBf16, 3u) << "bf16 on at least three kernels";
  std::cout << "[leg] transformers cross-check: " << fixtures.size() << " kernels (" << withBf16
            << " also in bf16), " << compared
            << " run tokens, transformers = the leg = the interpreter" << std::endl;
}

// A run the token budget cuts is inconclusive, compared token for token as far as the model
// wrote it — not a mismatch at the first token the interpreter wrote past the budget (what
// modpow's 50,000-token run gave under the 20,000 budget before).
TEST_F(Leg, ARunTheTokenBudgetCutsIsInconclusiveAndComparedAsFarAsItGoes) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  auto target = circuitTarget("reverse");
  ASSERT_TRUE(target.ok()) << target.error().str();
  ModelLegOptions mo;
  mo.checkpoint = dir;
  mo.check = true;
  mo.tokenBudget = 60;
  auto session = ModelSession::open(mo);
  ASSERT_TRUE(session.ok()) << session.error().str();
  const CaseResult r = (*session)->compare(target->spec, target->kernel);
  EXPECT_EQ(r.verdict, Verdict::Inconclusive) << r.detail;
  EXPECT_NE(
      r.detail.find("no END after 60 tokens (token budget); --check: 60 run tokens, 0 differ"),
      std::string::npos)
      << r.detail;
}

// The leg at `2b`'s widths (circuit/leg.h legShapeByName): packed into 16 heads of key dim 128
// and 6,144 MLP units a layer (circuit/pack.h), hidden 2,048 — all of 2b but its 248,320-row
// vocabulary (4 GB of zero rows in the embedding and lm_head; the nightly runs the real thing,
// ci/model-leg-2b.sh): here the trace sits at rows 100.. of kVocabSize + 160 rows, so that the
// leg's row offset (prompt ids, argmax, the chunked replay) is exercised with zero rows on both
// sides. Its own checkpoint: the atomics of every kind, the shuffles, shared memory and barriers
// through `check --model fp32,bf16` with --check, the interpreter's run token for token.
TEST_F(Leg, ACheckpointAtTheTwoBWidthsRunsTheSameTokens) {
  if (!host::toolAvailable(host::Compiler::Clang)) GTEST_SKIP() << "clang-14 is not installed";
  const std::string packed = dir + "_2b_widths";
  auto twoB = circuit::legShapeByName("2b");
  ASSERT_TRUE(twoB.ok()) << twoB.error().message;
  circuit::LegShape shape = *twoB;
  shape.name = "2b's widths, a small vocabulary";
  shape.vocab = trace::kVocabSize + 160;
  shape.firstTraceRow = 100;
  auto s = circuit::writeLegCheckpoint(packed, circuit::kLegStepLimit, shape);
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  const std::vector<std::string> names = {"dot_atomic",         "atomic_inc_dec",  "atomic_cas_mul",
                                          "reduce_min_atomic",  "atomic_bitops",   "warp_vote",
                                          "shfl_xor_allreduce", "transpose_shared"};
  std::vector<kernels::KernelSpec> chosen;
  for (const std::string& name : names)
    for (const kernels::KernelSpec& spec : *catalog)
      if (spec.name == name) chosen.push_back(spec);
  ASSERT_EQ(chosen.size(), names.size());
  auto checked = checkModelRows(chosen, packed);
  std::error_code ignored;
  fs::remove_all(packed, ignored);
  ASSERT_TRUE(checked.ok()) << checked.error().str();
  ASSERT_EQ(checked->cases.size(), 3 * chosen.size());
  const uint64_t compared = expectEveryCaseMatches(*checked);
  std::cout << "[leg] 2b's widths (16 heads of 128, 6144 units a layer, hidden 2048, trace at "
               "row 100): check --model fp32,bf16 on "
            << names.size() << " catalog kernels (clang): " << compared
            << " run tokens compared, 0 differ" << std::endl;
}

// The checkpoint's trace rows must lie in its vocabulary (circuit.json's firstTraceRow against
// config.json's vocab_size): refused before the model sees a token.
TEST_F(Leg, RefusesTraceRowsTheVocabularyDoesNotHold) {
  ASSERT_TRUE(fp32 != nullptr);
  fp32->reset();
  for (int64_t first : {int64_t{1}, int64_t{-1}}) {
    auto r = runLeg(*fp32, divergent(), launch(), 100, first);
    ASSERT_FALSE(r.ok()) << first;
    EXPECT_EQ(r.error().kind, ErrorKind::Checkpoint) << first;
    EXPECT_NE(r.error().message.find("from row " + std::to_string(first) + " do not fit"),
              std::string::npos)
        << r.error().message;
  }
  EXPECT_EQ(fp32->position(), 0);
}

TEST_F(Leg, RefusesAProgramThePipelineDoesNotExecuteBeforeRunning) {
  ASSERT_TRUE(fp32 != nullptr);
  fp32->reset();
  machine::Program p = divergent();
  p.blocks[1].ops[0] = op(Op::MulHiU, 3, Operand::r(3), Operand::r(2));  // the host expands mulhi
  auto r = runLeg(*fp32, p, launch(), 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::OverLimit);
  EXPECT_NE(r.error().message.find("'mulhi.u' (block B1, op 0)"), std::string::npos) << r.error().message;
  EXPECT_EQ(fp32->position(), 0);  // nothing was fed to the model
}

}  // namespace
}  // namespace qgpu::harness
