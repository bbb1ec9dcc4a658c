// qgpu/harness/tests/audit_test.cpp — `qgpu audit` (harness/audit.h): a recorded run, written by
// the same writers `check --out` uses (trace record, manifest, run report), audited untouched
// (every trace confirmed 1:1) and then as tampered copies: a run token, a manifest field, an
// input, a trace version, a missing or corrupt file. Each tamper has its untouched twin (the
// first test) so a broken audit cannot pass them by accident.
//
// The program is hand-built (oracle/tests/builder.h) so that its trace is hand-worked: one warp
// of 4 lanes runs `r1 = tid * 3; r2 = tid << 2; st.global [r2], r1; exit` (addresses are bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/digest.h"
#include "harness/audit.h"
#include "harness/check.h"
#include "harness/report/json_report.h"
#include "harness/report/manifest.h"
#include "oracle/interpreter.h"
#include "oracle/tests/builder.h"

namespace qgpu::audit {
namespace {

namespace fs = std::filesystem;
using namespace machine::build;
using Json = nlohmann::json;

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void writeText(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

machine::Program tripleProgram() {
  return machine::Program{
      "triple",
      {block({alu(machine::Op::Mul, 1, Tid(), I(3)), alu(machine::Op::Shl, 2, Tid(), I(2)),
              st(machine::Space::Global, R(2), R(1))},
             exitTerm())},
      0,
      0};
}

class AuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("qgpu_audit_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "traces");
    record(tripleProgram(), launch_, params_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Records one interpreter case of `program` as `check --out` does: trace record, manifest and
  // run report, each from the program that ran (the digests are the writer's, not the audit's).
  void record(const machine::Program& program, const machine::Launch& launch,
              const std::vector<uint32_t>& params) {
    auto run = oracle::run(program, launch);
    ASSERT_TRUE(run.ok()) << run.error().str();
    harness::CaseResult c;
    c.kernel = "triple";
    c.compiler = "clang";
    c.backend = harness::Backend::Interp;
    c.verdict = Verdict::Match;
    c.ptxDigest = digestString(fnv1a64("ptx"));
    c.traceDigest = digestString(trace::digest(run->trace));
    c.traceTokens = run->trace.size();
    c.steps = run->blockExecs;
    c.programDigest = harness::programDigest(program);
    c.inputDigest = harness::inputDigest(launch.global, params);
    c.gridX = launch.gridX;
    c.blockX = launch.blockX;
    report::RunReport r;
    r.plan.catalogDigest = digestString(fnv1a64("no catalog"));
    r.plan.catalogKernels = 1;
    r.plan.kernels = {"triple"};
    r.plan.compilers = {"clang"};
    r.plan.gpu = false;
    r.plan.maxSteps = 1000;
    r.jobs = {0};
    r.cases = {{0, c}};
    r.startedAt = r.finishedAt = "2026-12-01T00:00:00Z";
    TraceRecord rec = makeTraceRecord(c, program, launch, params, run->trace);
    promptTokens_ = rec.promptTokens;
    runTrace_ = run->trace;
    writeText(dir_ / "traces" / report::traceFileName("triple", "clang", c.backend),
              toJson(rec).dump());
    writeText(dir_ / "manifest.json", report::manifestJson(r, "qgpu check", 0, "traces").dump());
    writeText(dir_ / "report.json", report::toJson(r).dump());
  }

  fs::path tracePath() const { return dir_ / "traces" / "triple.clang.interp.trace.json"; }
  Json load(const fs::path& p) const { return Json::parse(readText(p)); }
  void store(const fs::path& p, const Json& j) const { writeText(p, j.dump()); }

  Expected<AuditReport> audit() const { return auditRun(dir_.string()); }

  fs::path dir_;
  machine::Launch launch_{1, 4, {}};
  std::vector<uint32_t> params_{7};
  uint64_t promptTokens_ = 0;
  std::vector<trace::Token> runTrace_;
};

// The run of the hand-built program, token by token (docs/trace.md): one step, one record per op
// but the mul's two (trace v6: NOP, then its regrec).
TEST_F(AuditTest, TheRecordedRunIsTheHandWorkedTrace) {
  std::vector<std::string> names;
  for (trace::Token t : runTrace_) names.push_back(trace::tokenName(t));
  // clang-format off
  std::vector<std::string> expected = {
      "EX(0)", "WM(w0,1111)",                      // block 0, warp 0, lanes 0-3
      "NOP",                                       // the mul's first record
      "WR(r1)", "T(0)", "T(3)", "T(6)", "T(9)",    // r1 = tid * 3
      "WR(r2)", "T(0)", "T(4)", "T(8)", "T(12)",   // r2 = tid << 2
      "MG(1111)", "T(0)", "T(0)", "T(1)", "T(3)",  // st: (word, value) per lane
      "T(2)", "T(6)", "T(3)", "T(9)", "END"};
  // clang-format on
  EXPECT_EQ(names, expected);
}

TEST_F(AuditTest, ConfirmsAnUntouchedRecordingOneToOne) {
  auto r = audit();
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(r->cases.size(), 1u);
  EXPECT_EQ(r->cases[0].verdict, Verdict::Match) << r->cases[0].detail;
  EXPECT_EQ(r->cases[0].runTokens, 23u);
  EXPECT_FALSE(r->cases[0].difference.has_value());
  EXPECT_TRUE(r->reportChecked);
  EXPECT_EQ(exitCode(r->total()), kExitOk);
}

// Token 6 of the run (lane 2's value of r1, 6) recorded as 7: the audit names the position,
// both tokens and what the token means.
TEST_F(AuditTest, DetectsATamperedRegisterValueToken) {
  Json rec = load(tracePath());
  rec["tokens"][promptTokens_ + 6] = trace::tok(trace::Family::T, 7);
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok()) << r.error().str();
  const CaseAudit& c = r->cases[0];
  EXPECT_EQ(c.verdict, Verdict::Mismatch);
  ASSERT_TRUE(c.difference.has_value());
  EXPECT_EQ(c.difference->runIndex, 6u);
  EXPECT_EQ(c.difference->index, promptTokens_ + 6);
  EXPECT_EQ(c.difference->expectedName, "T(6)");
  EXPECT_EQ(c.difference->actualName, "T(7)");
  EXPECT_EQ(c.difference->where,
            "step 0 (CTA 0, EX(0) WM(w0,1111)), op record 1 WR(r1): the value of lane 2");
  EXPECT_NE(c.detail.find("traceDigest: the manifest says"), std::string::npos) << c.detail;
  EXPECT_EQ(exitCode(r->total()), kExitMismatch);
}

// The store's tokens: lane 2's word index (run token 18) and the word's value (run token 19).
TEST_F(AuditTest, DecodesTamperedMemoryRecordTokens) {
  Json rec = load(tracePath());
  rec["tokens"][promptTokens_ + 18] = trace::tok(trace::Family::T, 5);
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->cases[0].difference.has_value());
  EXPECT_EQ(r->cases[0].difference->where,
            "step 0 (CTA 0, EX(0) WM(w0,1111)), op record 3 MG(1111): lane 2's global word index");

  rec = load(tracePath());
  rec["tokens"][promptTokens_ + 18] = trace::tok(trace::Family::T, 2);  // restored
  rec["tokens"][promptTokens_ + 19] = trace::tok(trace::Family::T, 5);
  store(tracePath(), rec);
  r = audit();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->cases[0].difference.has_value());
  EXPECT_EQ(r->cases[0].difference->where,
            "step 0 (CTA 0, EX(0) WM(w0,1111)), op record 3 MG(1111): the value of global word 2 "
            "after lane 2's access");
}

// Issue 9 item 7, "a swapped trace step": the two register records of the step (run tokens 3-7,
// r1 = tid * 3, and 8-12, r2 = tid << 2) recorded in the other order. Every token is still
// well-formed; the audit names the first position where the order differs.
TEST_F(AuditTest, DetectsASwappedPairOfOpRecords) {
  Json rec = load(tracePath());
  Json tokens = rec["tokens"];
  for (uint64_t i = 0; i < 5; ++i)
    std::swap(tokens[promptTokens_ + 3 + i], tokens[promptTokens_ + 8 + i]);
  rec["tokens"] = tokens;
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok()) << r.error().str();
  const CaseAudit& c = r->cases[0];
  EXPECT_EQ(c.verdict, Verdict::Mismatch);
  ASSERT_TRUE(c.difference.has_value());
  EXPECT_EQ(c.difference->runIndex, 3u);
  EXPECT_EQ(c.difference->expectedName, "WR(r1)");
  EXPECT_EQ(c.difference->actualName, "WR(r2)");
  EXPECT_EQ(exitCode(r->total()), kExitMismatch);
}

