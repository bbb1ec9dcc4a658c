// Merging shard reports (harness/report/merge.h): shards of one run merge into the unsharded
// report but for the times; every set that is not one run cut into shards is refused.
#include "harness/report/merge.h"

#include <gtest/gtest.h>

#include "harness/report/tests/report_fixture.h"

namespace qgpu::report {
namespace {

using testing::fakeReport;

// The report without what legitimately differs between a sharded and an unsharded run.
nlohmann::json withoutTimes(const RunReport& r) {
  nlohmann::json j = toJson(r);
  for (const char* key : {"startedAt", "finishedAt", "wallSeconds", "provenance"}) j.erase(key);
  for (auto& c : j["cases"]) {
    c.erase("wallSeconds");
    c.erase("cpuSeconds");
  }
  return j;
}

std::vector<RunReport> twoShards() {
  return {fakeReport({0, 2}, {0, 2}), fakeReport({1, 3}, {1, 2})};
}

Diag refusal(const std::vector<RunReport>& reports) {
  auto m = mergeReports(reports, {"a.json", "b.json", "c.json"});
  EXPECT_FALSE(m.ok());
  return m.ok() ? Diag{} : m.error();
}

TEST(MergeReports, TwoShardsGiveTheUnshardedReport) {
  auto merged = mergeReports(twoShards(), {"a.json", "b.json"});
  ASSERT_TRUE(merged.ok()) << merged.error().str();
  EXPECT_EQ(withoutTimes(*merged), withoutTimes(fakeReport({0, 1, 2, 3})));
  EXPECT_EQ(merged->shard.total, 1u);
  EXPECT_EQ(merged->provenance.host, "host0, host1");
  EXPECT_EQ(merged->startedAt, "2026-12-01T09:00:00Z");  // the earliest
  EXPECT_DOUBLE_EQ(merged->wallSeconds, 2.5);            // the longest shard's
}

TEST(MergeReports, ShardsInAnyOrderGiveTheSameReport) {
  std::vector<RunReport> s = twoShards();
  std::swap(s[0], s[1]);
  auto merged = mergeReports(s, {"b.json", "a.json"});
  ASSERT_TRUE(merged.ok()) << merged.error().str();
  EXPECT_EQ(withoutTimes(*merged), withoutTimes(fakeReport({0, 1, 2, 3})));
}

TEST(MergeReports, RefusesDifferentCommits) {
  std::vector<RunReport> s = twoShards();
  s[1].provenance.commit = "0000000000000000000000000000000000000000";
  Diag d = refusal(s);
  EXPECT_EQ(d.kind, ErrorKind::ReportInvalid);
  EXPECT_NE(d.message.find("different commits"), std::string::npos) << d.str();
  EXPECT_EQ(d.loc.file, "b.json");
}

TEST(MergeReports, RefusesDifferentCatalogs) {
  std::vector<RunReport> s = twoShards();
  s[1].plan.catalogDigest = "fnv1a64:ffffffffffffffff";
  EXPECT_NE(refusal(s).message.find("different catalogs"), std::string::npos);
}

TEST(MergeReports, RefusesDifferentPlans) {
  std::vector<RunReport> s = twoShards();
  s[1].plan.maxSteps = 7;
  EXPECT_NE(refusal(s).message.find("different kernels, compilers, legs or step limit"),
            std::string::npos);
}

TEST(MergeReports, RefusesAPartialShard) {
  std::vector<RunReport> s = twoShards();
  s[1].partial = true;
  EXPECT_NE(refusal(s).message.find("partial"), std::string::npos);
}

TEST(MergeReports, RefusesAMissingShard) {
  Diag d = refusal({twoShards()[0]});
  EXPECT_NE(d.message.find("shard 1 of 2 is missing"), std::string::npos) << d.str();
}

TEST(MergeReports, RefusesTheSameShardTwice) {
  std::vector<RunReport> s = twoShards();
  EXPECT_NE(refusal({s[0], s[1], s[0]}).message.find("shard 0 twice"), std::string::npos);
}

TEST(MergeReports, RefusesOverlappingShards) {
  std::vector<RunReport> s = {fakeReport({0, 1, 2}, {0, 2}), fakeReport({2, 3}, {1, 2})};
  EXPECT_NE(refusal(s).message.find("kernel gamma is in two reports (overlap)"), std::string::npos);
}

TEST(MergeReports, RefusesAKernelInNoShard) {
  std::vector<RunReport> s = {fakeReport({0}, {0, 2}), fakeReport({1, 3}, {1, 2})};
  EXPECT_NE(refusal(s).message.find("kernel gamma is in no report"), std::string::npos);
}

TEST(MergeReports, RefusesDifferentShardCounts) {
  std::vector<RunReport> s = {fakeReport({0, 2}, {0, 2}), fakeReport({1, 3}, {1, 3})};
  EXPECT_NE(refusal(s).message.find("does not split the run"), std::string::npos);
}

}  // namespace
}  // namespace qgpu::report
