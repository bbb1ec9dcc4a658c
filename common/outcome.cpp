// qgpu/common/outcome.cpp — the outcome table (see outcome.h).
#include "common/outcome.h"

namespace qgpu {

const char* verdictName(Verdict v) { return outcomeName(toOutcome(v)); }

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::Match: return "match";
    case Outcome::Mismatch: return "mismatch";
    case Outcome::Inconclusive: return "inconclusive";
    case Outcome::HarnessError: return "harness-error";
    case Outcome::BadInput: return "bad-input";
  }
  return "?";
}

Outcome classify(ErrorKind kind) {
  // No default: a new ErrorKind must be placed here (-Wswitch under -Werror).
  switch (kind) {
    case ErrorKind::Usage:
    case ErrorKind::Io:
    case ErrorKind::KernelFile:
    case ErrorKind::CompileFailed:
    case ErrorKind::PtxSyntax:
    case ErrorKind::PtxInvalid:
    case ErrorKind::TraceInvalid:
    case ErrorKind::Checkpoint:
    case ErrorKind::ReportInvalid: return Outcome::BadInput;
    case ErrorKind::PtxUnsupported:
    case ErrorKind::OverLimit:
    case ErrorKind::StepLimit:
    case ErrorKind::ToolMissing:
    case ErrorKind::NoDevice: return Outcome::Inconclusive;
    case ErrorKind::MachineFault:
    case ErrorKind::Device: return Outcome::Mismatch;
    case ErrorKind::ProgramInvalid:
    case ErrorKind::Internal: return Outcome::HarnessError;
  }
  return Outcome::HarnessError;  // an out-of-range value: a bug
}

Verdict caseVerdict(const Diag& diag) {
  switch (classify(diag)) {
    case Outcome::Mismatch: return Verdict::Mismatch;
    case Outcome::Inconclusive: return Verdict::Inconclusive;
    case Outcome::Match:  // never the class of an error
    case Outcome::HarnessError:
    case Outcome::BadInput: return Verdict::HarnessError;
  }
  return Verdict::HarnessError;
}

int exitCode(Outcome outcome) {
  switch (outcome) {
    case Outcome::Match: return kExitOk;
    case Outcome::Mismatch: return kExitMismatch;
    case Outcome::Inconclusive: return kExitInconclusive;
    case Outcome::HarnessError: return kExitHarnessError;
    case Outcome::BadInput: return kExitUsage;
  }
  return kExitHarnessError;
}

int exitCode(const Tally& t) {
  if (t[Verdict::Mismatch] > 0) return kExitMismatch;
  if (t[Verdict::HarnessError] > 0) return kExitHarnessError;
  if (t[Verdict::Match] == 0) return kExitInconclusive;
  return kExitOk;
}

}  // namespace qgpu
