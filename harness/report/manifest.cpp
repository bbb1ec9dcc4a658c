// qgpu/harness/report/manifest.cpp — see manifest.h.
#include "harness/report/manifest.h"

namespace qgpu::report {

using Json = nlohmann::json;

std::string traceFileName(const std::string& kernel, const std::string& compiler,
                          harness::Backend backend) {
  return kernel + "." + compiler + "." + harness::backendName(backend) + ".trace.json";
}

nlohmann::json manifestJson(const RunReport& r, const std::string& commandLine,
                            double cpuSeconds, const std::string& tracesDir) {
  Json cases = Json::array();
  for (const ReportCase& rc : r.cases) {
    const harness::CaseResult& c = rc.result;
    cases.push_back({{"kernel", c.kernel},
                     {"compiler", c.compiler},
                     {"backend", harness::backendName(c.backend)},
                     {"job", rc.job},
                     {"verdict", verdictName(c.verdict)},
                     {"ptxDigest", c.ptxDigest},
                     {"programDigest", c.programDigest},
                     {"launch", {{"gridX", c.gridX}, {"blockX", c.blockX}}},
                     {"inputDigest", c.inputDigest},
                     {"traceDigest", c.traceDigest},
                     {"traceTokens", c.traceTokens},
                     {"seeds", Json::object()},
                     {"wallSeconds", c.wallSeconds},
                     {"cpuSeconds", c.cpuSeconds}});
    if (!tracesDir.empty() && c.backend == harness::Backend::Interp && !c.traceDigest.empty())
      cases.back()["traceFile"] = tracesDir + "/" + traceFileName(c.kernel, c.compiler, c.backend);
  }
  return {{"magic", kManifestMagic},
          {"version", kManifestVersion},
          {"partial", r.partial},
          {"provenance", toJson(r.provenance)},
          {"commandLine", commandLine},
          {"plan", toJson(r.plan)},
          {"shard", {{"index", r.shard.index}, {"total", r.shard.total}}},
          {"jobs", r.jobs},
          {"startedAt", r.startedAt},
          {"finishedAt", r.finishedAt},
          {"wallSeconds", r.wallSeconds},
          {"cpuSeconds", cpuSeconds},
          {"cases", cases}};
}

}  // namespace qgpu::report
