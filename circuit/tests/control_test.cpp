// qgpu/circuit/tests/control_test.cpp — the control stage (circuit/control.h) on top of the front
// end (circuit/frontend.h): 14 standard linear_attention layers in a tiny checkpoint, loaded by
// model::Decoder unchanged, in fp32 and bf16, chunked prefill and recurrent decode, teacher-forced
// with real traces: the prompt oracle/trace.h's encodePrompt packs for a random machine program
// (gen/program_gen.h: branches, divergence, loops, barriers, early exits, divergent barriers,
// out-of-range addresses, 1..16 threads, 1..3 CTAs), then the run the interpreter writes.
//
// What it pins down: at every position where the interpreter's trace has next an EX, WM, CTA,
// END, TICK, LIMIT or FAULT token — every CTA start (RUN, CTA), every terminator position, every
// EX (the position after), every tick, every faulting op's position and the WM of a divergent
// barrier — the greedy token (the argmax of the lm_head over the trace vocabulary) is that trace
// token, and it wins by the emit head's stated margin 2W. LIMIT on a hand-made infinite loop (and
// on random runs that reach the built step limit). The interpreter runs with maxSteps = the
// circuit's stepLimit, so its LIMIT is where the circuit must write it. The step ticks
// (docs/trace.md "Step ticks"): the loop to a limit of 10,200 steps — TICK(1) after every 100
// steps, TICK(1) TICK(2) after 10,000, TICK(1) LIMIT after 10,200 — and to 150 (LIMIT where two
// digits of the limit meet, after one TICK(1)).
//
// Given fields (the test's, not the circuit's; their stages are others'): the branch predicate
// per lane (ControlSpec::pred, the predicate file's read of the TERM word's predicate, before
// negate) and the fault flag (ControlSpec::fault, the memory stage's decision) are written from
// the interpreter's state into the embedding: at a terminator position of a br, the lanes that the
// interpreter sent to the taken target, xor the TERM word's negate (so p itself, as the predicate
// file would hold it); at the position before a FAULT that is no divergent barrier, the flag. A
// position with a nonzero predicate or the flag uses a "shadow" embedding row: a copy of its
// trace token's row with those dims set (rows after the trace vocabulary; their lm_head rows are
// zero, so the greedy token is still a trace token). Everything else comes from the tokens.
//
// Failing twin: taken and next swapped in the decode of the TERM word must give wrong tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include "circuit/control.h"
#include "circuit/frontend.h"
#include "circuit/tests/harness.h"
#include "circuit/tokens.h"
#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;
using trace::Family;
using trace::Token;

constexpr int kHidden = 1536;
constexpr int kUnits = 1024;
constexpr int kLanes = 4;
constexpr float kUnit = 16;
constexpr float kEmitWeight = 8;
constexpr int kStepLimit = 24;

// One teacher-forced sequence: the trace tokens, the given fields per position, the positions
// whose next token this stage decides.
struct Case {
  std::vector<Token> tokens;
  std::vector<uint8_t> pred;  // per position: the given predicate bits (0 = none)
  std::vector<bool> fault;    // per position: the given fault flag
  std::vector<size_t> checked;
  size_t prompt = 0;
  int steps = 0, ctas = 0;
  oracle::RunStatus status = oracle::RunStatus::Finished;
  bool divergentBarrier = false;
};

bool decidedHere(Family f) {
  return f == Family::Ex || f == Family::Wm || f == Family::Cta || f == Family::End ||
         f == Family::Limit || f == Family::FaultTok || f == Family::Tick;
}