// Trace v4's step tick: a loop of 101 steps writes TICK(1) before its 101st EX; the tick
// recorded as EX(0) is named as the tick it should be.
TEST_F(AuditTest, NamesATamperedStepTick) {
  const machine::Program count{
      "triple",
      {block({alu(machine::Op::Add, 1, R(1), I(1)), cmp(machine::Op::SetLtU, 0, R(1), I(101))},
             br(0, 0, machine::kExitTarget))},
      0,
      0};
  record(count, launch_, params_);
  const auto tick = std::find(runTrace_.begin(), runTrace_.end(), trace::tick(1));
  ASSERT_NE(tick, runTrace_.end());
  const size_t at = static_cast<size_t>(tick - runTrace_.begin());
  ASSERT_TRUE(audit().ok());
  EXPECT_EQ(audit()->cases[0].verdict, Verdict::Match);  // the untouched twin
  Json rec = load(tracePath());
  rec["tokens"][promptTokens_ + at] = trace::ex(0);
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_TRUE(r->cases[0].difference.has_value());
  EXPECT_EQ(r->cases[0].difference->expectedName, "TICK(1)");
  EXPECT_EQ(r->cases[0].difference->where,
            "a step tick (TICK(1)) after 100 steps, before the next EX or LIMIT");
}

