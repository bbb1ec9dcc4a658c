// qgpu/harness/report/shard.cpp — see shard.h.
#include "harness/report/shard.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "common/text.h"

namespace qgpu::report {

namespace {

std::optional<uint32_t> number(std::string_view text) {
  uint32_t value = 0;
  if (text.empty() || text.size() > 9) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Expected<ShardSpec> parseShard(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return makeDiag(ErrorKind::Usage, "--shard '" + echo(text) + "': " + why);
  };
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad("expected i/n (shard i of n, 0-based)");
  auto index = number(text.substr(0, slash));
  auto total = number(text.substr(slash + 1));
  if (!index || !total) return bad("expected i/n with i and n decimal numbers");
  if (*total < 1 || *total > kMaxShards)
    return bad("n must be 1.." + std::to_string(kMaxShards));
  if (*index >= *total) return bad("i must be 0.." + std::to_string(*total - 1) + " (0-based)");
  return ShardSpec{*index, *total};
}

Expected<std::optional<ShardSpec>> shardFromEnvironment() {
  const char* total = std::getenv("GTEST_TOTAL_SHARDS");
  const char* index = std::getenv("GTEST_SHARD_INDEX");
  if (!total && !index) return std::optional<ShardSpec>();
  if (!total || !index)
    return makeDiag(ErrorKind::Usage, std::string(total ? "GTEST_SHARD_INDEX" : "GTEST_TOTAL_SHARDS") +
                                          " is not set but " +
                                          (total ? "GTEST_TOTAL_SHARDS" : "GTEST_SHARD_INDEX") +
                                          " is: set both or neither");
  auto t = number(total);
  auto i = number(index);
  if (!t || *t < 1 || *t > kMaxShards)
    return makeDiag(ErrorKind::Usage, "GTEST_TOTAL_SHARDS='" + echo(total) + "' is not 1.." +
                                          std::to_string(kMaxShards));
  if (!i || *i >= *t)
    return makeDiag(ErrorKind::Usage, "GTEST_SHARD_INDEX='" + echo(index) + "' is not 0.." +
                                          std::to_string(*t - 1));
  return std::optional<ShardSpec>(ShardSpec{*i, *t});
}

Status touchShardStatusFile() {
  const char* path = std::getenv("GTEST_SHARD_STATUS_FILE");
  if (!path || !*path) return Ok{};
  int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return makeDiag(ErrorKind::Io, "cannot touch GTEST_SHARD_STATUS_FILE '" + echo(path) +
                                       "': " + std::strerror(errno));
  ::close(fd);
  return Ok{};
}

std::vector<uint32_t> assignShards(const Plan& plan, uint32_t shards,
                                   const std::map<std::string, double>* durations) {
  size_t n = plan.kernels.size();
  std::vector<uint32_t> shardOf(n, 0);
  if (shards <= 1) return shardOf;
  if (!durations) {
    for (size_t k = 0; k < n; ++k) shardOf[k] = static_cast<uint32_t>(k % shards);
    return shardOf;
  }
  double known = 0;
  size_t knownCount = 0;
  for (const std::string& k : plan.kernels) {
    auto it = durations->find(k);
    if (it != durations->end()) {
      known += it->second;
      ++knownCount;
    }
  }
  double fallback = knownCount ? known / double(knownCount) : 1.0;
  std::vector<double> cost(n);
  for (size_t k = 0; k < n; ++k) {
    auto it = durations->find(plan.kernels[k]);
    cost[k] = it != durations->end() ? it->second : fallback;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(shards, 0.0);
  for (size_t k : order) {
    uint32_t best = 0;
    for (uint32_t s = 1; s < shards; ++s)
      if (load[s] < load[best]) best = s;
    shardOf[k] = best;
    load[best] += cost[k];
  }
  return shardOf;
}

std::vector<size_t> shardJobs(const std::vector<uint32_t>& assignment, uint32_t shard) {
  std::vector<size_t> jobs;
  for (size_t k = 0; k < assignment.size(); ++k)
    if (assignment[k] == shard) jobs.push_back(k);
  return jobs;
}

std::map<std::string, double> durationsFromReport(const RunReport& report) {
  std::map<std::string, double> out;
  for (const ReportCase& c : report.cases) out[c.result.kernel] += c.result.wallSeconds;
  return out;
}

}  // namespace qgpu::report
