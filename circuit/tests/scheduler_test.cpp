// qgpu/circuit/tests/scheduler_test.cpp — the scheduling stage (circuit/scheduler.h) run through
// model/'s real decoder: 7 standard linear_attention layers (16 DeltaNet heads of 64/128 in the
// PC-table layer; 8 with the emit layer) in a tiny checkpoint, loaded by model::Decoder unchanged, in fp32 and bf16,
// through the chunked prefill, the recurrent decode and the mixed path (crossing the 64-token
// chunk).
//
// What it pins down: on interpreter runs of random programs (gen/: barriers, divergent branches
// and loops, early exits, 1..16 threads — so warps of 1..4 lanes — and 1..3 CTAs), at every
// position where the trace's next token is a step header — every CTA start, every terminator,
// and the position after it — the stage's output (b', w', m', or "done" where the CTA finished)
// equals the interpreter's next event exactly, and every probed dim is exactly ±1 (the full
// layout's magnitude). The inputs are the embedded fields of scheduler.h (in the circuit: the
// EXEC latch, the fetched terminator, the branch predicate read, the launch latch); the expected
// values are the interpreter's events (circuit/tests/scheduler_events.h), never the gadget's.
// The emit layer's argmax must be the trace's next token (EX(b'), WM(w', m'), CTA, END) and its
// fault bit the interpreter's divergent-barrier fault. The twins (max instead of min PC, no
// barrier release) must be wrong somewhere.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include <algorithm>
#include <map>

#include "circuit/scheduler.h"
#include "circuit/tests/harness.h"
#include "circuit/tests/scheduler_events.h"
#include "gen/program_gen.h"

