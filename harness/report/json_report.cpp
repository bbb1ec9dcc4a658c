// qgpu/harness/report/json_report.cpp — the run report's JSON form (see json_report.h).
#include "harness/report/json_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include "common/file.h"
#include "common/text.h"
#include "harness/report/json_fields.h"

namespace qgpu::report {

using Json = nlohmann::json;
using harness::Backend;
using harness::CaseResult;

std::map<std::pair<Backend, std::string>, Tally> RunReport::tallies() const {
  std::map<std::pair<Backend, std::string>, Tally> t;
  for (const ReportCase& c : cases) t[{c.result.backend, c.result.compiler}].add(c.result.verdict);
  return t;
}

Tally RunReport::total() const {
  Tally t;
  for (const ReportCase& c : cases) t.add(c.result.verdict);
  return t;
}

RunReport makeRunReport(const Plan& plan, ShardSpec shard, std::vector<size_t> jobs,
                        const harness::CheckReport& check) {
  RunReport r;
  r.plan = plan;
  r.shard = shard;
  r.jobs = std::move(jobs);
  r.gpuDevice = check.gpuDevice;
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < plan.kernels.size(); ++k) index[plan.kernels[k]] = k;
  for (const CaseResult& c : check.cases) {
    auto it = index.find(c.kernel);
    r.cases.push_back({it == index.end() ? plan.kernels.size() : it->second, c});
  }
  return r;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

Json tallyJson(const std::map<std::pair<Backend, std::string>, Tally>& tallies) {
  Json out = Json::array();
  for (const auto& [key, t] : tallies)
    out.push_back({{"backend", harness::backendName(key.first)},
                   {"compiler", key.second},
                   {"match", t[Verdict::Match]},
                   {"mismatch", t[Verdict::Mismatch]},
                   {"inconclusive", t[Verdict::Inconclusive]},
                   {"harnessError", t[Verdict::HarnessError]}});
  return out;
}

}  // namespace

Json toJson(const Plan& p) {
  Json j = {{"catalog", {{"digest", p.catalogDigest}, {"kernels", p.catalogKernels}}},
            {"kernels", p.kernels},
            {"compilers", p.compilers},
            {"gpu", p.gpu},
            {"maxSteps", p.maxSteps},
            {"digest", p.digest()}};
  if (!p.models.empty()) j["models"] = p.models;  // absent: no model legs (reports before them)
  return j;
}

