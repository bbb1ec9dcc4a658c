// qgpu/gpu/tests/recording_test.cpp — the recording format: writer, validating reader (every
// corruption has a test), digest, comparison verdicts and the tally's exit codes.
#include "gpu/recording.h"

#include <gtest/gtest.h>

#include "gpu/inputs.h"
#include "gpu/record.h"

namespace qgpu::gpu {
namespace {

Recording sampleRecording() {
  Recording r;
  r.provenance = {"NVIDIA H200", "9.0", "550.54.15", "12.4", "13.0", "2026-11-30T01:02:03Z",
                  "abc123", "gpu-host", "qgpu-gpu-record"};
  RecordedCase ok;
  ok.kernel = "dot";
  ok.compiler = "clang";
  ok.entry = "_Z3dotPiS_S_";
  ok.ptxDigest = ptxDigest("ptx of dot");
  ok.grid = 1;
  ok.block = 4;
  for (uint32_t i = 0; i < 126; ++i) ok.global.push_back(i * 0x01010101u);
  r.cases.push_back(ok);
  RecordedCase err = ok;
  err.compiler = "nvcc";
  err.status = CaseStatus::DeviceError;
  err.detail = "Device: cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX\nJIT error log:\n\"x\"";
  err.global.clear();
  r.cases.push_back(err);
  return r;
}

// Replaces the first occurrence of `from` in the sample's JSON.
std::string corrupt(const std::string& from, const std::string& to) {
  std::string text = writeRecordingJson(sampleRecording());
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string errorOf(const std::string& text) {
  auto r = parseRecordingJson(text, "rec.json");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
  EXPECT_EQ(r.error().loc.file, "rec.json");
  return r.error().message;
}

TEST(GpuRecording, DigestIsFnv1a64OfTheExactText) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(ptxDigest(""), "fnv1a64:cbf29ce484222325");
  EXPECT_EQ(ptxDigest("a"), "fnv1a64:af63dc4c8601ec8c");
  EXPECT_EQ(ptxDigest("foobar"), "fnv1a64:85944171f73967e8");
  EXPECT_NE(ptxDigest("ret;\n"), ptxDigest("ret; \n"));
}

TEST(GpuRecording, RoundTripsThroughJson) {
  Recording r = sampleRecording();
  auto back = parseRecordingJson(writeRecordingJson(r), "rec.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->provenance.gpu, "NVIDIA H200");
  EXPECT_EQ(back->provenance.date, "2026-11-30T01:02:03Z");
  ASSERT_EQ(back->cases.size(), 2u);
  EXPECT_EQ(back->cases[0].global, r.cases[0].global);
  EXPECT_EQ(back->cases[0].entry, "_Z3dotPiS_S_");
  EXPECT_EQ(back->cases[0].block, 4u);
  EXPECT_EQ(back->cases[1].status, CaseStatus::DeviceError);
  EXPECT_EQ(back->cases[1].detail, r.cases[1].detail);
  EXPECT_EQ(writeRecordingJson(*back), writeRecordingJson(r));
}

TEST(GpuRecording, WritesEightWordsPerLine) {
  std::string text = writeRecordingJson(sampleRecording());
  EXPECT_NE(text.find("\n        0, 16843009, 33686018, 50529027, 67372036, 84215045, 101058054, "
                      "117901063,\n"),
            std::string::npos);
}

TEST(GpuRecording, RejectsTruncatedJson) {
  std::string text = writeRecordingJson(sampleRecording());
  EXPECT_NE(errorOf(text.substr(0, text.size() / 2)).find("invalid JSON"), std::string::npos);
}

// The reader is nlohmann-json in strict mode plus our rules: every form of malformed JSON is an
// Io error that says "invalid JSON", before any field is looked at.
TEST(GpuRecording, RejectsWhatStrictJsonForbids) {
  for (const char* bad : {"{\"a\": 1,}", "[1, 2,]", "{\"a\": 1} x", "\"tab\there\"", "[01]",
                          "[1.]", "{'a': 1}", "// c\n{}", "[\"\\ud800\"]", "", "{\"a\" 1}", "[1 2]",
                          "nul", "[\"\xff\"]"}) {
    EXPECT_NE(errorOf(bad).find("invalid JSON"), std::string::npos) << bad;
  }
}

TEST(GpuRecording, RejectsMalformedJsonInsideARecording) {
  EXPECT_NE(errorOf(corrupt("\"tool\": \"qgpu-gpu-record\"\n", "\"tool\": \"qgpu-gpu-record\",\n"))
                .find("invalid JSON"),
            std::string::npos);  // trailing comma
  EXPECT_NE(errorOf(corrupt("\n        0,", "\n        00,")).find("invalid JSON"),
            std::string::npos);  // leading zero
  EXPECT_NE(errorOf(corrupt("\"entry\": \"", "\"entry\": \"\x01")).find("invalid JSON"),
            std::string::npos);  // control character in a string
  EXPECT_NE(errorOf(writeRecordingJson(sampleRecording()) + "// done\n").find("invalid JSON"),
            std::string::npos);  // comment after the value
}

TEST(GpuRecording, RejectsAKeyTwiceInOneObject) {
  std::string e = errorOf(corrupt("\"gpu\": \"NVIDIA H200\",",
                                  "\"gpu\": \"NVIDIA H200\", \"gpu\": \"NVIDIA H100\","));
  EXPECT_NE(e.find("invalid JSON: duplicate key \"gpu\""), std::string::npos) << e;
  // The same key in two different objects is fine.
  EXPECT_TRUE(parseRecordingJson(writeRecordingJson(sampleRecording()), "rec.json").ok());
}

TEST(GpuRecording, LimitsNesting) {
  // Unknown fields are ignored, so 60 levels inside a valid recording still read.
  auto ok = parseRecordingJson(
      corrupt("\"version\": 1,", "\"version\": 1, \"x\": " + std::string(60, '[') +
                                     std::string(60, ']') + ","),
      "rec.json");
  EXPECT_TRUE(ok.ok()) << ok.error().str();
  std::string e = errorOf(std::string(100000, '['));
  EXPECT_NE(e.find("nesting"), std::string::npos) << e;
}

TEST(GpuRecording, NamesLineAndColumnOfAJsonSyntaxError) {
  auto r = parseRecordingJson("{\n  \"a\": [1,\n  }", "f.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
  EXPECT_EQ(r.error().loc.file, "f.json");
  EXPECT_EQ(r.error().loc.line, 3u);
  EXPECT_EQ(r.error().loc.column, 3u);
}

TEST(GpuRecording, DecodesStringEscapes) {
  auto r = parseRecordingJson(
      corrupt("\"detail\": \"\"", "\"detail\": \"x\\ty\\u00e9\\ud83d\\ude00\""), "rec.json");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->cases[0].detail, "x\ty\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(GpuRecording, WritesEveryStringSoThatItReadsBack) {
  Recording rec = sampleRecording();
  rec.cases[1].detail = "a\"b\\c\nd\x01\x1f\x7f tab\there \xc3\xa9";
  rec.provenance.host = "gpu\\host";
  auto back = parseRecordingJson(writeRecordingJson(rec), "rec.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->cases[1].detail, rec.cases[1].detail);
  EXPECT_EQ(back->provenance.host, rec.provenance.host);
  // A driver log is not always UTF-8: the writer replaces such bytes instead of failing.
  rec.cases[1].detail = "bad \xff byte";
  back = parseRecordingJson(writeRecordingJson(rec), "rec.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->cases[1].detail, "bad \xef\xbf\xbd byte");
}

TEST(GpuRecording, RejectsWrongMagic) {
  EXPECT_NE(errorOf(corrupt("qgpu-gpu-recording", "qgpu-trace")).find("magic"), std::string::npos);
}

TEST(GpuRecording, RejectsWrongVersion) {
  EXPECT_NE(errorOf(corrupt("\"version\": 1", "\"version\": 2")).find("file has version 2"),
            std::string::npos);
}

TEST(GpuRecording, RejectsMissingField) {
  EXPECT_NE(errorOf(corrupt("\"gpu\": \"NVIDIA H200\",", "")).find("provenance.gpu: missing"),
            std::string::npos);
  EXPECT_NE(errorOf(corrupt("\"grid\": 1,", "")).find("cases[0].grid: missing"), std::string::npos);
}

TEST(GpuRecording, RejectsWrongType) {
  EXPECT_NE(errorOf(corrupt("\"grid\": 1", "\"grid\": \"1\"")).find("expected number, found string"),
            std::string::npos);
  EXPECT_NE(errorOf(corrupt("\"provenance\": {", "\"provenance\": [], \"x\": {")).find("provenance"),
            std::string::npos);
  EXPECT_NE(errorOf(corrupt("\n        0,", "\n        -1,")).find("cases[0].global[0]"),
            std::string::npos);
  EXPECT_NE(errorOf(corrupt("\"block\": 4", "\"block\": 4.5")).find("cases[0].block"),
            std::string::npos);
}

TEST(GpuRecording, RejectsMalformedDigestAndStatus) {
  std::string d = ptxDigest("ptx of dot");
  EXPECT_NE(errorOf(corrupt(d, "sha1:1234")).find("ptxDigest"), std::string::npos);
  EXPECT_NE(errorOf(corrupt("\"status\": \"ok\"", "\"status\": \"fine\"")).find("unknown status"),
            std::string::npos);
}

TEST(GpuRecording, RejectsAnImageThatContradictsTheStatus) {
  EXPECT_NE(errorOf(corrupt("\"status\": \"ok\"", "\"status\": \"device-error\"")).find("must have no image"),
            std::string::npos);
  EXPECT_NE(errorOf(corrupt("\"status\": \"device-error\"", "\"status\": \"ok\"")).find("needs the final image"),
            std::string::npos);
}

TEST(GpuRecording, RejectsTwoCasesForOneKernelAndCompiler) {
  EXPECT_NE(errorOf(corrupt("\"compiler\": \"nvcc\"", "\"compiler\": \"clang\"")).find("second case"),
            std::string::npos);
}

TEST(GpuRecording, ReadReportsAMissingFile) {
  auto r = readRecording("/nonexistent/recording.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::Io);
}

std::vector<uint32_t> image(uint32_t fill) { return std::vector<uint32_t>(126, fill); }

TEST(GpuCompare, MatchesEqualImages) {
  RecordedCase rc = sampleRecording().cases[0];
  CaseComparison c = compareCase(rc, rc.ptxDigest, rc.global);
  EXPECT_EQ(c.verdict, Verdict::Match);
}

TEST(GpuCompare, NamesTheFirstDifferingWord) {
  RecordedCase rc = sampleRecording().cases[0];
  std::vector<uint32_t> mine = rc.global;
  mine[5] += 1;
  mine[9] += 1;
  CaseComparison c = compareCase(rc, rc.ptxDigest, mine);
  EXPECT_EQ(c.verdict, Verdict::Mismatch);
  EXPECT_EQ(c.detail, "word 5 (byte 20): gpu 0x05050505 vs interpreter 0x05050506 (2 words differ)");
}

TEST(GpuCompare, ComparesMultisetOutputsWithoutOrder) {
  RecordedCase rc = sampleRecording().cases[0];
  std::vector<uint32_t> mine = rc.global;
  std::swap(mine[3], mine[4]);
  EXPECT_EQ(compareCase(rc, rc.ptxDigest, mine).verdict, Verdict::Mismatch);
  EXPECT_EQ(compareCase(rc, rc.ptxDigest, mine, {{3, 2}}).verdict, Verdict::Match);
  mine[4] = 77;
  CaseComparison c = compareCase(rc, rc.ptxDigest, mine, {{3, 2}});
  EXPECT_EQ(c.verdict, Verdict::Mismatch);
  EXPECT_NE(c.detail.find("words 3..4 (compared as a multiset) differ"), std::string::npos)
      << c.detail;
}

TEST(GpuCompare, ReportsAStaleRecordingWithoutComparing) {
  RecordedCase rc = sampleRecording().cases[0];
  CaseComparison c = compareCase(rc, ptxDigest("new ptx"), image(0));
  EXPECT_EQ(c.verdict, Verdict::Inconclusive);
  EXPECT_TRUE(c.stale);
  EXPECT_FALSE(compareCase(rc, rc.ptxDigest, image(0)).stale);  // the twin: same PTX, compared
  EXPECT_NE(c.detail.find(rc.ptxDigest), std::string::npos);
}

// A driver failure is a mismatch, as it is live (harness/check.cpp GpuSession::compare):
// common/outcome.h decides both.
TEST(GpuCompare, CountsGpuFindingsAndDriverErrorsAsMismatches) {
  RecordedCase rc = sampleRecording().cases[0];
  rc.status = CaseStatus::GuardViolation;
  EXPECT_EQ(compareCase(rc, rc.ptxDigest, rc.global).verdict, Verdict::Mismatch);
  rc.status = CaseStatus::Nondeterministic;
  EXPECT_EQ(compareCase(rc, rc.ptxDigest, rc.global).verdict, Verdict::Mismatch);
  RecordedCase err = sampleRecording().cases[1];
  EXPECT_EQ(compareCase(err, err.ptxDigest, image(0)).verdict, Verdict::Mismatch);
}

TEST(GpuCompare, CountsAnInterpreterFailureAsMismatch) {
  RecordedCase rc = sampleRecording().cases[0];
  Expected<std::vector<uint32_t>> failed = makeDiag(ErrorKind::MachineFault, "out of bounds");
  CaseComparison c = compareCase(rc, rc.ptxDigest, failed);
  EXPECT_EQ(c.verdict, Verdict::Mismatch);
  EXPECT_NE(c.detail.find("out of bounds"), std::string::npos);
}

TEST(GpuCompare, CountsAKernelTheHostRefusesAsInconclusive) {
  RecordedCase rc = sampleRecording().cases[0];
  Expected<std::vector<uint32_t>> refused = makeDiag(ErrorKind::PtxUnsupported, "vector operand");
  EXPECT_EQ(compareCase(rc, rc.ptxDigest, refused).verdict, Verdict::Inconclusive);
}

TEST(GpuCompareRecording, SeparatesMatchesMismatchesStaleAndUnrecordedCases) {
  Recording rec = sampleRecording();  // dot/clang ok, dot/nvcc device-error
  RecordedCase gone = rec.cases[0];
  gone.kernel = "removed";
  rec.cases.push_back(gone);
  RecordedCase changed = rec.cases[0];
  changed.kernel = "changed";
  rec.cases.push_back(changed);

  Inputs now;
  GpuCase dot;
  dot.kernel = "dot";
  dot.compiler = "clang";
  dot.digest = rec.cases[0].ptxDigest;
  now.cases.push_back(dot);
  GpuCase nv = dot;
  nv.compiler = "nvcc";
  now.cases.push_back(nv);
  GpuCase ch = dot;
  ch.kernel = "changed";
  ch.digest = ptxDigest("new PTX");
  now.cases.push_back(ch);
  GpuCase fresh = dot;
  fresh.kernel = "fresh";
  now.cases.push_back(fresh);

  int calls = 0;
  std::vector<uint32_t> recorded = rec.cases[0].global;
  RecordingReport r = compareRecording(rec, now, [&](const GpuCase& c) {
    ++calls;
    EXPECT_EQ(c.kernel, "dot");
    return Expected<std::vector<uint32_t>>(recorded);
  });
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].comparison.verdict, Verdict::Match);
  EXPECT_EQ(r.rows[1].comparison.verdict, Verdict::Mismatch);  // a device error
  EXPECT_EQ(r.rows[2].comparison.verdict, Verdict::Inconclusive);
  EXPECT_TRUE(r.rows[2].comparison.stale);
  EXPECT_EQ(r.rows[3].comparison.verdict, Verdict::Inconclusive);
  EXPECT_TRUE(r.rows[3].comparison.stale);
  EXPECT_FALSE(r.rows[1].comparison.stale);
  EXPECT_EQ(calls, 2);  // stale cases are not interpreted
  EXPECT_EQ(r.notRecorded, std::vector<std::string>{"fresh/clang"});
  EXPECT_EQ(r.stale, 2);
  EXPECT_EQ(summary(r.tally, r.stale),
            "1 match, 1 mismatch, 2 inconclusive (2 stale), 0 harness-error (of 4)");

  recorded[7] ^= 1;  // the failing twin: a different interpreter result is a mismatch
  RecordingReport bad = compareRecording(rec, now, [&](const GpuCase&) {
    return Expected<std::vector<uint32_t>>(recorded);
  });
  EXPECT_EQ(bad.rows[0].comparison.verdict, Verdict::Mismatch);
  EXPECT_NE(bad.rows[0].comparison.detail.find("word 7 (byte 28)"), std::string::npos);
}

// The exit codes of a tally are common/outcome.h's (tests/outcome_test.cpp); a recording's tally
// is that Tally, so a stale case next to a match is counted and printed, not failed.
TEST(GpuTally, UsesTheCommonExitCodes) {
  Tally t;
  EXPECT_EQ(exitCode(t), 4);  // nothing compared is not a pass
  t.add(Verdict::Match);
  EXPECT_EQ(exitCode(t), 0);
  t.add(Verdict::Inconclusive);  // stale
  EXPECT_EQ(exitCode(t), 0);
  t.add(Verdict::Mismatch);
  EXPECT_EQ(exitCode(t), 1);
  EXPECT_EQ(summary(t, 1), "1 match, 1 mismatch, 1 inconclusive (1 stale), 0 harness-error (of 3)");
}

}  // namespace
}  // namespace qgpu::gpu