// The case of one program: the interpreter's trace, cut into events with Execution (the same
// tokens as oracle::run, checked), the given fields from each step's outcome.
Case programCase(const machine::Program& prog, const machine::Launch& launch,
                 int stepLimit = kStepLimit) {
  Case c;
  std::vector<Token> t = trace::encodePrompt(prog, launch);
  c.prompt = t.size();
  oracle::RunOptions o;
  o.maxSteps = static_cast<uint64_t>(stepLimit);
  auto started = oracle::Execution::start(prog, launch, o);
  EXPECT_TRUE(started.ok());
  if (!started.ok()) return c;
  oracle::Execution ex = std::move(started).value();
  std::map<size_t, uint8_t> pred;
  std::set<size_t> fault;
  for (;;) {
    const oracle::StepEvent e = ex.next();
    oracle::appendTrace(e, t);
    if (e.kind == oracle::EventKind::CtaStart) ++c.ctas;
    if (e.kind == oracle::EventKind::Step) {
      ++c.steps;
      const machine::Terminator& term = prog.blocks[e.step.block].term;
      if (term.kind == machine::TermKind::Branch) {
        uint8_t p = 0;
        for (int l = 0; l < kLanes; ++l) {
          if (!((e.step.mask >> l) & 1)) continue;
          const bool taken = e.step.nextBlock[static_cast<size_t>(l)] == term.taken;
          if (taken != term.negate) p = static_cast<uint8_t>(p | (1u << l));
        }
        pred[t.size() - 1] = p;
      }
      continue;
    }
    if (e.kind == oracle::EventKind::CtaStart) continue;
    c.status = e.kind == oracle::EventKind::Fault       ? oracle::RunStatus::Fault
               : e.kind == oracle::EventKind::StepLimit ? oracle::RunStatus::StepLimit
                                                        : oracle::RunStatus::Finished;
    if (e.kind == oracle::EventKind::Fault) {
      c.divergentBarrier = e.fault.message.find("divergent barrier") != std::string::npos;
      if (!c.divergentBarrier) fault.insert(t.size() - 2);
    }
    break;
  }
  auto r = oracle::run(prog, launch, o);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(std::vector<Token>(t.begin() + static_cast<long>(c.prompt), t.end()), r->trace);
  c.tokens = t;
  c.pred.assign(t.size(), 0);
  c.fault.assign(t.size(), false);
  for (const auto& [p, bits] : pred) c.pred[p] = bits;
  for (size_t p : fault) c.fault[p] = true;
  for (size_t p = c.prompt - 1; p + 1 < t.size(); ++p)
    if (decidedHere(trace::familyOf(t[p + 1]))) c.checked.push_back(p);
  return c;
}

// What a case shows (a bit each): a memory fault, a divergent barrier, a divergent branch (some
// active lanes to each target), a branch that negates its predicate, the step limit, several
// warps, several CTAs.
int features(const Case& c, const machine::Program& prog, const machine::Launch& launch) {
  int f = 0;
  if (c.status == oracle::RunStatus::Fault) f |= c.divergentBarrier ? 2 : 1;
  for (size_t p = 0; p < c.tokens.size(); ++p)
    if (c.pred[p] != 0 && trace::familyOf(c.tokens[p]) != Family::Wm) f |= 4;
  for (const machine::Block& b : prog.blocks)
    if (b.term.kind == machine::TermKind::Branch && b.term.negate) f |= 8;
  if (c.status == oracle::RunStatus::StepLimit) f |= 16;
  if (launch.blockX > 4) f |= 32;
  if (launch.gridX > 1 && c.status == oracle::RunStatus::Finished) f |= 64;
  return f;
}
constexpr int kAllFeatures = 127;

// Random programs whose trace is at most `maxTokens` long: a case is taken when it shows
// something the ones before did not, until every feature is shown and `count` cases are taken.
std::vector<Case> randomCases(int count, size_t maxTokens, uint64_t firstSeed) {
  gen::Policy p;
  p.wBarrier = 3;
  p.wEarlyExit = 2;
  p.divergentBarrierProb = 0.15;
  p.outOfRangeProb = 0.1;
  p.maxGrid = 3;
  p.maxRegions = 3;
  p.maxBlocks = 8;
  p.maxOps = 2;
  p.maxTrips = 3;
  p.initNonzeroProb = 0;
  std::vector<Case> out;
  int seen = 0;
  for (uint64_t seed = firstSeed; seed < firstSeed + 20000; ++seed) {
    if (seen == kAllFeatures && static_cast<int>(out.size()) >= count) break;
    auto g = gen::generateProgram(p, seed);
    if (!g.ok()) continue;
    Case c = programCase(g->program, g->launch);
    if (c.tokens.size() > maxTokens) continue;
    const int f = features(c, g->program, g->launch);
    const bool adds = (f & ~seen) != 0;
    const bool fill = seen == kAllFeatures && static_cast<int>(out.size()) < count;
    if (!adds && !fill) continue;
    seen |= f;
    out.push_back(std::move(c));
  }
  EXPECT_EQ(seen, kAllFeatures) << "the random cases do not show every feature";
  return out;
}

