// qgpu/circuit/tests/scheduler_events.h — the scheduler's test inputs and expected outputs, taken
// from real interpreter runs (torch-free; scheduler_spec_test and scheduler_test share it).
//
// A run of oracle::Execution becomes a list of positions, as the circuit sees them:
//   - a reset position at every CTA start (the RUN token for CTA 0, the CTA token after it), and
//     the position after it (the EX token of the CTA's first step: no write);
//   - per step, its terminator position (the block's terminator kind and targets from the
//     program, the per-lane branch predicate read back from where the interpreter sent each active
//     lane), and, when another step follows, the next position (the same inputs, no write).
// The expected output of each position is the interpreter's next event: the next step's
// (warp, block, mask), or "done" when the CTA finished (CtaStart or Finished follows). Nothing
// here calls the circuit's rule (circuit/scheduler.h): the expectations are the interpreter's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "circuit/scheduler.h"
#include "oracle/interpreter.h"

namespace qgpu::circuit::testing {

struct SchedPosition {
  bool reset = false;  // a CTA start
  bool term = false;   // a terminator position (writes the PC table)
  int warp = 0;
  uint8_t mask = 0;
  SchedKind kind = SchedKind::Jump;
  int taken = 0, next = 0;  // 0..31, 32 = exit
  uint8_t pred = 0;
  int blockX = 1;
  bool lastCta = false;  // the launch's last CTA runs
  // The interpreter's own outcome of the step (terminator positions): each active lane's next PC
  // (machine::kExitTarget for an exit) and whether the warp now waits.
  std::array<uint8_t, kSchedLanes> nextBlock{};
  bool barrier = false;
  // Expected: the interpreter's next event (a step; also the step that faults at a divergent
  // barrier, before any of its ops).
  SchedChoice expect;
  bool nextBar = false;      // input: the next step's block ends in bar (the ROM's terminator)
  bool expectFault = false;  // the next step faults: a divergent barrier
};

struct SchedRun {
  std::vector<SchedPosition> positions;
  bool finished = false;  // the run ended with Finished
  bool faulted = false;   // the run ended with a divergent-barrier fault (its positions are valid)
  int steps = 0;
};

// The scheduler's input fields, as both scheduler tests lay them out: each a block of sign dims
// taken from `alloc` in this order (the emit layer's lastCta and nextBar included; a build
// without emit leaves them unread).
inline SchedulerInputs takeTestInputs(FieldAllocator& alloc) {
  SchedulerInputs in;
  in.ballast = alloc.take("ballast", 8).value();
  in.reset = alloc.take("reset", 1).value();
  in.term = alloc.take("term", 1).value();
  in.warp = alloc.take("warp", 2).value();
  in.mask = alloc.take("mask", 4).value();
  in.kind = alloc.take("kind", 2).value();
  in.taken = alloc.take("taken", 6).value();
  in.next = alloc.take("next", 6).value();
  in.pred = alloc.take("pred", 4).value();
  in.blockX = alloc.take("blockX", 5).value();
  in.lastCta = alloc.take("lastCta", 1).value();
  in.nextBar = alloc.take("nextBar", 1).value();
  return in;
}

inline int targetCode(uint8_t t) { return t == machine::kExitTarget ? 32 : t; }

// The token the trace has next at a position: EX(b') after a reset or a terminator (CTA or END
// when the CTA is done), WM(w', m') at the position after them (oracle/trace.h's constructors).
inline trace::Token nextToken(const SchedPosition& p) {
  if (p.expect.done) return trace::single(p.lastCta ? trace::Family::End : trace::Family::Cta);
  if (p.reset || p.term) return trace::ex(p.expect.block);
  return trace::wm(p.expect.warp, p.expect.mask);
}

inline SchedChoice choiceOf(const oracle::StepEvent& e) {
  SchedChoice c;
  if (e.kind == oracle::EventKind::Step || e.kind == oracle::EventKind::Fault) {
    c.warp = e.step.warp;
    c.block = e.step.block;
    c.mask = e.step.mask;
  } else {
    c.done = true;
  }
  return c;
}

// The positions of one run (at most `maxSteps` steps; a run that faults or does not finish is
// returned with finished = false and should be skipped).
inline SchedRun collectRun(const machine::Program& p, const machine::Launch& launch,
                           uint64_t maxSteps) {
  SchedRun run;
  oracle::RunOptions opt;
  opt.maxSteps = maxSteps;
  opt.recordTrace = false;
  auto started = oracle::Execution::start(p, launch, opt);
  if (!started.ok()) return run;
  oracle::Execution ex = std::move(started).value();
  SchedPosition reset;
  reset.reset = true;
  reset.blockX = static_cast<int>(launch.blockX);
  int cta = 0;
  // The expected outcome of a position from the interpreter's next event.
  auto expectFrom = [&](SchedPosition& pos, const oracle::StepEvent& next) {
    pos.expect = choiceOf(next);
    pos.nextBar = !pos.expect.done &&
                  p.blocks[static_cast<size_t>(pos.expect.block)].term.kind == machine::TermKind::Barrier;
    pos.expectFault = next.kind == oracle::EventKind::Fault && next.step.numOps == 0 &&
                      next.fault.message.find("divergent barrier") != std::string::npos;
  };
  auto pushReset = [&](const oracle::StepEvent& first) {
    SchedPosition r = reset;
    r.lastCta = cta + 1 == static_cast<int>(launch.gridX);
    expectFrom(r, first);
    run.positions.push_back(r);
    r.reset = false;  // the position after it: same inputs (warp 0, jmp), no write
    run.positions.push_back(r);
  };
  oracle::StepEvent e = ex.next();
  pushReset(e);
  while (e.kind == oracle::EventKind::Step) {
    ++run.steps;
    const machine::Terminator& t = p.blocks[e.step.block].term;
    SchedPosition pos;
    pos.term = true;
    pos.warp = e.step.warp;
    pos.mask = e.step.mask;
    pos.blockX = static_cast<int>(launch.blockX);
    pos.lastCta = cta + 1 == static_cast<int>(launch.gridX);
    pos.kind = t.kind == machine::TermKind::Jump     ? SchedKind::Jump
               : t.kind == machine::TermKind::Branch ? SchedKind::Branch
               : t.kind == machine::TermKind::Barrier ? SchedKind::Barrier
                                                       : SchedKind::Exit;
    pos.taken = targetCode(t.taken);
    pos.next = targetCode(t.next);
    for (int l = 0; l < kSchedLanes; ++l) {
      if (!(e.step.mask >> l & 1)) continue;
      pos.nextBlock[static_cast<size_t>(l)] = e.step.nextBlock[static_cast<size_t>(l)];
      if (t.kind == machine::TermKind::Branch && e.step.nextBlock[static_cast<size_t>(l)] == t.taken)
        pos.pred = static_cast<uint8_t>(pos.pred | (1u << l));
    }
    pos.barrier = e.step.barrier;
    e = ex.next();
    expectFrom(pos, e);
    run.positions.push_back(pos);
    if (e.kind == oracle::EventKind::Step || e.kind == oracle::EventKind::Fault) {
      SchedPosition after = pos;  // the next position: same inputs, no write
      after.term = false;
      run.positions.push_back(after);
    } else if (e.kind == oracle::EventKind::CtaStart) {
      ++cta;
      e = ex.next();
      pushReset(e);
    }
  }
  run.finished = e.kind == oracle::EventKind::Finished;
  run.faulted = e.kind == oracle::EventKind::Fault && !run.positions.empty() &&
                run.positions.back().expectFault;
  return run;
}

}  // namespace qgpu::circuit::testing