namespace qgpu::circuit {
namespace {

using harness::ComputeDtype;
using harness::Path;

constexpr int kHidden = 384;
constexpr float kUnit = 16;
constexpr int kLayers = 7;
constexpr int kProbes = 17;  // b' 5, w' 2, m' 4, done 1, w' one-hot 4, fault 1 (emit only)
constexpr int kFaultProbe = 16;
constexpr int kDoneProbe = 11;
// Position t's token is row kFirstRow + t; the probes are logits kFirstRow.. (rows 0..241 are the
// trace tokens, whose lm_head rows the emit head writes).
constexpr int kFirstRow = trace::kVocabSize;
constexpr float kEmitWeight = 8;

struct Coverage {
  int runs = 0, ctas = 0, releases = 0, switches = 0, exits = 0, oddBlockX = 0, done = 0;
  int faults = 0;  // runs that end in a divergent-barrier fault
  std::set<int> warps;  // warps per CTA seen
};

// Positions of many short runs, concatenated (each run starts with its reset position).
std::vector<testing::SchedPosition> positions(size_t n, Coverage& cov) {
  gen::Policy p;
  p.wBarrier = 3;
  p.wEarlyExit = 2;
  p.divergentBarrierProb = 0.1;
  p.outOfRangeProb = 0;
  p.maxGrid = 3;
  p.maxRegions = 4;
  p.maxTrips = 3;
  std::vector<testing::SchedPosition> out;
  for (uint64_t seed = 0; out.size() < n && seed < 100000; ++seed) {
    auto c = gen::generateProgram(p, seed);
    if (!c.ok()) continue;
    const testing::SchedRun run = testing::collectRun(c.value().program, c.value().launch,
                                                      c.value().stepBound);
    if ((!run.finished && !run.faulted) || run.positions.size() > 90) continue;
    cov.faults += run.faulted ? 1 : 0;
    ++cov.runs;
    cov.oddBlockX += c.value().launch.blockX % 4 != 0 ? 1 : 0;
    cov.warps.insert(static_cast<int>((c.value().launch.blockX + 3) / 4));
    for (const auto& pos : run.positions) {
      cov.ctas += pos.reset ? 1 : 0;
      cov.done += pos.expect.done ? 1 : 0;
      if (pos.term && !pos.expect.done && pos.expect.warp != pos.warp) ++cov.switches;
      if (pos.term && pos.barrier && !pos.expect.done && pos.expect.warp <= pos.warp)
        ++cov.releases;
      for (int l = 0; l < kSchedLanes; ++l)
        if (pos.term && (pos.mask >> l & 1) && pos.nextBlock[static_cast<size_t>(l)] == machine::kExitTarget)
          ++cov.exits;
    }
    out.insert(out.end(), run.positions.begin(), run.positions.end());
  }
  out.resize(std::min(out.size(), n));
  return out;
}

struct Rig {
  std::string dir;
  Scheduler sched;
};

Rig build(const std::string& name, const std::vector<testing::SchedPosition>& pos,
          SchedulerTwin twin = SchedulerTwin::None, bool emit = false) {
  model::Qwen35Config c = harness::config(kHidden, kLayers + (emit ? 1 : 0), 512,
                                          kFirstRow + std::max<int64_t>(kProbes, static_cast<int64_t>(pos.size())));
  c.linearNumKeyHeads = c.linearNumValueHeads = kSchedThreads;
  c.linearKeyHeadDim = 64;  // a power of four: exact one-row reads in fp32 (docs/circuit.md §9)
  CircuitWeights w(c);
  FieldAllocator alloc(kHidden);
  SchedulerSpec spec;
  spec.in = testing::takeTestInputs(alloc);
  const SchedulerInputs& in = spec.in;
  spec.twin = twin;
  spec.emit = emit;
  auto s = buildScheduler(w, alloc, spec);
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return {};
  for (size_t t = 0; t < pos.size(); ++t) {
    const auto row = static_cast<int64_t>(kFirstRow + t);
    const testing::SchedPosition& p = pos[t];
    harness::fillRow(w, row, kUnit);  // ballast and every pad +u
    harness::setSigns(w, row, in.reset, p.reset, kUnit);
    harness::setSigns(w, row, in.term, p.term, kUnit);
    harness::setSigns(w, row, in.warp, static_cast<uint64_t>(p.warp), kUnit);
    harness::setSigns(w, row, in.mask, p.mask, kUnit);
    harness::setSigns(w, row, in.kind, static_cast<uint64_t>(p.kind), kUnit);
    harness::setSigns(w, row, in.taken, static_cast<uint64_t>(p.taken), kUnit);
    harness::setSigns(w, row, in.next, static_cast<uint64_t>(p.next), kUnit);
    harness::setSigns(w, row, in.pred, p.pred, kUnit);
    harness::setSigns(w, row, in.blockX, static_cast<uint64_t>(p.blockX), kUnit);
    harness::setSigns(w, row, in.lastCta, p.lastCta, kUnit);
    harness::setSigns(w, row, in.nextBar, p.nextBar, kUnit);
  }
  const Scheduler& sc = s.value();
  harness::probe(w, kFirstRow + 0, sc.nextBlock);
  harness::probe(w, kFirstRow + 5, sc.nextWarp);
  harness::probe(w, kFirstRow + 7, sc.nextMask);
  harness::probe(w, kFirstRow + kDoneProbe, sc.done);
  harness::probe(w, kFirstRow + 12, sc.nextWarpOneHot);
  if (emit) {
    TokenLayout tokens;  // only the row offset matters to the emit head
    tokens.rowOffset = 0;
    auto margin = writeEmitHead(w, tokens, sc.emit, kEmitWeight);
    EXPECT_TRUE(margin.ok()) << margin.error().message;
    harness::probe(w, kFirstRow + kFaultProbe, sc.fault);
  }
  return {harness::write(w, name), sc};
}

struct Result {
  harness::SignCheck bits;
  int64_t wrongPositions = 0;
  std::string firstWrong;
  std::vector<std::vector<float>> rows;      // the probes
  std::vector<std::vector<float>> emitRows;  // the logits of the trace tokens
};

Result check(model::Decoder& dec, const std::vector<testing::SchedPosition>& pos, Path path) {
  std::vector<int64_t> tokens(pos.size());
  for (size_t t = 0; t < pos.size(); ++t) tokens[t] = static_cast<int64_t>(kFirstRow + t);
  Result r;
  r.rows = harness::run(dec, tokens, path, kFirstRow + kProbes);
  for (auto& row : r.rows) {  // the trace tokens' logits apart, the probes from index 0
    r.emitRows.emplace_back(row.begin(), row.begin() + kFirstRow);
    row.erase(row.begin(), row.begin() + kFirstRow);
  }
  EXPECT_EQ(r.rows.size(), pos.size());
  for (size_t t = 0; t < r.rows.size() && t < pos.size(); ++t) {
    const SchedChoice& e = pos[t].expect;
    const int64_t before = r.bits.wrongSign + r.bits.inexact;
    const std::string where = "position " + std::to_string(t);
    if (e.done) {
      harness::checkBits(r.bits, {r.rows[t][kDoneProbe]}, {true}, 1.0, where + " (done)");
    } else {
      std::vector<bool> bits = harness::bitsOf(static_cast<uint64_t>(e.block), 5);
      for (bool b : harness::bitsOf(static_cast<uint64_t>(e.warp), 2)) bits.push_back(b);
      for (bool b : harness::bitsOf(e.mask, 4)) bits.push_back(b);
      bits.push_back(false);  // not done
      for (int v = 0; v < kSchedWarps; ++v) bits.push_back(v == e.warp);
      harness::checkBits(r.bits, r.rows[t], bits, 1.0, where);
    }
    if (r.bits.wrongSign + r.bits.inexact > before) {
      ++r.wrongPositions;
      if (r.firstWrong.empty())
        r.firstWrong = where + ": expected " +
                       (e.done ? std::string("done")
                               : "b" + std::to_string(e.block) + " w" + std::to_string(e.warp) +
                                     " m" + std::to_string(e.mask));
    }
  }
  return r;
}

// The sequence every check uses (positions of many short runs) and its checkpoint, built once.
struct Fixture {
  std::vector<testing::SchedPosition> pos;
  Coverage cov;
  Rig rig;
};
const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.pos = positions(static_cast<size_t>(harness::inputs(640, 4000)), x.cov);
    x.rig = build("sched", x.pos);
    return x;
  }();
  return f;
}

