// qgpu/circuit/tests/scheduler_spec_test.cpp — the torch-free checks of the scheduling stage
// (circuit/scheduler.h): its rule (warp choice without waiting bits, min-PC, mask) pinned by
// hand-worked cases and compared with the interpreter's own scheduling on random programs, its
// failing twins shown to disagree with the interpreter, and the gadget's refusals and costs.
// The numerics run through model/ in scheduler_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "circuit/scheduler.h"
#include "circuit/config.h"
#include "circuit/tests/scheduler_events.h"
#include "gen/program_gen.h"

namespace qgpu::circuit {
namespace {

using Live = std::array<bool, kSchedWarps>;

// ---- The rule, by hand (docs/machine.md §5) ----

TEST(SchedulerRule, TheCurrentWarpRunsOnUntilABarrierOrItsLastLane) {
  EXPECT_EQ(chooseWarp(1, false, Live{true, true, true, true}), 1);
  EXPECT_EQ(chooseWarp(3, false, Live{true, false, false, true}), 3);
}

TEST(SchedulerRule, ABarrierSwitchesToTheNextLiveWarpAbove) {
  EXPECT_EQ(chooseWarp(1, true, Live{true, true, true, true}), 2);
  EXPECT_EQ(chooseWarp(0, true, Live{true, false, false, true}), 3);  // warps 1, 2 exited
}

TEST(SchedulerRule, TheLastArrivalReleasesAndTheLowestLiveWarpRuns) {
  EXPECT_EQ(chooseWarp(3, true, Live{true, true, true, true}), 0);
  EXPECT_EQ(chooseWarp(2, true, Live{false, true, true, false}), 1);  // warp 0 exited
  EXPECT_EQ(chooseWarp(0, true, Live{true, false, false, false}), 0);  // a lone warp
}

TEST(SchedulerRule, AWarpThatLosesItsLastLaneReleasesTheWaitingOnesBelow) {
  // Warp 2 exits; warps 0 and 1 wait at a barrier (the rule's invariant), warp 3 never existed.
  EXPECT_EQ(chooseWarp(2, false, Live{true, true, false, false}), 0);
  EXPECT_EQ(chooseWarp(1, false, Live{false, false, false, true}), 3);
}

TEST(SchedulerRule, NoLiveWarpEndsTheCta) {
  EXPECT_EQ(chooseWarp(2, false, Live{false, false, false, false}), -1);
  EXPECT_EQ(chooseWarp(0, true, Live{false, false, false, false}), -1);
}

TEST(SchedulerRule, TheNoReleaseTwinEndsTheCtaInsteadOfReleasing) {
  EXPECT_EQ(chooseWarp(3, true, Live{true, true, true, true}, SchedulerTwin::NoRelease), -1);
  EXPECT_EQ(chooseWarp(1, true, Live{true, true, true, true}, SchedulerTwin::NoRelease), 2);
}

TEST(SchedulerRule, MinPcPicksTheLowestBlockOfTheLiveLanesAndTheirMask) {
  SchedView v;
  v.warp = 1;
  // warp 1: lanes at blocks 7, 3, 3, and an exited lane whose stale PC is 0
  v.pc = {0, 0, 0, 0, 7, 3, 3, 0};
  v.live = {true, true, true, true, true, true, true, false};
  const SchedChoice c = scheduleNext(v);
  EXPECT_EQ(c, (SchedChoice{false, 1, 3, 0b0110}));
  const SchedChoice twin = scheduleNext(v, SchedulerTwin::MaxPc);
  EXPECT_EQ(twin, (SchedChoice{false, 1, 7, 0b0001}));
}

// ---- The rule against the interpreter ----

// Random programs with barriers, divergence, early exits (br p ? exit : next), 1..16 threads and
// 1..3 CTAs, and barriers in divergent flow now and then (a divergent-barrier fault ends the run).
gen::Policy barrierPolicy() {
  gen::Policy p;
  p.wBarrier = 3;
  p.wEarlyExit = 2;
  p.divergentBarrierProb = 0.1;
  p.outOfRangeProb = 0;
  p.maxGrid = 3;
  return p;
}

struct Agreement {
  int64_t decisions = 0, wrong = 0, releases = 0, switches = 0, exits = 0, ctas = 0;
  int64_t faults = 0, barriersAhead = 0, faultWrong = 0;
  int runs = 0, oddBlockX = 0;
  std::string first;
};

// Mirrors the PC table from the interpreter's per-lane outcomes and asks the rule at every
// position where the interpreter decides.
Agreement agree(int cases, SchedulerTwin twin) {
  Agreement a;
  for (int seed = 0; seed < cases; ++seed) {
    auto c = gen::generateProgram(barrierPolicy(), static_cast<uint64_t>(seed));
    if (!c.ok()) continue;
    const testing::SchedRun run =
        testing::collectRun(c.value().program, c.value().launch, c.value().stepBound);
    if (!run.finished && !run.faulted) continue;
    ++a.runs;
    a.oddBlockX += c.value().launch.blockX % 4 != 0 ? 1 : 0;
    SchedView view;
    for (const testing::SchedPosition& pos : run.positions) {
      if (pos.reset) {
        ++a.ctas;
        for (int t = 0; t < kSchedThreads; ++t) {
          view.pc[static_cast<size_t>(t)] = 0;
          view.live[static_cast<size_t>(t)] = t < pos.blockX;
        }
        view.warp = 0;
        view.barrier = false;
      } else if (pos.term) {
        for (int l = 0; l < kSchedLanes; ++l) {
          if (!(pos.mask >> l & 1)) continue;
          const size_t t = static_cast<size_t>(pos.warp * kSchedLanes + l);
          const uint8_t nb = pos.nextBlock[static_cast<size_t>(l)];
          view.pc[t] = nb == machine::kExitTarget ? 0 : nb;
          if (nb == machine::kExitTarget) {
            view.live[t] = false;
            ++a.exits;
          }
        }
        view.warp = pos.warp;
        view.barrier = pos.barrier;
      } else {
        continue;  // the position after a terminator repeats its decision
      }
      const SchedChoice got = scheduleNext(view, twin);
      ++a.decisions;
      a.faults += pos.expectFault ? 1 : 0;
      a.barriersAhead += pos.nextBar ? 1 : 0;
      if (divergentBarrier(view, got, pos.nextBar) != pos.expectFault) ++a.faultWrong;
      if (pos.term && !pos.expect.done && pos.expect.warp != pos.warp) ++a.switches;
      if (pos.term && pos.barrier && !pos.expect.done && pos.expect.warp <= pos.warp) ++a.releases;
      if (!(got == pos.expect)) {
        ++a.wrong;
        if (a.first.empty())
          a.first = "seed " + std::to_string(seed) + ": expected done=" +
                    std::to_string(pos.expect.done) + " w" + std::to_string(pos.expect.warp) +
                    " b" + std::to_string(pos.expect.block) + " m" +
                    std::to_string(pos.expect.mask) + ", rule done=" + std::to_string(got.done) +
                    " w" + std::to_string(got.warp) + " b" + std::to_string(got.block) + " m" +
                    std::to_string(got.mask);
      }
    }
  }
  return a;
}

TEST(SchedulerRule, AgreesWithTheInterpreterOnRandomProgramsWithBarriersAndExits) {
  const Agreement a = agree(3000, SchedulerTwin::None);
  EXPECT_EQ(a.wrong, 0) << a.first;
  EXPECT_EQ(a.faultWrong, 0);
  EXPECT_GT(a.faults, 50);
  // What the corpus reached (so that the agreement is not vacuous).
  EXPECT_GT(a.runs, 2000);
  EXPECT_GT(a.decisions, 100000);
  EXPECT_GT(a.releases, 2500);
  EXPECT_GT(a.switches, 5000);
  EXPECT_GT(a.exits, 5000);
  EXPECT_GT(a.oddBlockX, 1000);
  EXPECT_GT(a.ctas, a.runs);
  std::cout << "rule vs interpreter: " << a.runs << " runs, " << a.ctas << " CTAs, "
            << a.decisions << " decisions (" << a.switches << " warp switches, " << a.releases
            << " barrier releases, " << a.exits << " lane exits), " << a.wrong << " wrong; "
            << a.barriersAhead << " steps ahead ending in bar, " << a.faults
            << " divergent-barrier faults, " << a.faultWrong << " fault decisions wrong\n";
}

TEST(SchedulerRule, EachTwinDisagreesWithTheInterpreter) {
  const Agreement maxPc = agree(100, SchedulerTwin::MaxPc);
  const Agreement noRelease = agree(100, SchedulerTwin::NoRelease);
  EXPECT_GT(maxPc.wrong, 0);
  EXPECT_GT(noRelease.wrong, 0);
  std::cout << "twins: max-PC " << maxPc.wrong << " of " << maxPc.decisions
            << " wrong, no release " << noRelease.wrong << " of " << noRelease.decisions << "\n";
}

// The test's positions (scheduler_events.h) against the interpreter's own trace: the tokens they
// say come next are exactly the EX / WM / CTA / END tokens of the run, in order.
TEST(SchedulerEvents, TheNextTokensAreTheStepHeadersCtaAndEndOfTheInterpretersTrace) {
  int runs = 0;
  for (int seed = 0; seed < 300; ++seed) {
    auto c = gen::generateProgram(barrierPolicy(), static_cast<uint64_t>(seed));
    ASSERT_TRUE(c.ok());
    const testing::SchedRun run =
        testing::collectRun(c.value().program, c.value().launch, c.value().stepBound);
    if (!run.finished && !run.faulted) continue;
    oracle::RunOptions opt;
    opt.maxSteps = c.value().stepBound;
    auto r = oracle::run(c.value().program, c.value().launch, opt);
    ASSERT_TRUE(r.ok());
    std::vector<trace::Token> want;
    for (trace::Token t : r.value().trace) {
      const trace::Family f = trace::familyOf(t);
      if (f == trace::Family::Ex || f == trace::Family::Wm || f == trace::Family::Cta ||
          f == trace::Family::End)
        want.push_back(t);
    }
    std::vector<trace::Token> got;
    for (const auto& p : run.positions) got.push_back(testing::nextToken(p));
    ASSERT_EQ(got, want) << "seed " << seed;
    ++runs;
  }
  EXPECT_GT(runs, 200);
}

// ---- The gadget: refusals and cost ----

struct Rig {
  CircuitWeights w;
  FieldAllocator alloc;
  SchedulerSpec spec;
  Rig(int heads, int layers)
      : w([&] {
          model::Qwen35Config c = linearConfig(384, layers, 512, 64);
          c.linearNumKeyHeads = c.linearNumValueHeads = heads;
          c.linearKeyHeadDim = 64;
          return c;
        }()),
        alloc(384) {
    spec.in = testing::takeTestInputs(alloc);
  }
};

TEST(SchedulerGadget, CostsWhatTheHeaderSays) {
  Rig r(16, 7);
  auto s = buildScheduler(r.w, r.alloc, r.spec);
  ASSERT_TRUE(s.ok()) << s.error().message;
  // By hand from the construction: L = per target bit 1 cancel + 5 detectors (24 bits), enable
  // 16 cancels + 1 constant + 2 per thread, exists a 5-bit lookup (32) + 16 cancels, isBar 3;
  // L+1 16 + 1 + 16; L+2 4 + 1 + 2 per warp; L+3 7 cancels + 128 patterns; L+4 per lane two
  // muxes of 4 inputs (5 + 20 and 1 + 4 with their cancels); L+5 12 + 1 + 2 per pair; L+6
  // 4 + 1 + 4 (mask), 5 cancels + 4 × 5 selects + 1 (b').
  const std::array<int, 8> expected = {24 * 6 + 16 + 1 + 32 + 32 + 16 + 3, 33, 13, 135,
                                       4 * (25 + 5), 12 + 1 + 24, 9 + 26, 0};
  EXPECT_EQ(s.value().units, expected);
  EXPECT_EQ(s.value().heads, 16);
  EXPECT_EQ(s.value().mlp.onMin, 128);
  EXPECT_EQ(s.value().mlp.offMax, -128);
  EXPECT_EQ(s.value().latch.keyOn, 128);
  EXPECT_TRUE(r.w.checkBf16Exact().ok());
}

TEST(SchedulerGadget, TheEmitLayerCostsWhatTheHeaderSays) {
  Rig r(16, 8);
  r.spec.emit = true;
  auto s = buildScheduler(r.w, r.alloc, r.spec);
  ASSERT_TRUE(s.ok()) << s.error().message;
  // By hand: the family dims (one per trace family) cancelled + 1 constant + 5 case detectors
  // (EX twice, WM, CTA, END); 6 index cancels, per EX case 5 selects + 1 constant detector, 64
  // WM patterns, 1 for CTA / END; the fault bit 1 cancel + 1 constant + a step pair.
  EXPECT_EQ(s.value().units[7], trace::kNumFamilies + 1 + 5 + 6 + 2 * 6 + 64 + 1 + 4);
  EXPECT_EQ(s.value().emit.family.dims, trace::kNumFamilies);
  EXPECT_EQ(s.value().emit.index.dims, tokenIndexBits());
  EXPECT_TRUE(r.w.checkBf16Exact().ok());
}

TEST(SchedulerGadget, RefusesAnInputFieldOfTheWrongWidth) {
  Rig r(16, 7);
  r.spec.in.taken.dims = 5;  // the exit bit is missing
  auto s = buildScheduler(r.w, r.alloc, r.spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::Usage);
  EXPECT_NE(s.error().message.find("'taken'"), std::string::npos) << s.error().message;
}

TEST(SchedulerGadget, RefusesAConfigWithoutSixteenHeadsOrSevenLayers) {
  Rig fewHeads(8, 7);
  auto a = buildScheduler(fewHeads.w, fewHeads.alloc, fewHeads.spec);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::Usage);
  Rig fewLayers(16, 6);
  auto b = buildScheduler(fewLayers.w, fewLayers.alloc, fewLayers.spec);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::Usage);
}

TEST(SchedulerGadget, RefusesAGainBelowTheExactnessThreshold) {
  Rig r(16, 7);
  r.spec.gain = 64;  // λG = 64 < 89 (rule R2)
  auto s = buildScheduler(r.w, r.alloc, r.spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::OverLimit);
}

}  // namespace
}  // namespace qgpu::circuit
