// The run report's JSON form (harness/report/json_report.h): a report survives its own text, and
// every way a report can be corrupt, foreign or edited is refused with ReportInvalid — each
// refusal next to its twin (the same document untouched) that parses.
#include "harness/report/json_report.h"

#include <gtest/gtest.h>

#include "harness/report/tests/report_fixture.h"

namespace qgpu::report {
namespace {

using testing::fakeReport;
using Json = nlohmann::json;

Json fullDoc() { return toJson(fakeReport({0, 1, 2, 3})); }

void expectRefused(const Json& doc, const std::string& inMessage) {
  auto r = parseReport(doc, "r.json");
  ASSERT_FALSE(r.ok()) << "accepted: " << inMessage;
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);
  EXPECT_NE(r.error().message.find(inMessage), std::string::npos) << r.error().str();
  EXPECT_EQ(r.error().loc.file, "r.json");
}

TEST(JsonReport, RoundTripsThroughItsText) {
  Json doc = fullDoc();
  auto back = parseReportText(doc.dump(), "r.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(toJson(*back), doc);
  EXPECT_EQ(back->cases.size(), 8u);
  EXPECT_EQ(back->total()[Verdict::Mismatch], 1);
  EXPECT_EQ(back->total()[Verdict::Inconclusive], 4);
  EXPECT_EQ(back->cases[3].result.error, ErrorKind::NoDevice);
}

TEST(JsonReport, KeepsTheVersionOneKeys) {
  // Scripts written against `check --report` version 1 read the same keys.
  Json doc = fullDoc();
  EXPECT_EQ(doc["magic"], "qgpu-check-report");
  EXPECT_EQ(doc["version"], 2);
  for (const char* key : {"gpu", "tallies", "cases"}) EXPECT_TRUE(doc.contains(key)) << key;
  for (const char* key : {"kernel", "compiler", "backend", "verdict", "detail", "ptxDigest",
                          "traceDigest", "traceTokens", "steps", "laneInstrs", "machineBlocks",
                          "spillSlots"})
    EXPECT_TRUE(doc["cases"][0].contains(key)) << key;
}

TEST(JsonReport, RefusesTextThatIsNotJson) {
  std::string text = fullDoc().dump();
  ASSERT_TRUE(parseReportText(text, "r.json").ok());
  auto r = parseReportText(text.substr(0, text.size() / 2), "r.json");  // truncated
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::ReportInvalid);
  EXPECT_NE(r.error().message.find("not JSON"), std::string::npos);
}

TEST(JsonReport, RefusesAForeignFile) {
  Json doc = fullDoc();
  doc["magic"] = "qgpu-gpu-recording";
  expectRefused(doc, "foreign");
  expectRefused(Json::array({1, 2}), "not a JSON object");
}

TEST(JsonReport, RefusesAnotherSchemaVersion) {
  Json doc = fullDoc();
  doc["version"] = 1;
  expectRefused(doc, "schema version 1; this qgpu reads 2");
}

TEST(JsonReport, RefusesEditedTallies) {
  Json doc = fullDoc();
  doc["tallies"][0]["match"] = doc["tallies"][0]["match"].get<int>() + 1;
  expectRefused(doc, "tallies");
}

TEST(JsonReport, RefusesAnEditedVerdictThatNoLongerMatchesTheTallies) {
  Json doc = fullDoc();
  ASSERT_EQ(doc["cases"][2]["verdict"], "mismatch");  // beta on the interpreter
  doc["cases"][2]["verdict"] = "match";
  expectRefused(doc, "tallies");
}

TEST(JsonReport, RefusesAnEditedPlan) {
  Json doc = fullDoc();
  doc["plan"]["maxSteps"] = 5;
  expectRefused(doc, "plan.digest");
}

// The model legs: a plan without them keeps the digest it always had (reports written before
// them still merge and audit) and its JSON has no "models"; with them the digest changes, the
// cases of each leg round-trip, and a model case whose leg the plan did not run, an unknown or a
// repeated leg, is refused.
TEST(JsonReport, ModelLegsArePartOfThePlan) {
  EXPECT_EQ(testing::fakePlan().digest(), "fnv1a64:d8e0cfefb2467797");  // the digest before model legs
  EXPECT_FALSE(fullDoc()["plan"].contains("models"));
  RunReport r = fakeReport({0, 1});
  r.plan.models = {"fp32", "bf16"};
  EXPECT_NE(r.plan.digest(), testing::fakePlan().digest());
  EXPECT_EQ(r.plan.casesPerKernel(), 4u);
  for (size_t job : {0, 1})
    for (harness::Backend leg : {harness::Backend::ModelF32, harness::Backend::ModelBf16})
      r.cases.push_back({job, testing::fakeCase(r.plan.kernels[job], "clang", leg, Verdict::Match)});
  Json doc = toJson(r);
  auto back = parseReport(doc, "r.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(toJson(*back), doc);
  EXPECT_EQ((back->tallies()[{harness::Backend::ModelBf16, "clang"}][Verdict::Match]), 2);
  Json edited = doc;
  edited["cases"][0]["backend"] = "model-fp32";  // alpha's interp case, now a second fp32 one
  expectRefused(edited, "a second case alpha [clang, model-fp32]");
  RunReport fp32Only = r;
  fp32Only.plan.models = {"fp32"};
  fp32Only.partial = true;
  expectRefused(toJson(fp32Only), "model-bf16 is not a leg of the plan");
  for (const char* bad : {"fp16", "fp32,fp32"}) {
    RunReport b = r;
    b.plan.models = std::string(bad) == "fp16" ? std::vector<std::string>{"fp16"}
                                               : std::vector<std::string>{"fp32", "fp32"};
    expectRefused(toJson(b), std::string(bad) == "fp16" ? "unknown model leg 'fp16'" : "a model leg twice");
  }
}

TEST(JsonReport, RefusesADuplicateCase) {
  Json doc = fullDoc();
  doc["cases"].push_back(doc["cases"][0]);
  expectRefused(doc, "a second case alpha [clang, interp]");
}

TEST(JsonReport, RefusesACaseOutsideItsJobs) {
  Json doc = toJson(fakeReport({0, 1}));
  ASSERT_TRUE(parseReport(doc, "r.json").ok());
  doc["cases"][0]["job"] = 3;
  expectRefused(doc, "not one of this report's jobs");
}

TEST(JsonReport, RefusesACompleteReportWithAMissingCase) {
  RunReport r = fakeReport({0, 1, 2, 3});
  r.cases.pop_back();  // delta's gpu case
  r.partial = true;    // a partial report may lack cases
  Json doc = toJson(r);
  ASSERT_TRUE(parseReport(doc, "r.json").ok());
  doc["partial"] = false;
  expectRefused(doc, "delta has 1 cases, the plan 2");
}

TEST(JsonReport, RefusesUnknownNames) {
  Json doc = fullDoc();
  doc["cases"][0]["verdict"] = "passed";
  expectRefused(doc, "unknown verdict 'passed'");
  doc = fullDoc();
  doc["cases"][0]["backend"] = "tpu";
  expectRefused(doc, "unknown backend 'tpu'");
  doc = fullDoc();
  doc["cases"][1]["errorKind"] = "Oops";
  expectRefused(doc, "unknown error kind 'Oops'");
}

TEST(JsonReport, RefusesMistypedAndMissingFields) {
  Json doc = fullDoc();
  doc["cases"][0]["traceTokens"] = "ten";
  expectRefused(doc, "cases[0].traceTokens: expected number");
  doc = fullDoc();
  doc["cases"][0]["wallSeconds"] = -1;
  expectRefused(doc, "not a duration");
  doc = fullDoc();
  doc.erase("provenance");
  expectRefused(doc, "provenance: missing");
}

}  // namespace
}  // namespace qgpu::report
