// Sharding (harness/report/shard.h): the --shard syntax, GoogleTest's variables, and the
// assignment of kernels to shards, worked by hand.
#include "harness/report/shard.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

namespace qgpu::report {
namespace {

Plan planOf(std::vector<std::string> kernels) {
  Plan p;
  p.kernels = std::move(kernels);
  p.compilers = {"clang"};
  return p;
}

TEST(ParseShard, AcceptsZeroBasedIOfN) {
  auto s = parseShard("2/4");
  ASSERT_TRUE(s.ok()) << s.error().str();
  EXPECT_EQ(s->index, 2u);
  EXPECT_EQ(s->total, 4u);
  EXPECT_TRUE(parseShard("0/1").ok());
}

TEST(ParseShard, RefusesWhatIsNotAShardOfARun) {
  for (const char* bad : {"4/4", "1/0", "x/4", "1", "-1/4", "1/4/2", " 1/4", "1/99999", ""}) {
    auto s = parseShard(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().kind, ErrorKind::Usage) << bad;
  }
}

// Sets or clears the three variables for one test, restoring none (each test sets what it needs).
void setShardEnv(const char* total, const char* index, const char* status = nullptr) {
  auto set = [](const char* name, const char* value) {
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  };
  set("GTEST_TOTAL_SHARDS", total);
  set("GTEST_SHARD_INDEX", index);
  set("GTEST_SHARD_STATUS_FILE", status);
}

TEST(ShardFromEnvironment, ReadsGoogleTestsVariables) {
  setShardEnv("3", "1");
  auto s = shardFromEnvironment();
  ASSERT_TRUE(s.ok()) << s.error().str();
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->index, 1u);
  EXPECT_EQ((*s)->total, 3u);
  setShardEnv(nullptr, nullptr);
  auto none = shardFromEnvironment();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(ShardFromEnvironment, RefusesHalfOrBadSettings) {
  for (auto [total, index] : std::vector<std::pair<const char*, const char*>>{
           {"3", nullptr}, {nullptr, "0"}, {"3", "3"}, {"0", "0"}, {"three", "0"}}) {
    setShardEnv(total, index);
    auto s = shardFromEnvironment();
    ASSERT_FALSE(s.ok()) << (total ? total : "-") << " " << (index ? index : "-");
    EXPECT_EQ(s.error().kind, ErrorKind::Usage);
  }
  setShardEnv(nullptr, nullptr);
}

TEST(ShardStatusFile, IsTouchedWhenSet) {
  std::filesystem::path file = std::filesystem::temp_directory_path() /
                               ("qgpu-shard-status-" + std::to_string(::getpid()));
  std::filesystem::remove(file);
  setShardEnv(nullptr, nullptr, file.c_str());
  ASSERT_TRUE(touchShardStatusFile().ok());
  EXPECT_TRUE(std::filesystem::exists(file));
  std::filesystem::remove(file);
  setShardEnv(nullptr, nullptr, (file / "no" / "such").c_str());
  auto failed = touchShardStatusFile();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind, ErrorKind::Io);
  setShardEnv(nullptr, nullptr);
}

TEST(AssignShards, RoundRobinWithoutDurations) {
  Plan p = planOf({"a", "b", "c", "d", "e"});
  EXPECT_EQ(assignShards(p, 2), (std::vector<uint32_t>{0, 1, 0, 1, 0}));
  EXPECT_EQ(assignShards(p, 1), (std::vector<uint32_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(shardJobs(assignShards(p, 2), 1), (std::vector<size_t>{1, 3}));
}

TEST(AssignShards, LongestProcessingTimeFirst) {
  // By hand: a5 -> s0 (5 | 0), b4 -> s1 (5 | 4), c3 -> s1 (5 | 7), d3 -> s0 (8 | 7),
  // e2 -> s1 (8 | 9).
  Plan p = planOf({"a", "b", "c", "d", "e"});
  std::map<std::string, double> d = {{"a", 5}, {"b", 4}, {"c", 3}, {"d", 3}, {"e", 2}};
  EXPECT_EQ(assignShards(p, 2, &d), (std::vector<uint32_t>{0, 1, 1, 0, 1}));
}

TEST(AssignShards, UnknownKernelsCountAsTheMean) {
  // Known: x 6, y 2 (mean 4); z unknown counts 4. x6 -> s0, z4 -> s1, y2 -> s1.
  Plan p = planOf({"x", "y", "z"});
  std::map<std::string, double> d = {{"x", 6}, {"y", 2}};
  EXPECT_EQ(assignShards(p, 2, &d), (std::vector<uint32_t>{0, 1, 1}));
}

TEST(AssignShards, MoreShardsThanKernelsLeavesSomeEmpty) {
  Plan p = planOf({"a", "b"});
  EXPECT_EQ(assignShards(p, 4), (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(shardJobs(assignShards(p, 4), 3).empty());
}

}  // namespace
}  // namespace qgpu::report