// An infinite loop (B0 → B1 → B2 → B0, each block mov r1, %tid.x and a jmp) over 6 threads in 2
// CTAs: LIMIT after stepLimit steps, all in CTA 0, its two warps in turn; the EX after a tick
// names any of the three blocks.
Case loopCase(int stepLimit = kStepLimit) {
  machine::Program prog;
  prog.name = "loop";
  constexpr int kBlocks = 3;
  for (int i = 0; i < kBlocks; ++i) {
    machine::Block b;
    machine::Instr mov;
    mov.op = machine::Op::Mov;
    mov.dst = 1;
    mov.src[0] = machine::Operand::s(machine::Special::TidX);
    b.ops.push_back(mov);
    b.term.kind = machine::TermKind::Jump;
    b.term.next = static_cast<uint8_t>((i + 1) % kBlocks);
    prog.blocks.push_back(b);
  }
  machine::Launch launch;
  launch.gridX = 2;
  launch.blockX = 6;
  EXPECT_TRUE(machine::verify(prog, launch).ok());
  return programCase(prog, launch, stepLimit);
}

// The first `tokens` tokens of a case (a causal model's outputs there are the whole case's).
Case prefixOf(const Case& c, size_t tokens) {
  Case p = c;
  p.tokens.resize(tokens);
  p.pred.resize(tokens);
  p.fault.resize(tokens);
  p.checked.clear();
  for (size_t q : c.checked)
    if (q + 1 < tokens) p.checked.push_back(q);
  return p;
}

struct Rig {
  std::string dir;
  Control ctl;
  std::map<std::tuple<Token, uint8_t, bool>, int64_t> shadow;  // (token, pred, fault) → row
  int64_t row(const Case& c, size_t p) const {
    if (c.pred[p] == 0 && !c.fault[p]) return c.tokens[p];
    return shadow.at({c.tokens[p], c.pred[p], c.fault[p]});
  }
};

model::Qwen35Config config(int keyHeadDim, int64_t vocab) {
  model::Qwen35Config c = harness::config(kHidden, kControlLayers, kUnits, vocab);
  const std::vector<int> heads = controlHeads(keyHeadDim);
  c.linearNumKeyHeads = c.linearNumValueHeads = *std::max_element(heads.begin(), heads.end());
  c.linearKeyHeadDim = keyHeadDim;
  return c;
}

Rig build(const std::string& name, const std::vector<Case>& cases, int keyHeadDim = 64,
          ControlTwin twin = ControlTwin::None, int stepLimit = kStepLimit) {
  Rig rig;
  std::set<std::tuple<Token, uint8_t, bool>> need;
  for (const Case& c : cases)
    for (size_t p = 0; p < c.tokens.size(); ++p)
      if (c.pred[p] != 0 || c.fault[p]) need.insert({c.tokens[p], c.pred[p], c.fault[p]});
  int64_t next = trace::kVocabSize;
  for (const auto& k : need) rig.shadow[k] = next++;
  CircuitWeights w(config(keyHeadDim, next));
  FieldAllocator alloc(kHidden);
  const TokenLayout tokens = planTokenLayout(alloc, kHidden).value();
  EXPECT_TRUE(writeTokenEmbeddings(w, tokens).ok());
  const Field pred = alloc.take("test.pred", kLanes).value();
  const Field fault = alloc.take("test.fault", 1).value();
  FrontEndSpec fs;
  fs.tokens = tokens;
  auto fe = buildFrontEnd(w, alloc, fs);
  EXPECT_TRUE(fe.ok()) << fe.error().message;
  if (!fe.ok()) return rig;
  ControlSpec cs;
  cs.tokens = tokens;
  cs.pred = pred;
  cs.fault = fault;
  cs.stepLimit = stepLimit;
  cs.twin = twin;
  auto ctl = buildControl(w, alloc, fe.value(), cs);
  EXPECT_TRUE(ctl.ok()) << ctl.error().message;
  if (!ctl.ok()) return rig;
  rig.ctl = ctl.value();
  auto margin = writeEmitHead(w, tokens, rig.ctl.emit, kEmitWeight);
  EXPECT_TRUE(margin.ok()) << margin.error().message;
  // The given fields: −u (0) in every trace row; a shadow row is its token's row with them set.
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    harness::setSigns(w, id, pred, 0, kUnit);
    harness::setSigns(w, id, fault, 0, kUnit);
  }
  for (const auto& [k, row] : rig.shadow) {
    const auto [token, bits, f] = k;
    for (int d = 0; d < kHidden; ++d) EXPECT_TRUE(w.set(embed, row, d, w.get(embed, token, d).value()).ok());
    harness::setSigns(w, row, pred, bits, kUnit);
    harness::setSigns(w, row, fault, f ? 1 : 0, kUnit);
  }
  std::cout << "alloc: " << alloc.used() << " of " << kHidden << " dims; " << rig.shadow.size()
            << " shadow rows" << std::endl;
  rig.dir = harness::write(w, "control_" + name);
  return rig;
}

