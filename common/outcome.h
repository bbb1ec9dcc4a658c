// qgpu/common/outcome.h — the one outcome model: verdicts, what an error means, and exit codes.
//
// Every leg (interpreter, live GPU, recorded GPU) and every `qgpu` subcommand asks this module;
// nothing else maps an ErrorKind to a verdict or a verdict to an exit code (STYLE.md §5).
//
// Verdicts (four, never two): Match, Mismatch, Inconclusive (could not be decided here), and
// HarnessError (qgpu or its environment failed). An error adds a fifth outcome, BadInput: the
// user's input is malformed and nothing was decided.
//
// What each error kind means — decided once, in `classify` (outcome.cpp), documented here and in
// README.md "Exit codes":
//   BadInput      Usage, Io, KernelFile, CompileFailed, PtxSyntax, PtxInvalid, TraceInvalid,
//                 Checkpoint, ReportInvalid — the input is malformed (a command line, a file, a
//                 kernel, PTX that ptxas would reject, a trace, a checkpoint, a run report).
//   Inconclusive  PtxUnsupported, OverLimit (the program or its launch does not fit the machine:
//                 registers, blocks, shared memory for spills × threads), StepLimit (a timeout),
//                 ToolMissing (clang-14 / nvcc / ptxas not installed), NoDevice — valid input
//                 whose case cannot be decided here.
//   Mismatch      MachineFault (the interpreter trapped where the reference finishes), Device (a
//                 driver call failed on a kernel: the GPU refused or faulted on what the
//                 interpreter ran) — the error is itself a finding. A driver failure is a
//                 mismatch live (`qgpu run -b gpu`, `qgpu check`) and when recorded
//                 (`qgpu gpu record/compare`) alike.
//   HarnessError  ProgramInvalid (lowering produced a program that does not verify), Internal
//                 (a bug in qgpu, e.g. register allocation that does not converge).
//
// Exit codes (the contract for scripts and CI; harness/cli/command.h re-exports them):
//   0 ok / every compared case matched, 1 a mismatch, 2 bad input or usage, 3 harness error,
//   4 inconclusive (nothing mismatched and nothing matched), 5 a benchmark regression (only
//   `qgpu bench report`, whose gate is no verdict of a case).
// A tally of many cases exits 1 if anything mismatched, else 3 if anything was a harness error,
// else 4 if nothing matched (only inconclusive cases, or none), else 0: inconclusive cases next to
// matches (no GPU here, a stale recording) are counted and printed, not failed.
#pragma once

#include <array>
#include <cstdint>

#include "common/diag.h"

namespace qgpu {

enum class Verdict : uint8_t {
  Match,         // the backend's result equals the reference
  Mismatch,      // it differs, or the run itself was a finding (fault, guard violation)
  Inconclusive,  // could not be decided: no device, tool missing, unsupported, over limit, timeout
  HarnessError,  // qgpu failed: a lowering bug, a self-check failure, a broken catalog kernel
};
inline constexpr int kNumVerdicts = 4;
const char* verdictName(Verdict v);  // "match", "mismatch", "inconclusive", "harness-error"

// What an outcome (a verdict, or an error before any verdict) means to the caller.
enum class Outcome : uint8_t {
  Match,         // Verdict::Match (never the class of an error)
  Mismatch,      // Verdict::Mismatch
  Inconclusive,  // Verdict::Inconclusive
  HarnessError,  // Verdict::HarnessError
  BadInput,      // malformed user input: nothing was decided
};
const char* outcomeName(Outcome o);  // verdictName for the four verdicts, "bad-input"

enum ExitCode : int {
  kExitOk = 0,            // the command succeeded / every compared case matched
  kExitMismatch = 1,      // at least one mismatch
  kExitUsage = 2,         // usage error or bad input (the message names it)
  kExitHarnessError = 3,  // a bug in qgpu, or an unexpected exception
  kExitInconclusive = 4,  // nothing mismatched, nothing matched: could not be decided here
  kExitRegression = 5,    // `qgpu bench report`: a benchmark regressed beyond its threshold and
                          // beyond run-to-run noise (harness/bench_report.h)
};

// The table above: what an error of this kind means.
Outcome classify(ErrorKind kind);
inline Outcome classify(const Diag& diag) { return classify(diag.kind); }

// The verdict of a case that ended in `diag`. The case's input is the harness's own (a catalog
// kernel, a recorded case), so bad input there is a harness error, not the user's.
Verdict caseVerdict(const Diag& diag);

constexpr Outcome toOutcome(Verdict v) { return static_cast<Outcome>(v); }

int exitCode(Outcome outcome);
inline int exitCode(Verdict v) { return exitCode(toOutcome(v)); }
inline int exitCode(const Diag& diag) { return exitCode(classify(diag)); }

// Counts per verdict.
struct Tally {
  std::array<int, kNumVerdicts> counts{};
  void add(Verdict v) { ++counts[static_cast<int>(v)]; }
  int operator[](Verdict v) const { return counts[static_cast<int>(v)]; }
  int total() const { return counts[0] + counts[1] + counts[2] + counts[3]; }
  Tally& operator+=(const Tally& o) {
    for (int i = 0; i < kNumVerdicts; ++i) counts[i] += o.counts[i];
    return *this;
  }
};

// The tally rule in the header comment.
int exitCode(const Tally& tally);

}  // namespace qgpu