namespace {

// Every error reading a report is ReportInvalid at "file: path".
struct Reader : JsonFields {
  explicit Reader(std::string file) : JsonFields(ErrorKind::ReportInvalid, std::move(file)) {}
};

template <typename E, typename NameFn>
std::optional<E> byName(const std::string& name, int count, NameFn nameOf) {
  for (int i = 0; i < count; ++i)
    if (name == nameOf(static_cast<E>(i))) return static_cast<E>(i);
  return std::nullopt;
}


Expected<CaseResult> parseCase(const Reader& rd, const Json& item, const std::string& at) {
  if (!item.is_object()) return rd.error(at, "expected object");
  CaseResult c;
  QGPU_TRY(kernel, rd.str(item, at, "kernel"));
  QGPU_TRY(compiler, rd.str(item, at, "compiler"));
  QGPU_TRY(backend, rd.str(item, at, "backend"));
  QGPU_TRY(verdict, rd.str(item, at, "verdict"));
  c.kernel = kernel;
  c.compiler = compiler;
  auto b = byName<Backend>(backend, harness::kNumBackends, harness::backendName);
  if (!b) return rd.error(at + ".backend", "unknown backend '" + echo(backend) + "'");
  c.backend = *b;
  auto v = byName<Verdict>(verdict, kNumVerdicts, verdictName);
  if (!v) return rd.error(at + ".verdict", "unknown verdict '" + echo(verdict) + "'");
  c.verdict = *v;
  if (item.contains("errorKind")) {
    QGPU_TRY(kind, rd.str(item, at, "errorKind"));
    auto k = byName<ErrorKind>(kind, static_cast<int>(ErrorKind::Internal) + 1, kindName);
    if (!k) return rd.error(at + ".errorKind", "unknown error kind '" + echo(kind) + "'");
    c.error = *k;
  }
  struct {
    const char* key;
    std::string* out;
  } strings[] = {{"detail", &c.detail},           {"ptxDigest", &c.ptxDigest},
                 {"traceDigest", &c.traceDigest}, {"programDigest", &c.programDigest},
                 {"inputDigest", &c.inputDigest}};
  for (auto& s : strings) {
    QGPU_TRY(value, rd.str(item, at, s.key));
    *s.out = value;
  }
  QGPU_TRY(tokens, rd.u64(item, at, "traceTokens", UINT64_MAX));
  QGPU_TRY(steps, rd.u64(item, at, "steps", UINT64_MAX));
  QGPU_TRY(lanes, rd.u64(item, at, "laneInstrs", UINT64_MAX));
  QGPU_TRY(blocks, rd.u64(item, at, "machineBlocks", 1u << 30));
  QGPU_TRY(spills, rd.u64(item, at, "spillSlots", 1u << 30));
  QGPU_TRY(gridX, rd.u64(item, at, "gridX", 1u << 30));
  QGPU_TRY(blockX, rd.u64(item, at, "blockX", 1u << 30));
  QGPU_TRY(wall, rd.seconds(item, at, "wallSeconds"));
  QGPU_TRY(cpu, rd.seconds(item, at, "cpuSeconds"));
  c.traceTokens = tokens;
  c.steps = steps;
  c.laneInstrs = lanes;
  c.machineBlocks = static_cast<int>(blocks);
  c.spillSlots = static_cast<int>(spills);
  c.gridX = static_cast<uint32_t>(gridX);
  c.blockX = static_cast<uint32_t>(blockX);
  c.wallSeconds = wall;
  c.cpuSeconds = cpu;
  return c;
}

}  // namespace

Expected<Plan> parsePlan(const JsonFields& rd, const Json& doc) {
  QGPU_TRY(p, rd.field(doc, "", "plan", Json::value_t::object));
  Plan plan;
  QGPU_TRY(cat, rd.field(*p, "plan", "catalog", Json::value_t::object));
  QGPU_TRY(catDigest, rd.str(*cat, "plan.catalog", "digest"));
  QGPU_TRY(catKernels, rd.u64(*cat, "plan.catalog", "kernels", 1u << 20));
  plan.catalogDigest = catDigest;
  plan.catalogKernels = static_cast<uint32_t>(catKernels);
  QGPU_TRY(kernels, rd.strings(*p, "plan", "kernels"));
  QGPU_TRY(compilers, rd.strings(*p, "plan", "compilers"));
  plan.kernels = std::move(kernels);
  plan.compilers = std::move(compilers);
  std::set<std::string> unique(plan.kernels.begin(), plan.kernels.end());
  if (unique.size() != plan.kernels.size()) return rd.error("plan.kernels", "a kernel twice");
  for (const std::string& c : plan.compilers)
    if (c != "clang" && c != "nvcc") return rd.error("plan.compilers", "unknown compiler '" + echo(c) + "'");
  QGPU_TRY(gpu, rd.boolean(*p, "plan", "gpu"));
  QGPU_TRY(maxSteps, rd.u64(*p, "plan", "maxSteps", UINT64_MAX));
  plan.gpu = gpu;
  plan.maxSteps = maxSteps;
  if (p->contains("models")) {
    QGPU_TRY(models, rd.strings(*p, "plan", "models"));
    plan.models = std::move(models);
    std::set<std::string> once(plan.models.begin(), plan.models.end());
    if (once.size() != plan.models.size()) return rd.error("plan.models", "a model leg twice");
    for (const std::string& m : plan.models)
      if (m != "fp32" && m != "bf16") return rd.error("plan.models", "unknown model leg '" + echo(m) + "'");
  }
  QGPU_TRY(digest, rd.str(*p, "plan", "digest"));
  if (digest != plan.digest())
    return rd.error("plan.digest", "'" + echo(digest) + "' is not the digest of the plan's fields (" +
                                       plan.digest() + "): the plan was edited");
  return plan;
}