struct Result {
  int64_t checked = 0, wrong = 0;
  float minGap = 1e30f;
  std::map<Family, int> families;
  std::string first;
};

void check(Result& r, model::Decoder& dec, const Rig& rig, const Case& c, Path path) {
  std::vector<int64_t> ids;
  for (size_t p = 0; p < c.tokens.size(); ++p) ids.push_back(rig.row(c, p));
  const auto rows = harness::run(dec, ids, path, trace::kVocabSize);
  ASSERT_EQ(rows.size(), ids.size());
  for (size_t p : c.checked) {
    const std::vector<float>& row = rows[p];
    const auto best = std::max_element(row.begin(), row.end()) - row.begin();
    float second = -1e30f;
    for (size_t i = 0; i < row.size(); ++i)
      if (static_cast<long>(i) != best) second = std::max(second, row[i]);
    r.minGap = std::min(r.minGap, row[static_cast<size_t>(best)] - second);
    const Token want = c.tokens[p + 1];
    ++r.checked;
    ++r.families[trace::familyOf(want)];
    if (best != want) {
      ++r.wrong;
      if (r.first.empty())
        r.first = "position " + std::to_string(p) + " (after " + trace::tokenName(c.tokens[p]) +
                  "): expected " + trace::tokenName(want) + ", argmax " +
                  trace::tokenName(static_cast<Token>(best));
    }
  }
}

std::string summary(const Result& r) {
  std::string s = std::to_string(r.checked) + " positions, " + std::to_string(r.wrong) +
                  " wrong, smallest top-vs-second gap " + std::to_string(r.minGap) + " (";
  for (const auto& [f, n] : r.families)
    s += std::string(trace::kFamilies[static_cast<size_t>(f)].name) + " " + std::to_string(n) + " ";
  return s + ")";
}

// The budget at dk 64 and 128, counted without weights (WeightStorage::CountOnly): residual dims
// (the token layout and the front end's included), heads and MLP units per layer L..L+13.
TEST(CircuitControl, BudgetPerLayerAtKeyHeadDims64And128) {
  for (int dk : {64, 128}) {
    model::Qwen35Config c = harness::config(4096, kControlLayers, 4096, trace::kVocabSize);
    c.linearNumKeyHeads = c.linearNumValueHeads = 64;
    c.linearKeyHeadDim = dk;
    CircuitWeights w(c, WeightStorage::CountOnly);
    FieldAllocator alloc(4096);
    const TokenLayout tokens = planTokenLayout(alloc, 4096).value();
    const Field pred = alloc.take("test.pred", kLanes).value();
    const Field fault = alloc.take("test.fault", 1).value();
    FrontEndSpec fs;
    fs.tokens = tokens;
    auto fe = buildFrontEnd(w, alloc, fs);
    ASSERT_TRUE(fe.ok()) << fe.error().message;
    ControlSpec cs;
    cs.tokens = tokens;
    cs.pred = pred;
    cs.fault = fault;
    auto ctl = buildControl(w, alloc, fe.value(), cs);
    ASSERT_TRUE(ctl.ok()) << ctl.error().message;
    const std::vector<int> heads = controlHeads(dk);
    std::cout << "dk " << dk << ": " << alloc.used() << " residual dims (5 given); heads/units per layer:";
    int most = 0;
    for (int l = 0; l < kControlLayers; ++l) {
      const int units = ctl->units[static_cast<size_t>(l)] + (l < 5 ? fe->units[l] : 0);
      most = std::max(most, units);
      std::cout << " " << heads[static_cast<size_t>(l)] << "/" << units;
    }
    std::cout << "; widest MLP " << most << std::endl;
    EXPECT_LE(alloc.used(), kHidden);
    EXPECT_LE(most, kUnits);
    EXPECT_EQ(ctl->heads[kControlLayers - 1], 2);
  }
}

