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

// The most run tokens one step (one EXEC of a block) can write (docs/trace.md, "What one op
// writes"): EX and WM (2); then the ops' records, at most kMaxOpsPerBlock = 16 of them (trace v5:
// machine::blockRecords; an atomic with a register destination writes two). The longest record
// is a memrec: MG/MS (1) and per executing lane (at most 4) a word index < 126 (2 tokens) and a
// value (at most 7 tokens): 1 + 4 x 9 = 37 (an atomic's pair, 37 + 29, is shorter per record).
// 2 + 16 x 37 = 594. A step that traps writes FAULT instead of the faulting op's record, so it
// stays below that.
inline constexpr uint64_t kMaxStepTokens = 594;

// The largest step limit the CLI accepts (`--max-steps`, harness/cli/steps.h).
inline constexpr uint64_t kMaxRunSteps = 100'000'000;

struct RunOptions {
  // Block executions (EXEC events) before StepLimit. The trace's step ticks keep their fixed
  // periods whatever this is (trace::kTickRatios) and LIMIT comes after exactly maxSteps steps;
  // a compiled model writes LIMIT only at trace::kModelStepLimit (the default), so a trace that
  // is compared with a model's must be run with that (docs/trace.md "Step ticks").
  uint64_t maxSteps = trace::kModelStepLimit;
  bool recordTrace = true;  // false: no tokens are written (statistics and memory only)
  // With recordTrace, the run ends as StepLimit (LIMIT token) before a step that starts with the
  // trace at this many tokens or more, so that no run's trace holds more than
  // maxTraceTokens + kMaxStepTokens + 2 + kTickLevels tokens (the step, a CTA token, the ticks
  // and LIMIT or END) whatever maxSteps is. The default, 32 Mi tokens, is 64 MiB of tokens (at
  // most twice that allocated).
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
// Its effects are given per op, as values: the circuit executes one op per forward pass and its
// tests compare machine state per op against these; the token trace is one consumer of them
// (appendTrace: one record per op, docs/trace.md).

// What one op of a step did. Every op of the block has one, in op order, also an op whose guard
// is false in every active lane (exec = 0).
struct OpEffects {
  uint8_t index = 0;  // the op's index in the block
  uint8_t exec = 0;   // executing lanes: active and guard-true (bit l = lane l)
  // The op writes register `reg` (its dst, 1..15; an op with dst r0 writes none): regs[l] is the
  // value `reg` holds after the op in every active lane l (guard-false lanes: their unchanged
  // value). Inactive lanes' entries are 0.
  bool writesReg = false;
  uint8_t reg = 0;
  std::array<uint32_t, machine::kLanes> regs{};
  // That register write is the op's second record (machine::recordsOf == 2: an atomic after its
  // memrec, or after a NOP when no lane executes; a multiply after a NOP).
  bool lateReg = false;
  // The op writes predicate `pred` (its dstPred): predBits = the lanes whose `pred` is true after
  // the op (inactive lanes 0).
  bool writesPred = false;
  uint8_t pred = machine::kNoPred;
  uint8_t predBits = 0;
  // The op accesses memory (ld/st/atom: `space`; ldl/stl: Shared, the spill slots): per executing
  // lane l, the word index words[l] (global: 0..125; shared incl. spill slots: docs/machine.md
  // §4) and values[l], the word's value after that lane's access (load: the value read; store:
  // the stored value; atomic: the value after that lane's update). Lanes outside `exec`: 0.
  machine::MemEffect mem = machine::MemEffect::None;
  machine::Space space = machine::Space::Global;
  std::array<uint8_t, machine::kLanes> words{};
  std::array<uint32_t, machine::kLanes> values{};
  bool operator==(const OpEffects&) const = default;
};

struct StepEffects {
  uint32_t cta = 0;
  uint8_t warp = 0;
  uint8_t block = 0;
  uint8_t mask = 0;  // bit l = lane l active
  // The ops executed, in order: all of the block's ops for a Step; for a Fault, the ops before the
  // faulting one (none for a divergent barrier, which faults before the block runs).
  std::array<OpEffects, machine::kMaxOpsPerBlock> ops{};
  uint8_t numOps = 0;
  // Where each active lane goes next: a block index, or machine::kExitTarget when it exits.
  std::array<uint8_t, machine::kLanes> nextBlock{};
  bool barrier = false;  // the warp now waits at a barrier
};

enum class EventKind : uint8_t {
  CtaStart,   // CTA `cta` (> 0) starts: the previous one finished
  Step,       // one EXEC, `step` holds its effects
  Finished,   // every thread of every CTA exited (final)
  Fault,      // the machine trapped in the step `step` names, at op step.numOps: the earlier ops'
              // effects stand, the faulting op has none (final)
  StepLimit,  // maxSteps steps without finishing (final)
};

struct StepEvent {
  EventKind kind = EventKind::Finished;
  // The steps executed before this event (for a Step or Fault: before its own; for StepLimit:
  // all of them). The trace writes the ticks due at this count before the step's EX or the LIMIT
  // (trace::ticksDue).
  uint64_t stepsBefore = 0;
  StepEffects step;  // Step; Fault: the faulting step, its ops before the faulting one
  Diag fault;        // Fault, StepLimit: kind MachineFault or StepLimit, with where and why
};

// One run of a verified program, advanced one event at a time. The per-op effects are recorded
// only when `options.recordTrace` is set (otherwise `numOps` is 0; the rest is filled).
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

// The trace tokens of one event (docs/trace.md): EX WM and one record per op of a step; CTA; END;
// EX WM, the records of the ops before the faulting one, FAULT; LIMIT. Before the EX of a step
// (also a faulting one) and before LIMIT: the ticks due at event.stepsBefore (TICK(1), TICK(2)).
void appendTrace(const StepEvent& event, std::vector<trace::Token>& out);

// Runs `program` under `launch`. Returns a Diag only if verify(program, launch) fails; faults and
// the step limit are results (RunStatus), not errors.
Expected<RunResult> run(const machine::Program& program, const machine::Launch& launch,
                        const RunOptions& options = {});

}  // namespace qgpu::oracle