// Every path of one dtype: prefill on the first `prefill` positions, decode and mixed on the first
// `paths` (each crossing the 64-token chunk: the mixed path's prompt is 65..100 tokens).
void checkPaths(ComputeDtype dtype, size_t prefill, size_t paths) {
  const Fixture& f = fixture();
  ASSERT_FALSE(f.rig.dir.empty());
  ASSERT_GE(f.pos.size(), std::max(prefill, paths));
  auto dec = harness::load(f.rig.dir, dtype);
  ASSERT_NE(dec, nullptr);
  const char* dt = dtype == ComputeDtype::F32 ? "fp32 " : "bf16 ";
  std::vector<std::vector<float>> prefillRows;
  for (Path path : harness::kPaths) {
    const size_t m = path == Path::Prefill ? prefill : paths;
    const std::vector<testing::SchedPosition> sub(f.pos.begin(), f.pos.begin() + static_cast<long>(m));
    const std::clock_t t0 = std::clock();
    const Result r = check(*dec, sub, path);
    const double cpu = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
    EXPECT_TRUE(r.bits.ok()) << dt << harness::pathName(path) << ": " << r.bits.summary() << "; "
                             << r.firstWrong;
    std::cout << dt << harness::pathName(path) << ": " << m << " positions, " << r.wrongPositions
              << " wrong; " << r.bits.summary() << " (" << cpu << " s CPU)\n";
    if (path == Path::Prefill) {
      prefillRows = r.rows;
    } else {
      // The paths agree bit for bit on the positions they share.
      int64_t differ = 0;
      for (size_t t = 0; t < r.rows.size() && t < prefillRows.size(); ++t)
        differ += r.rows[t] != prefillRows[t] ? 1 : 0;
      EXPECT_EQ(differ, 0) << dt << harness::pathName(path) << " differs from prefill";
    }
  }
}

TEST(CircuitScheduler, TheSequenceHoldsReleasesSwitchesExitsAndCtas) {
  const Fixture& f = fixture();
  EXPECT_GT(f.cov.releases, 10);
  EXPECT_GT(f.cov.switches, 20);
  EXPECT_GT(f.cov.exits, 20);
  EXPECT_GT(f.cov.ctas, f.cov.runs);
  EXPECT_GT(f.cov.oddBlockX, 3);
  EXPECT_EQ(f.cov.warps.size(), 4u);
  std::cout << "sequence: " << f.pos.size() << " positions, " << f.cov.runs << " runs, "
            << f.cov.ctas << " CTA starts, " << f.cov.switches << " warp switches, "
            << f.cov.releases << " barrier releases, " << f.cov.exits << " lane exits, "
            << f.cov.done << " CTA ends, " << f.cov.faults << " runs ending in a divergent-barrier fault\n";
}

TEST(CircuitScheduler, EmitsTheInterpretersNextExecAtEveryPositionInFp32OnEveryPath) {
  const size_t n = fixture().pos.size();
  checkPaths(ComputeDtype::F32, n, static_cast<size_t>(harness::inputs(200, static_cast<int>(n))));
}

TEST(CircuitScheduler, EmitsTheInterpretersNextExecAtEveryPositionInBf16OnEveryPath) {
  const size_t n = fixture().pos.size();
  checkPaths(ComputeDtype::BF16, static_cast<size_t>(harness::inputs(130, static_cast<int>(n))),
             static_cast<size_t>(harness::inputs(80, static_cast<int>(n))));
}

