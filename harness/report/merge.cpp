// qgpu/harness/report/merge.cpp — see merge.h.
#include "harness/report/merge.h"

#include <algorithm>
#include <map>
#include <set>

namespace qgpu::report {

namespace {

Diag refuse(const std::string& message, const std::string& file = "") {
  return makeDiag(ErrorKind::ReportInvalid, message, SourceLoc{file, 0, 0});
}

// Each distinct non-empty item once, in first-seen order, joined by `sep`.
std::string joinUnique(const std::vector<std::string>& items, const char* sep) {
  std::vector<std::string> seen;
  std::string out;
  for (const std::string& item : items) {
    if (item.empty() || std::find(seen.begin(), seen.end(), item) != seen.end()) continue;
    out += (seen.empty() ? "" : sep) + item;
    seen.push_back(item);
  }
  return out;
}

}  // namespace

Expected<RunReport> mergeReports(const std::vector<RunReport>& reports,
                                 const std::vector<std::string>& files) {
  if (reports.empty()) return refuse("no reports to merge");
  auto name = [&](size_t i) { return i < files.size() ? files[i] : "report " + std::to_string(i); };
  const RunReport& first = reports[0];
  std::string planDigest = first.plan.digest();
  std::map<uint32_t, size_t> shardSeen;    // shard index -> report
  std::map<size_t, size_t> kernelSeen;     // plan job -> report
  for (size_t i = 0; i < reports.size(); ++i) {
    const RunReport& r = reports[i];
    if (r.partial)
      return refuse("a partial report (its run did not finish): rerun that shard", name(i));
    if (r.provenance.commit != first.provenance.commit)
      return refuse("commit " + r.provenance.commit + " is not " + name(0) + "'s " +
                        first.provenance.commit + ": reports from different commits",
                    name(i));
    if (r.provenance.dirty != first.provenance.dirty)
      return refuse("dirty flag " + r.provenance.dirty + " is not " + name(0) + "'s " +
                        first.provenance.dirty + ": the trees differ",
                    name(i));
    if (r.plan.catalogDigest != first.plan.catalogDigest)
      return refuse("catalog " + r.plan.catalogDigest + " is not " + name(0) + "'s " +
                        first.plan.catalogDigest + ": reports from different catalogs",
                    name(i));
    if (r.plan.digest() != planDigest)
      return refuse("plan " + r.plan.digest() + " is not " + name(0) + "'s " + planDigest +
                        " (different kernels, compilers, legs or step limit)",
                    name(i));
    if (r.shard.total != first.shard.total)
      return refuse("shard " + std::to_string(r.shard.index) + "/" + std::to_string(r.shard.total) +
                        " does not split the run as " + name(0) + " (of " +
                        std::to_string(first.shard.total) + ")",
                    name(i));
    auto [s, fresh] = shardSeen.emplace(r.shard.index, i);
    if (!fresh)
      return refuse("shard " + std::to_string(r.shard.index) + " twice: " + name(s->second) +
                        " and " + name(i),
                    name(i));
    for (size_t job : r.jobs) {
      auto [k, kfresh] = kernelSeen.emplace(job, i);
      if (!kfresh)
        return refuse("kernel " + r.plan.kernels[job] + " is in two reports (overlap): " +
                          name(k->second) + " and " + name(i),
                      name(i));
    }
  }
  for (uint32_t s = 0; s < first.shard.total; ++s)
    if (!shardSeen.count(s))
      return refuse("shard " + std::to_string(s) + " of " + std::to_string(first.shard.total) +
                    " is missing");
  for (size_t k = 0; k < first.plan.kernels.size(); ++k)
    if (!kernelSeen.count(k))
      return refuse("kernel " + first.plan.kernels[k] + " is in no report (missing cases)");

  RunReport merged;
  merged.plan = first.plan;
  merged.provenance = first.provenance;
  std::vector<std::string> hosts, gpus, devices;
  for (size_t k = 0; k < first.plan.kernels.size(); ++k) merged.jobs.push_back(k);
  for (const RunReport& r : reports) {
    hosts.push_back(r.provenance.host);
    gpus.push_back(r.provenance.gpu);
    devices.push_back(r.gpuDevice);
    if (merged.startedAt.empty() || (!r.startedAt.empty() && r.startedAt < merged.startedAt))
      merged.startedAt = r.startedAt;
    merged.finishedAt = std::max(merged.finishedAt, r.finishedAt);
    merged.wallSeconds = std::max(merged.wallSeconds, r.wallSeconds);
    for (const ReportCase& c : r.cases) merged.cases.push_back(c);
  }
  merged.provenance.host = joinUnique(hosts, ", ");
  merged.provenance.gpu = joinUnique(gpus, "; ");
  merged.gpuDevice = joinUnique(devices, "; ");
  // Within a job the shard kept the run's order (compiler, then leg): a stable sort by job
  // restores the unsharded order.
  std::stable_sort(merged.cases.begin(), merged.cases.end(),
                   [](const ReportCase& a, const ReportCase& b) { return a.job < b.job; });
  return merged;
}

}  // namespace qgpu::report
