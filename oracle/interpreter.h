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
#include <memory>
#include <string>
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

// ---- Stepping: the machine one step at a time ----
//
// A step is one EXEC: warp `warp` of CTA `cta` runs block `block` with the active lanes `mask`.
// Its effects are what the token trace encodes (docs/trace.md), as values: the circuit's tests
// compare machine state per step against these, and the trace is one consumer of them
// (appendTrace).

// A global or shared word whose value at the end of the step differs from its value before it.
struct WordChange {
  machine::Space space = machine::Space::Global;
  uint8_t word = 0;
  uint32_t value = 0;  // the new value
  bool operator==(const WordChange&) const = default;
};

struct StepEffects {
  uint32_t cta = 0;
  uint8_t warp = 0;
  uint8_t block = 0;
  uint8_t mask = 0;     // bit l = lane l active
  uint16_t commit = 0;  // the block's committed registers (bit r = register r)
  // regs[r][l]: the value register r holds after the step in active lane l (r in commit).
  std::array<std::array<uint32_t, machine::kLanes>, machine::kRegs> regs{};
  // Net memory changes, sorted: global before shared, words increasing.
  std::array<WordChange, machine::kMaxOpsPerBlock * machine::kLanes> changes{};
  uint8_t numChanges = 0;
  // Where each active lane goes next: a block index, or machine::kExitTarget when it exits.
  std::array<uint8_t, machine::kLanes> nextBlock{};
  bool barrier = false;  // the warp now waits at a barrier
};

enum class EventKind : uint8_t {
  CtaStart,   // CTA `cta` (> 0) starts: the previous one finished
  Step,       // one EXEC, `step` holds its effects
  Finished,   // every thread of every CTA exited (final)
  Fault,      // the machine trapped in the step `step` names (its effects are not applied; final)
  StepLimit,  // maxSteps steps without finishing (final)
};

struct StepEvent {
  EventKind kind = EventKind::Finished;
  StepEffects step;  // Step; Fault: cta, warp, block and mask of the faulting step
  Diag fault;        // Fault, StepLimit: kind MachineFault or StepLimit, with where and why
};

// One run of a verified program, advanced one event at a time. The effects are recorded only when
// `options.recordTrace` is set (otherwise `regs` and `changes` stay empty; the rest is filled).
class Execution {
 public:
  static Expected<Execution> start(const machine::Program& program, const machine::Launch& launch,
                                   const RunOptions& options = {});
  Execution(Execution&&) noexcept;
  Execution& operator=(Execution&&) noexcept;
  ~Execution();

  // The next event; after a final one (Finished, Fault, StepLimit) it returns that again.
  const StepEvent& next();
  // Ends the run as StepLimit before its next step, `reason` saying why (a bound of the caller's,
  // e.g. the trace's size). A pending CTA start or the end of the run is returned first.
  const StepEvent& stopAtLimit(const std::string& reason);
  bool done() const;

  const std::array<uint32_t, machine::kGlobalWords>& global() const;
  uint64_t blockExecs() const;
  uint64_t laneInstrs() const;

 private:
  class Machine;
  explicit Execution(std::unique_ptr<Machine> machine);
  std::unique_ptr<Machine> machine_;
};

// The trace tokens of one event (docs/trace.md): EX WM, the register write-backs and memory runs
// of a step; CTA; END; EX WM FAULT; LIMIT.
void appendTrace(const StepEvent& event, std::vector<trace::Token>& out);

// Runs `program` under `launch`. Returns a Diag only if verify(program, launch) fails; faults and
// the step limit are results (RunStatus), not errors.
Expected<RunResult> run(const machine::Program& program, const machine::Launch& launch,
                        const RunOptions& options = {});

}  // namespace qgpu::oracle