TEST(CircuitScheduler, EachTwinIsWrongSomewhere) {
  const auto& pos = fixture().pos;
  for (SchedulerTwin twin : {SchedulerTwin::MaxPc, SchedulerTwin::NoRelease}) {
    const char* name = twin == SchedulerTwin::MaxPc ? "max-PC" : "no-release";
    const Rig rig = build(std::string("sched_twin_") + name, pos, twin);
    ASSERT_FALSE(rig.dir.empty());
    auto dec = harness::load(rig.dir, ComputeDtype::F32);
    ASSERT_NE(dec, nullptr);
    const Result r = check(*dec, pos, Path::Prefill);
    EXPECT_GT(r.wrongPositions, 0) << name;
    std::cout << "twin " << name << ": " << r.wrongPositions << " of " << pos.size()
              << " positions wrong\n";
  }
}

// The emit layer (L+7): the argmax over the trace vocabulary at every position is the token the
// interpreter's trace has next there (scheduler_spec_test checks that these tokens are exactly the
// EX / WM / CTA / END subsequence of the interpreter's trace).
TEST(CircuitScheduler, EmitsTheTracesNextStepHeaderCtaOrEndToken) {
  const auto& all = fixture().pos;
  const size_t n = static_cast<size_t>(harness::inputs(320, static_cast<int>(all.size())));
  const std::vector<testing::SchedPosition> pos(all.begin(), all.begin() + static_cast<long>(n));
  const Rig rig = build("sched_emit", pos, SchedulerTwin::None, true);
  ASSERT_FALSE(rig.dir.empty());
  for (ComputeDtype dtype : harness::kDtypes) {
    const bool f32 = dtype == ComputeDtype::F32;
    auto dec = harness::load(rig.dir, dtype);
    ASSERT_NE(dec, nullptr);
    for (Path path : {Path::Prefill, Path::Mixed}) {
      const size_t m = f32 ? n : static_cast<size_t>(harness::inputs(80, static_cast<int>(n)));
      const std::vector<testing::SchedPosition> sub(pos.begin(), pos.begin() + static_cast<long>(m));
      const Result r = check(*dec, sub, path);
      EXPECT_TRUE(r.bits.ok()) << r.bits.summary() << "; " << r.firstWrong;
      int64_t wrong = 0;
      float minGap = 1e30f;
      std::string first;
      std::map<trace::Family, int> families;
      harness::SignCheck faultBits;
      int faults = 0;
      for (size_t t = 0; t < r.rows.size(); ++t) {
        harness::checkBits(faultBits, {r.rows[t][kFaultProbe]}, {sub[t].expectFault}, 1.0,
                           "position " + std::to_string(t) + " (fault)");
        faults += sub[t].expectFault ? 1 : 0;
      }
      EXPECT_TRUE(faultBits.ok()) << faultBits.summary();
      if (f32) {
        EXPECT_GT(faults, 0);
      }
      for (size_t t = 0; t < r.emitRows.size(); ++t) {
        const auto& row = r.emitRows[t];
        const auto best = std::max_element(row.begin(), row.end()) - row.begin();
        float second = -1e30f;
        for (size_t i = 0; i < row.size(); ++i)
          if (static_cast<long>(i) != best) second = std::max(second, row[i]);
        minGap = std::min(minGap, row[static_cast<size_t>(best)] - second);
        const trace::Token want = testing::nextToken(sub[t]);
        ++families[trace::familyOf(want)];
        if (best != want) {
          ++wrong;
          if (first.empty())
            first = "position " + std::to_string(t) + ": expected " + trace::tokenName(want) +
                    ", argmax " + trace::tokenName(static_cast<trace::Token>(best));
        }
      }
      EXPECT_EQ(wrong, 0) << first;
      EXPECT_EQ(minGap, 2 * kEmitWeight) << "the stated margin 2W·λf";
      EXPECT_GT(families[trace::Family::Ex], 0);
      EXPECT_GT(families[trace::Family::Wm], 0);
      EXPECT_GT(families[trace::Family::Cta], 0);
      EXPECT_GT(families[trace::Family::End], 0);
      std::cout << (f32 ? "fp32 " : "bf16 ") << harness::pathName(path) << " emit: " << m
                << " tokens (EX " << families[trace::Family::Ex] << ", WM "
                << families[trace::Family::Wm] << ", CTA " << families[trace::Family::Cta]
                << ", END " << families[trace::Family::End] << "), " << wrong
                << " wrong, smallest top-vs-second gap " << minGap << "; fault flag at " << faults
                << " positions: " << faultBits.summary() << "\n";
    }
  }
}

}  // namespace
}  // namespace qgpu::circuit