// Each refusal next to a base case that builds (count-only weights): a step limit outside
// 1..R1·R2·R3 (which builds), given fields of the wrong width, a front end with its payload banks
// (other head counts), a config with too few layers (the heads it needs beyond the front end's fit
// wherever the front end's 26 do).
TEST(CircuitControl, RefusesWhatItCannotBuild) {
  // Accepted: the stage as the tests build it, on a front end with payload banks (the execute
  // pipeline's), and without a supplied fault.
  enum class Bad {
    None,
    PayloadBanks,
    NoFault,
    ModelLimit,
    LimitZero,
    LimitHigh,
    PredWidth,
    FaultWidth,
    FewLayers,
    HeadsInAFullAttentionLayer,
    HostHeadsOverTheConfig
  };
  for (Bad bad : {Bad::None, Bad::PayloadBanks, Bad::NoFault, Bad::ModelLimit, Bad::LimitZero,
                  Bad::LimitHigh, Bad::PredWidth, Bad::FaultWidth, Bad::FewLayers,
                  Bad::HeadsInAFullAttentionLayer, Bad::HostHeadsOverTheConfig}) {
    model::Qwen35Config c = harness::config(4096, bad == Bad::FewLayers ? kControlLayers - 1 : kControlLayers,
                                            4096, trace::kVocabSize);
    c.linearNumKeyHeads = c.linearNumValueHeads = 64;
    c.linearKeyHeadDim = 64;
    // S + 1 (the scheduler's PC table) as a full_attention layer; S + 2 holds no head and may be one.
    if (bad == Bad::HeadsInAFullAttentionLayer) c.layerTypes[6] = model::LayerType::Full;
    if (bad == Bad::None) c.layerTypes[7] = model::LayerType::Full;
    CircuitWeights w(c, WeightStorage::CountOnly);
    FieldAllocator alloc(4096);
    const TokenLayout tokens = planTokenLayout(alloc, 4096).value();
    FrontEndSpec fs;
    fs.tokens = tokens;
    fs.payloadBanks = bad == Bad::PayloadBanks;
    auto fe = buildFrontEnd(w, alloc, fs);
    ASSERT_TRUE(fe.ok()) << fe.error().message;
    ControlSpec cs;
    cs.tokens = tokens;
    cs.pred = alloc.take("pred", bad == Bad::PredWidth ? 3 : kLanes).value();
    if (bad != Bad::NoFault) cs.fault = alloc.take("fault", bad == Bad::FaultWidth ? 2 : 1).value();
    const int model = static_cast<int>(trace::kModelStepLimit);
    cs.stepLimit = bad == Bad::LimitZero    ? 0
                   : bad == Bad::LimitHigh  ? model + 1
                   : bad == Bad::ModelLimit ? model
                                            : kStepLimit;
    if (bad == Bad::HostHeadsOverTheConfig) cs.hostHeads[3] = 64 - fe->heads[3] - 1;  // + 2 launch latches
    auto ctl = buildControl(w, alloc, fe.value(), cs);
    if (bad == Bad::None || bad == Bad::PayloadBanks || bad == Bad::NoFault ||
        bad == Bad::ModelLimit) {
      EXPECT_TRUE(ctl.ok()) << static_cast<int>(bad) << ": " << ctl.error().message;
    } else {
      ASSERT_FALSE(ctl.ok()) << static_cast<int>(bad);
      EXPECT_EQ(ctl.error().kind, ErrorKind::Usage) << ctl.error().message;
      std::cout << "refused: " << ctl.error().message << "\n";
    }
  }
}