Json toJson(const RunReport& r) {
  Json cases = Json::array();
  for (const ReportCase& rc : r.cases) {
    const CaseResult& c = rc.result;
    Json j = harness::toJson(c);  // the version-1 keys
    j["job"] = rc.job;
    j["programDigest"] = c.programDigest;
    j["inputDigest"] = c.inputDigest;
    j["gridX"] = c.gridX;
    j["blockX"] = c.blockX;
    j["wallSeconds"] = c.wallSeconds;
    j["cpuSeconds"] = c.cpuSeconds;
    cases.push_back(std::move(j));
  }
  return {{"magic", kReportMagic},
          {"version", kReportVersion},
          {"partial", r.partial},
          {"provenance", toJson(r.provenance)},
          {"plan", toJson(r.plan)},
          {"shard", {{"index", r.shard.index}, {"total", r.shard.total}}},
          {"jobs", r.jobs},
          {"startedAt", r.startedAt},
          {"finishedAt", r.finishedAt},
          {"wallSeconds", r.wallSeconds},
          {"gpu", r.gpuDevice},
          {"tallies", tallyJson(r.tallies())},
          {"cases", cases}};
}

Expected<RunReport> parseReport(const Json& doc, const std::string& file) {
  Reader rd(file);
  if (!doc.is_object()) return rd.error("", "not a qgpu check report (not a JSON object)");
  if (!doc.contains("magic") || !doc["magic"].is_string() || doc["magic"] != kReportMagic)
    return rd.error("magic", std::string("not a qgpu check report (no \"magic\": \"") +
                                 kReportMagic + "\"): a foreign file");
  QGPU_TRY(version, rd.u64(doc, "", "version", UINT32_MAX));
  if (version != static_cast<uint64_t>(kReportVersion))
    return rd.error("version", "schema version " + std::to_string(version) + "; this qgpu reads " +
                                   std::to_string(kReportVersion) +
                                   " (rerun `qgpu check --report` with this qgpu)");
  RunReport r;
  QGPU_TRY(partial, rd.boolean(doc, "", "partial"));
  r.partial = partial;
  QGPU_TRY(prov, rd.field(doc, "", "provenance", Json::value_t::object));
  QGPU_TRY(commit, rd.str(*prov, "provenance", "commit"));
  QGPU_TRY(dirty, rd.str(*prov, "provenance", "dirty"));
  QGPU_TRY(host, rd.str(*prov, "provenance", "host"));
  r.provenance.commit = commit;
  r.provenance.dirty = dirty;
  r.provenance.host = host;
  QGPU_TRY(tools, rd.field(*prov, "provenance", "tools", Json::value_t::object));
  for (const auto& [name, value] : tools->items()) {
    if (!value.is_string()) return rd.error("provenance.tools." + echo(name), "expected string");
    r.provenance.tools[name] = value.get<std::string>();
  }
  for (const char* key : {"gpu", "checkpoint"}) {
    if (!prov->contains(key)) return rd.error(std::string("provenance.") + key, "missing");
    const Json& v = (*prov)[key];
    if (!v.is_null() && !v.is_string())
      return rd.error(std::string("provenance.") + key, "expected string or null");
    (std::string(key) == "gpu" ? r.provenance.gpu : r.provenance.checkpoint) =
        v.is_null() ? "" : v.get<std::string>();
  }
  QGPU_TRY(plan, parsePlan(rd, doc));
  r.plan = std::move(plan);
  QGPU_TRY(shard, rd.field(doc, "", "shard", Json::value_t::object));
  QGPU_TRY(total, rd.u64(*shard, "shard", "total", 1u << 16));
  QGPU_TRY(index, rd.u64(*shard, "shard", "index", 1u << 16));
  if (total == 0 || index >= total)
    return rd.error("shard", "shard " + std::to_string(index) + " of " + std::to_string(total));
  r.shard = {static_cast<uint32_t>(index), static_cast<uint32_t>(total)};
  QGPU_TRY(jobs, rd.field(doc, "", "jobs", Json::value_t::array));
  for (size_t i = 0; i < jobs->size(); ++i) {
    const Json& j = (*jobs)[i];
    std::string at = "jobs[" + std::to_string(i) + "]";
    if (!j.is_number_unsigned() || j.get<uint64_t>() >= r.plan.kernels.size())
      return rd.error(at, "not the index of a plan kernel");
    size_t job = j.get<size_t>();
    if (!r.jobs.empty() && job <= r.jobs.back()) return rd.error(at, "jobs not ascending");
    r.jobs.push_back(job);
  }
  QGPU_TRY(started, rd.str(doc, "", "startedAt"));
  QGPU_TRY(finished, rd.str(doc, "", "finishedAt"));
  QGPU_TRY(wall, rd.seconds(doc, "", "wallSeconds"));
  QGPU_TRY(gpu, rd.str(doc, "", "gpu"));
  r.startedAt = started;
  r.finishedAt = finished;
  r.wallSeconds = wall;
  r.gpuDevice = gpu;

  QGPU_TRY(cases, rd.field(doc, "", "cases", Json::value_t::array));
  std::set<size_t> jobSet(r.jobs.begin(), r.jobs.end());
  std::set<std::string> compilers(r.plan.compilers.begin(), r.plan.compilers.end());
  std::set<std::tuple<size_t, std::string, Backend>> seen;
  std::map<size_t, size_t> perJob;
  for (size_t i = 0; i < cases->size(); ++i) {
    std::string at = "cases[" + std::to_string(i) + "]";
    QGPU_TRY(c, parseCase(rd, (*cases)[i], at));
    QGPU_TRY(job, rd.u64((*cases)[i], at, "job", UINT32_MAX));
    if (!jobSet.count(job)) return rd.error(at + ".job", "not one of this report's jobs");
    if (r.plan.kernels[job] != c.kernel)
      return rd.error(at + ".kernel", "'" + echo(c.kernel) + "' is not plan kernel " +
                                          std::to_string(job) + " ('" + r.plan.kernels[job] + "')");
    if (!compilers.count(c.compiler))
      return rd.error(at + ".compiler", "'" + echo(c.compiler) + "' is not in the plan");
    auto modelInPlan = [&](const char* dtype) {
      return std::find(r.plan.models.begin(), r.plan.models.end(), dtype) != r.plan.models.end();
    };
    bool legInPlan = c.backend == Backend::Interp || (c.backend == Backend::Gpu && r.plan.gpu) ||
                     (c.backend == Backend::ModelF32 && modelInPlan("fp32")) ||
                     (c.backend == Backend::ModelBf16 && modelInPlan("bf16"));
    if (!legInPlan)
      return rd.error(at + ".backend", std::string(harness::backendName(c.backend)) +
                                           " is not a leg of the plan");
    if (!seen.insert({job, c.compiler, c.backend}).second)
      return rd.error(at, "a second case " + c.kernel + " [" + c.compiler + ", " +
                              harness::backendName(c.backend) + "]");
    ++perJob[job];
    r.cases.push_back({job, std::move(c)});
  }
  if (!r.partial)
    for (size_t job : r.jobs)
      if (perJob[job] != r.plan.casesPerKernel())
        return rd.error("cases", "kernel " + r.plan.kernels[job] + " has " +
                                     std::to_string(perJob[job]) + " cases, the plan " +
                                     std::to_string(r.plan.casesPerKernel()) +
                                     " (and the report is not partial)");
  // The tallies are derived: a file whose counts disagree with its cases was edited.
  QGPU_TRY(tallies, rd.field(doc, "", "tallies", Json::value_t::array));
  if (*tallies != tallyJson(r.tallies()))
    return rd.error("tallies", "do not count the report's cases: the file was edited");
  return r;
}

Expected<RunReport> parseReportText(const std::string& text, const std::string& file) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return makeDiag(ErrorKind::ReportInvalid, "not JSON (corrupt or truncated report)",
                    SourceLoc{file, 0, 0});
  return parseReport(doc, file);
}

Expected<RunReport> readReport(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxReportBytes, "report"));
  return parseReportText(text, path);
}

}  // namespace qgpu::report