TEST_F(AuditTest, DetectsATruncatedRecordedRun) {
  Json rec = load(tracePath());
  rec["tokens"].erase(rec["tokens"].size() - 1);  // END removed
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->cases[0].difference.has_value());
  EXPECT_EQ(r->cases[0].difference->runIndex, 22u);
  EXPECT_EQ(r->cases[0].difference->expectedName, "END");
  EXPECT_EQ(r->cases[0].difference->actualName, "end of trace");
}

TEST_F(AuditTest, DetectsATamperedManifestDigest) {
  Json m = load(dir_ / "manifest.json");
  m["cases"][0]["programDigest"] = digestString(fnv1a64("another program"));
  store(dir_ / "manifest.json", m);
  auto r = audit();
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->cases[0].verdict, Verdict::Mismatch);
  EXPECT_FALSE(r->cases[0].difference.has_value());  // the replay itself agrees
  EXPECT_NE(r->cases[0].detail.find("programDigest: the manifest says " +
                                    digestString(fnv1a64("another program"))),
            std::string::npos)
      << r->cases[0].detail;
}

TEST_F(AuditTest, DetectsAManifestThatDisagreesWithTheRunReport) {
  Json m = load(dir_ / "manifest.json");
  m["cases"][0]["verdict"] = "mismatch";
  store(dir_ / "manifest.json", m);
  auto r = audit();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cases[0].verdict, Verdict::Mismatch);
  EXPECT_NE(r->cases[0].detail.find("verdict: the manifest says mismatch, the run report match"),
            std::string::npos)
      << r->cases[0].detail;
}

// An input word the program never reads: the replay agrees token for token, only the input
// digest (the initial memory is in the prompt) can tell.
TEST_F(AuditTest, DetectsATamperedInputWord) {
  machine::Launch tampered = launch_;
  tampered.global[100] = 42;
  Json manifest = load(dir_ / "manifest.json");
  Json report = load(dir_ / "report.json");
  record(tripleProgram(), tampered, params_);
  store(dir_ / "manifest.json", manifest);  // the run's own manifest and report, a new record
  store(dir_ / "report.json", report);
  auto r = audit();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cases[0].verdict, Verdict::Mismatch);
  EXPECT_FALSE(r->cases[0].difference.has_value());
  EXPECT_NE(r->cases[0].detail.find("inputDigest: the manifest says"), std::string::npos)
      << r->cases[0].detail;
}

TEST_F(AuditTest, DetectsATamperedParameterValue) {
  Json rec = load(tracePath());
  rec["params"][0] = 8;
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cases[0].verdict, Verdict::Mismatch);
  EXPECT_NE(r->cases[0].detail.find("inputDigest"), std::string::npos) << r->cases[0].detail;
}

TEST_F(AuditTest, RefusesATraceOfAnotherTraceVersion) {
  Json rec = load(tracePath());
  rec["traceVersion"] = trace::kTraceVersion - 1;
  store(tracePath(), rec);
  auto r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::TraceInvalid);
  EXPECT_NE(r.error().message.find(
                "recorded in trace version " + std::to_string(trace::kTraceVersion - 1) +
                "; this qgpu speaks trace version " + std::to_string(trace::kTraceVersion)),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().loc.file, tracePath().string());
}

TEST_F(AuditTest, ReportsAMissingTraceFileAsAFinding) {
  fs::remove(tracePath());
  auto r = audit();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cases[0].verdict, Verdict::Mismatch);
  EXPECT_NE(r->cases[0].detail.find("is missing"), std::string::npos);
}

TEST_F(AuditTest, RefusesACorruptForeignOrPartialManifest) {
  std::string good = readText(dir_ / "manifest.json");
  writeText(dir_ / "manifest.json", good.substr(0, good.size() / 2));
  auto r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);

  Json m = Json::parse(good);
  m["magic"] = "qgpu-check-report";
  store(dir_ / "manifest.json", m);
  r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);
  EXPECT_NE(r.error().message.find("a foreign file"), std::string::npos);

  m = Json::parse(good);
  m["partial"] = true;
  store(dir_ / "manifest.json", m);
  r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);

  m = Json::parse(good);
  m["plan"]["maxSteps"] = 999;  // the plan digest no longer matches
  store(dir_ / "manifest.json", m);
  r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);
  EXPECT_NE(r.error().message.find("plan.digest"), std::string::npos);
}

TEST_F(AuditTest, RefusesACorruptTraceRecord) {
  writeText(tracePath(), "{\"magic\": \"qgpu-trace-record\", \"version\": 1, \"tokens\": [");
  auto r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::TraceInvalid);

  Json rec = Json::parse(readText(dir_ / "manifest.json"));  // any other JSON object
  store(tracePath(), rec);
  r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::TraceInvalid);
}

TEST_F(AuditTest, AMissingManifestIsAnIoError) {
  fs::remove(dir_ / "manifest.json");
  auto r = audit();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
}

}  // namespace
}  // namespace qgpu::audit