struct Fixture {
  std::vector<Case> cases;  // random runs, then the loop
  Rig rig;
  int faults = 0, divergent = 0, limits = 0, ctas = 0, branches = 0;
};
const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.cases = randomCases(harness::inputs(1, 200), harness::fullInputs() ? 1200 : 260, 1);
    x.cases.push_back(loopCase());
    for (const Case& c : x.cases) {
      x.faults += c.status == oracle::RunStatus::Fault && !c.divergentBarrier ? 1 : 0;
      x.divergent += c.divergentBarrier ? 1 : 0;
      x.limits += c.status == oracle::RunStatus::StepLimit ? 1 : 0;
      x.ctas += c.ctas;
      for (uint8_t p : c.pred) x.branches += p != 0 ? 1 : 0;
    }
    x.rig = build("main", x.cases);
    return x;
  }();
  return f;
}

TEST(CircuitControl, TheCasesHoldFaultsLimitsCtasAndBranches) {
  const Fixture& f = fixture();
  std::cout << f.cases.size() << " runs: " << f.faults << " memory faults, " << f.divergent
            << " divergent barriers, " << f.limits << " step limits, " << f.ctas
            << " CTA tokens, " << f.branches << " terminators with a nonzero predicate\n";
  EXPECT_GT(f.faults, 0);
  EXPECT_GT(f.limits, 0);
  EXPECT_GT(f.ctas, 0);
  EXPECT_GT(f.branches, 0);
  std::cout << "heads / units per layer:";
  for (size_t l = 0; l < f.rig.ctl.heads.size(); ++l)
    std::cout << " " << f.rig.ctl.heads[l] << "/" << f.rig.ctl.units[l];
  std::cout << "\n";
}

void runAll(ComputeDtype dtype, const std::vector<Path>& paths, size_t prefillCases,
            size_t decodeCases) {
  const Fixture& f = fixture();
  ASSERT_FALSE(f.rig.dir.empty());
  auto dec = harness::load(f.rig.dir, dtype);
  ASSERT_NE(dec, nullptr);
  for (Path path : paths) {
    Result r;
    const std::clock_t t0 = std::clock();
    const size_t n = std::min(path == Path::Prefill ? prefillCases : decodeCases, f.cases.size());
    for (size_t i = 0; i < n; ++i) check(r, *dec, f.rig, f.cases[f.cases.size() - 1 - i], path);
    const double cpu = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
    EXPECT_EQ(r.wrong, 0) << r.first;
    EXPECT_EQ(r.minGap, 2 * kEmitWeight) << "the stated margin 2W·λf";
    std::cout << (dtype == ComputeDtype::F32 ? "fp32 " : "bf16 ") << harness::pathName(path)
              << ": " << n << " runs, " << summary(r) << " (" << cpu << " s CPU)\n";
  }
}

TEST(CircuitControl, WritesTheTracesHeaderCtaEndLimitAndFaultTokensInFp32) {
  runAll(ComputeDtype::F32, {Path::Prefill, harness::fullInputs() ? Path::Decode : Path::Mixed},
         1000, static_cast<size_t>(harness::inputs(1, 40)));
}

TEST(CircuitControl, WritesTheTracesHeaderCtaEndLimitAndFaultTokensInBf16) {
  runAll(ComputeDtype::BF16, {Path::Prefill, harness::fullInputs() ? Path::Decode : Path::Mixed},
         static_cast<size_t>(harness::inputs(1, 1000)), static_cast<size_t>(harness::inputs(1, 40)));
}

// Key head dim 128 (the `2b` shape's): every latch, counter and threshold reads through tap.h's
// 4-hot key; fp32 prefill on every case (bf16 and the other paths: under QGPU_CIRCUIT_FULL=1).
TEST(CircuitControl, WritesTheSameTokensAtKeyHeadDim128) {
  const Fixture& f = fixture();
  const Rig rig = build("dk128", f.cases, 128);
  ASSERT_FALSE(rig.dir.empty());
  for (ComputeDtype dtype : harness::kDtypes) {
    if (dtype == ComputeDtype::BF16 && !harness::fullInputs()) continue;
    auto dec = harness::load(rig.dir, dtype);
    ASSERT_NE(dec, nullptr);
    Result r;
    for (const Case& c : f.cases) check(r, *dec, rig, c, Path::Prefill);
    EXPECT_EQ(r.wrong, 0) << r.first;
    EXPECT_EQ(r.minGap, 2 * kEmitWeight);
    std::cout << "dk 128 " << (dtype == ComputeDtype::F32 ? "fp32" : "bf16") << " prefill: "
              << summary(r) << "\n";
  }
}

