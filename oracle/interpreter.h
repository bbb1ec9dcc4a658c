// qgpu/oracle/interpreter.h — the reference interpreter: the executable definition of the machine.
//
// docs/machine.md is its prose twin; where they disagree, that is a bug in one of them. The
// interpreter knows nothing of the other legs (GPU runner, circuit, model): it runs a verified
// Program under a Launch and returns the final global memory and the run part of the token trace
// (oracle/trace.h). It has no shortcuts: every memory access is bounds-checked, every scheduling
// decision is the documented one, and the same inputs always give the same trace.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/diag.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::oracle {

// The most run tokens one step (one EXEC of a block) can write: EX and WM (2); the write-back of
// at most 15 registers, each WR and 4 lane values of at most 7 tokens (15 x 29 = 435); and the net
// memory changes, at most kMaxOpsPerBlock x kLanes = 64 distinct words (the interpreter's touched_
// set), the worst case 64 runs of one word, each STG/STS, a word address < 256 (2 tokens) and a
// value (7 tokens) (64 x 10 = 640). 2 + 435 + 640 = 1077, and a FAULT token for a step that traps.
inline constexpr uint64_t kMaxStepTokens = 1078;

// The largest step limit the CLI accepts (`--max-steps`, harness/cli/steps.h).
inline constexpr uint64_t kMaxRunSteps = 100'000'000;

struct RunOptions {
  uint64_t maxSteps = 1'000'000;  // block executions (EXEC events) before StepLimit
  bool recordTrace = true;        // false: no tokens are written (statistics and memory only)
  // With recordTrace, the run ends as StepLimit (LIMIT token) before a step that starts with the
  // trace at this many tokens or more, so that no run's trace holds more than
  // maxTraceTokens + kMaxStepTokens + 2 tokens (the step, a CTA token, and LIMIT or END) whatever
  // maxSteps is. The default, 32 Mi tokens, is 64 MiB of tokens (at most twice that allocated).
  uint64_t maxTraceTokens = uint64_t{1} << 25;
};

enum class RunStatus : uint8_t {
  Finished,   // every thread of every CTA exited
  Fault,      // the machine trapped (RunResult::fault says where)
  StepLimit,  // maxSteps block executions (or maxTraceTokens tokens) without finishing
};

struct RunResult {
  RunStatus status = RunStatus::Finished;
  // Set when status != Finished: kind MachineFault or StepLimit; the message names CTA, warp,
  // lane, block, op and address.
  Diag fault;
  std::array<uint32_t, machine::kGlobalWords> global{};  // final global memory
  std::vector<trace::Token> trace;  // the run part of the token trace (after RUN)
  uint64_t blockExecs = 0;          // EXEC events (steps)
  uint64_t laneInstrs = 0;          // ops executed x active lanes (guarded-off lanes included)
};

// Runs `program` under `launch`. Returns a Diag only if verify(program, launch) fails; faults and
// the step limit are results (RunStatus), not errors.
Expected<RunResult> run(const machine::Program& program, const machine::Launch& launch,
                        const RunOptions& options = {});

}  // namespace qgpu::oracle
