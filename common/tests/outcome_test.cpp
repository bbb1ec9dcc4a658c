// The outcome table (common/outcome.h): every ErrorKind's class, verdict and exit code, written out
// by hand from the contract in the header and README.md "Exit codes" — not computed by the code.
#include "common/outcome.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace qgpu {
namespace {

struct Row {
  ErrorKind kind;
  Outcome outcome;  // classify(kind)
  Verdict verdict;  // caseVerdict of a catalog case that ended in this error
  int exit;         // exitCode of the error in a command
};

// One row per ErrorKind, in declaration order.
const Row kTable[] = {
    {ErrorKind::Io, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::Usage, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::CompileFailed, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::ToolMissing, Outcome::Inconclusive, Verdict::Inconclusive, 4},
    {ErrorKind::PtxSyntax, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::PtxUnsupported, Outcome::Inconclusive, Verdict::Inconclusive, 4},
    {ErrorKind::PtxInvalid, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::OverLimit, Outcome::Inconclusive, Verdict::Inconclusive, 4},
    {ErrorKind::ProgramInvalid, Outcome::HarnessError, Verdict::HarnessError, 3},
    {ErrorKind::MachineFault, Outcome::Mismatch, Verdict::Mismatch, 1},
    {ErrorKind::StepLimit, Outcome::Inconclusive, Verdict::Inconclusive, 4},
    {ErrorKind::KernelFile, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::TraceInvalid, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::Checkpoint, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::Device, Outcome::Mismatch, Verdict::Mismatch, 1},
    {ErrorKind::NoDevice, Outcome::Inconclusive, Verdict::Inconclusive, 4},
    {ErrorKind::ReportInvalid, Outcome::BadInput, Verdict::HarnessError, 2},
    {ErrorKind::Internal, Outcome::HarnessError, Verdict::HarnessError, 3},
};

TEST(Outcome, TableCoversEveryErrorKindOnce) {
  std::set<int> seen;
  for (const Row& r : kTable) EXPECT_TRUE(seen.insert(static_cast<int>(r.kind)).second);
  // Kinds are numbered from 0 without gaps; the one past the last has no name.
  EXPECT_EQ(seen.size(), static_cast<size_t>(ErrorKind::Internal) + 1);
  EXPECT_STREQ(kindName(static_cast<ErrorKind>(static_cast<int>(ErrorKind::Internal) + 1)),
               "Unknown");
}

TEST(Outcome, ClassifiesEveryErrorKindAsDocumented) {
  for (const Row& r : kTable) {
    Diag d = makeDiag(r.kind, "x");
    EXPECT_EQ(classify(r.kind), r.outcome) << kindName(r.kind);
    EXPECT_EQ(classify(d), r.outcome) << kindName(r.kind);
    EXPECT_EQ(caseVerdict(d), r.verdict) << kindName(r.kind);
    EXPECT_EQ(exitCode(d), r.exit) << kindName(r.kind);
  }
}

TEST(Outcome, StepLimitIsInconclusiveNotMismatch) {
  EXPECT_EQ(exitCode(makeDiag(ErrorKind::StepLimit, "timeout")), 4);
}

TEST(Outcome, AnAllocatorThatDoesNotConvergeIsAHarnessError) {
  // host/lower reports non-convergence as Internal: it must never read as "inconclusive".
  EXPECT_EQ(caseVerdict(makeDiag(ErrorKind::Internal, "did not converge")), Verdict::HarnessError);
  EXPECT_EQ(exitCode(makeDiag(ErrorKind::Internal, "did not converge")), 3);
}

TEST(Outcome, MapsVerdictsToExitCodes) {
  EXPECT_EQ(exitCode(Verdict::Match), 0);
  EXPECT_EQ(exitCode(Verdict::Mismatch), 1);
  EXPECT_EQ(exitCode(Verdict::HarnessError), 3);
  EXPECT_EQ(exitCode(Verdict::Inconclusive), 4);
  EXPECT_EQ(exitCode(Outcome::BadInput), 2);
}

TEST(Outcome, NamesVerdicts) {
  EXPECT_STREQ(verdictName(Verdict::Match), "match");
  EXPECT_STREQ(verdictName(Verdict::Mismatch), "mismatch");
  EXPECT_STREQ(verdictName(Verdict::Inconclusive), "inconclusive");
  EXPECT_STREQ(verdictName(Verdict::HarnessError), "harness-error");
  EXPECT_STREQ(outcomeName(Outcome::BadInput), "bad-input");
}

TEST(Tally, NothingComparedIsInconclusiveNotAPass) {
  Tally t;
  EXPECT_EQ(exitCode(t), 4);
  t.add(Verdict::Inconclusive);
  EXPECT_EQ(exitCode(t), 4);
}

TEST(Tally, InconclusiveNextToAMatchIsCountedNotFailed) {
  Tally t;
  t.add(Verdict::Inconclusive);
  t.add(Verdict::Match);
  EXPECT_EQ(exitCode(t), 0);
  EXPECT_EQ(t.total(), 2);
  EXPECT_EQ(t[Verdict::Inconclusive], 1);
}

TEST(Tally, MismatchOutranksHarnessError) {
  Tally t;
  t.add(Verdict::Match);
  t.add(Verdict::HarnessError);
  EXPECT_EQ(exitCode(t), 3);
  t.add(Verdict::Mismatch);
  EXPECT_EQ(exitCode(t), 1);
}

}  // namespace
}  // namespace qgpu