// The step ticks: the loop to 150 steps (digits 50, 1: one TICK(1), then LIMIT at a terminator
// position, where [s_1 ≥ 50] ∧ [s_2 ≥ 1] first hold); under QGPU_CIRCUIT_FULL also to 10,200
// steps (digits 0, 2, 1: 71,519 tokens, 102 TICK(1) and one TICK(2), LIMIT at a TICK(1) position
// two hundred steps after the TICK(2); about 13 minutes here), each through a stage built with
// that limit: every tick, every EX after one (the EX latch) and the LIMIT on the chunked path in
// fp32 and bf16, the first 1,000 tokens (TICK(1) after step 100) also on the recurrent path.
TEST(CircuitControl, WritesTheStepTicksAndTheLimitAfterThem) {
  constexpr int kShortLimit = 150, kLongLimit = 10200;
  std::vector<std::pair<int, Case>> runs = {{kShortLimit, loopCase(kShortLimit)}};
  if (harness::fullInputs()) {
    runs.push_back({kLongLimit, loopCase(kLongLimit)});
    const Case& longRun = runs.back().second;
    int ticks = 0;
    for (size_t p = longRun.prompt; p < longRun.tokens.size(); ++p)
      ticks += trace::familyOf(longRun.tokens[p]) == Family::Tick ? 1 : 0;
    ASSERT_EQ(ticks, kLongLimit / 100 + 1) << "TICK(1) every 100 steps, one TICK(2)";
    ASSERT_EQ(longRun.tokens[longRun.tokens.size() - 2], trace::tick(1));
  }
  // The EX latch shows only where a tick's EX is not EX(0), the constant part of the case.
  std::set<Token> afterTicks;
  for (const auto& [limit, run] : runs)
    for (size_t p = run.prompt; p + 1 < run.tokens.size(); ++p)
      if (trace::familyOf(run.tokens[p]) == Family::Tick &&
          trace::familyOf(run.tokens[p + 1]) == Family::Ex)
        afterTicks.insert(run.tokens[p + 1]);
  ASSERT_FALSE(afterTicks.empty());
  EXPECT_NE(*afterTicks.rbegin(), trace::tok(Family::Ex, 0)) << "a tick's EX names another block";
  for (const auto& [limit, run] : runs) {
    const Rig rig = build("ticks" + std::to_string(limit), {run}, 64, ControlTwin::None, limit);
    ASSERT_FALSE(rig.dir.empty());
    for (ComputeDtype dtype : harness::kDtypes) {
      auto dec = harness::load(rig.dir, dtype);
      ASSERT_NE(dec, nullptr);
      std::vector<std::pair<Path, Case>> paths = {{Path::Prefill, run}};
      if (dtype == ComputeDtype::F32 || harness::fullInputs())
        paths.push_back({Path::Mixed, prefixOf(run, std::min<size_t>(run.tokens.size(), 1000))});
      for (const auto& [path, c] : paths) {
        Result r;
        const std::clock_t t0 = std::clock();
        check(r, *dec, rig, c, path);
        EXPECT_EQ(r.wrong, 0) << r.first;
        EXPECT_EQ(r.minGap, 2 * kEmitWeight);
        EXPECT_GT(r.families[Family::Tick], 0);
        std::cout << "limit " << limit << ", " << (dtype == ComputeDtype::F32 ? "fp32 " : "bf16 ")
                  << harness::pathName(path) << ": " << c.tokens.size() << " tokens, " << summary(r)
                  << " (" << static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC << " s CPU)\n";
      }
    }
  }
}

TEST(CircuitControl, SwappedTargetsAreWrongSomewhere) {
  const Fixture& f = fixture();
  const Rig twin = build("twin_swap", f.cases, 64, ControlTwin::SwapTargets);
  ASSERT_FALSE(twin.dir.empty());
  auto dec = harness::load(twin.dir, ComputeDtype::F32);
  ASSERT_NE(dec, nullptr);
  Result r;
  for (const Case& c : f.cases) check(r, *dec, twin, c, Path::Prefill);
  EXPECT_GT(r.wrong, 0);
  std::cout << "twin swap-targets: " << summary(r) << "\n";
}

}  // namespace
}  // namespace qgpu::circuit
