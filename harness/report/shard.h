// qgpu/harness/report/shard.h — splitting a plan across machines.
//
// `--shard i/n` (0-based i, as GTEST_SHARD_INDEX) or, without it, GoogleTest's variables
// GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX pick one shard; GTEST_SHARD_STATUS_FILE, when set,
// is touched whenever a shard is chosen from the variables (so a runner that asks "did you
// honour sharding?" as gtest's does gets yes). The unit is the kernel (plan.h).
//
// Assignment is deterministic: the same plan, shard count and durations give the same shards on
// every machine. Without durations kernel k goes to shard k mod n. With durations (seconds per
// kernel, from a previous report: `durationsFromReport`) it is greedy longest-processing-time:
// kernels by decreasing duration (ties by plan order), each to the least-loaded shard (ties: the
// lowest index); a kernel the previous report does not have counts as the mean of those it has
// (1 s when it has none).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"
#include "harness/report/json_report.h"
#include "harness/report/plan.h"

namespace qgpu::report {

inline constexpr uint32_t kMaxShards = 4096;

// "i/n" with 0 <= i < n <= kMaxShards; Usage error naming the text otherwise.
Expected<ShardSpec> parseShard(std::string_view text);

// The variables as gtest reads them: neither set -> nullopt (no sharding asked); one without the
// other, or a value that is not a number in range -> Usage naming the variable.
Expected<std::optional<ShardSpec>> shardFromEnvironment();

// Touches $GTEST_SHARD_STATUS_FILE when set (creates it, empty, if absent). Io on failure.
Status touchShardStatusFile();

// The shard of each plan kernel (size plan.kernels.size()).
std::vector<uint32_t> assignShards(const Plan& plan, uint32_t shards,
                                   const std::map<std::string, double>* durations = nullptr);

// The plan indices of `shard`'s kernels, ascending.
std::vector<size_t> shardJobs(const std::vector<uint32_t>& assignment, uint32_t shard);

// Seconds per kernel: the sum of its cases' wall times.
std::map<std::string, double> durationsFromReport(const RunReport& report);

}  // namespace qgpu::report
