// qgpu/harness/audit.cpp — see audit.h.
#include "harness/audit.h"

#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include "common/digest.h"
#include "common/file.h"
#include "common/text.h"
#include "harness/check.h"
#include "harness/report/json_fields.h"
#include "harness/report/json_report.h"
#include "harness/report/manifest.h"
#include "kernels/catalog.h"
#include "oracle/interpreter.h"

namespace qgpu::audit {

using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using Fields = report::JsonFields;

std::optional<harness::Backend> backendByName(const std::string& name) {
  for (int i = 0; i < harness::kNumBackends; ++i)
    if (name == harness::backendName(static_cast<harness::Backend>(i))) return static_cast<harness::Backend>(i);
  return std::nullopt;
}

// What the audit reads of a manifest.
struct ManifestCase {
  std::string kernel, compiler, verdict;
  harness::Backend backend = harness::Backend::Interp;
  std::string programDigest, inputDigest, traceDigest, traceFile;
  uint64_t gridX = 0, blockX = 0, traceTokens = 0;
};
struct Manifest {
  std::string commit;
  report::Plan plan;
  std::vector<ManifestCase> cases;
};

Expected<Manifest> parseManifest(const std::string& text, const std::string& file) {
  Fields rd(ErrorKind::ReportInvalid, file);
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return rd.error("", "not JSON (a corrupt or truncated manifest)");
  if (!doc.is_object()) return rd.error("", "not a JSON object: not a qgpu manifest");
  QGPU_TRY(magic, rd.str(doc, "", "magic"));
  if (magic != report::kManifestMagic)
    return rd.error("magic",
                    "'" + echo(magic) + "' is not " + report::kManifestMagic + ": a foreign file");
  QGPU_TRY(version, rd.u64(doc, "", "version", 1u << 20));
  if (version != uint64_t(report::kManifestVersion))
    return rd.error("version", "manifest version " + std::to_string(version) +
                                   "; this qgpu reads version " +
                                   std::to_string(report::kManifestVersion));
  QGPU_TRY(partial, rd.boolean(doc, "", "partial"));
  if (partial)
    return rd.error("partial", "the run did not finish (a partial manifest): nothing to audit");
  Manifest m;
  QGPU_TRY(prov, rd.field(doc, "", "provenance", Json::value_t::object));
  QGPU_TRY(commit, rd.str(*prov, "provenance", "commit"));
  m.commit = commit;
  QGPU_TRY(plan, report::parsePlan(rd, doc));
  m.plan = std::move(plan);
  QGPU_TRY(cases, rd.field(doc, "", "cases", Json::value_t::array));
  for (size_t i = 0; i < cases->size(); ++i) {
    const Json& item = (*cases)[i];
    std::string at = "cases[" + std::to_string(i) + "]";
    if (!item.is_object()) return rd.error(at, "expected object");
    ManifestCase c;
    QGPU_TRY(kernel, rd.str(item, at, "kernel"));
    QGPU_TRY(compiler, rd.str(item, at, "compiler"));
    QGPU_TRY(backend, rd.str(item, at, "backend"));
    QGPU_TRY(verdict, rd.str(item, at, "verdict"));
    auto b = backendByName(backend);
    if (!b) return rd.error(at + ".backend", "unknown backend '" + echo(backend) + "'");
    c.kernel = kernel;
    c.compiler = compiler;
    c.backend = *b;
    c.verdict = verdict;
    QGPU_TRY(program, rd.str(item, at, "programDigest"));
    QGPU_TRY(input, rd.str(item, at, "inputDigest"));
    QGPU_TRY(traceDigest, rd.str(item, at, "traceDigest"));
    QGPU_TRY(traceTokens, rd.u64(item, at, "traceTokens", UINT64_MAX));
    QGPU_TRY(launch, rd.field(item, at, "launch", Json::value_t::object));
    QGPU_TRY(gridX, rd.u64(*launch, at + ".launch", "gridX", UINT32_MAX));
    QGPU_TRY(blockX, rd.u64(*launch, at + ".launch", "blockX", UINT32_MAX));
    c.programDigest = program;
    c.inputDigest = input;
    c.traceDigest = traceDigest;
    c.traceTokens = traceTokens;
    c.gridX = gridX;
    c.blockX = blockX;
    if (item.contains("traceFile")) {
      QGPU_TRY(traceFile, rd.str(item, at, "traceFile"));
      if (traceFile.empty()) return rd.error(at + ".traceFile", "empty");
      c.traceFile = traceFile;
    }
    m.cases.push_back(std::move(c));
  }
  return m;
}

// The value of a completed C* T chunk sequence (trace.h: two's complement, most significant first).
struct ValueAccumulator {
  int64_t value = 0;
  bool started = false;
  void add(int chunk) {
    if (!started)
      value = chunk >= trace::kChunkValues / 2 ? chunk - trace::kChunkValues : chunk;
    else
      value = value * trace::kChunkValues + chunk;
    started = true;
  }
  uint32_t take() {
    uint32_t v = static_cast<uint32_t>(value);
    value = 0;
    started = false;
    return v;
  }
};

int nthLane(int mask, int n) {  // the n-th set bit of mask (lane order), -1 when none
  for (int lane = 0; lane < machine::kLanes; ++lane)
    if ((mask >> lane) & 1)
      if (n-- == 0) return lane;
  return -1;
}

// The decoded position of run token `at` in `run` (a well-formed run: the re-derived one). Walks
// the run grammar of docs/trace.md by token family only, so it never fails.
std::string describePosition(std::span<const trace::Token> run, size_t at) {
  using trace::Family;
  long step = -1, cta = 0, record = -1;
  trace::Token exTok = 0, wmTok = 0, head = 0;
  int mask = 0, values = 0;
  uint32_t lastValue = 0;
  ValueAccumulator acc;
  for (size_t k = 0; k <= at && k < run.size(); ++k) {
    trace::Token t = run[k];
    if (t >= trace::kVocabSize) return "token " + std::to_string(k) + " is outside the vocabulary";
    Family f = trace::familyOf(t);
    bool last = k == at;
    std::string stepText = "step " + std::to_string(step) + " (CTA " + std::to_string(cta) + ", " +
                           trace::tokenName(exTok) + " " + trace::tokenName(wmTok) + ")";
    switch (f) {
      case Family::Ex:
        ++step;
        exTok = t;
        record = -1;
        if (last)
          return "step " + std::to_string(step) + " (CTA " + std::to_string(cta) +
                 "): the block it executes";
        break;
      case Family::Wm:
        wmTok = t;
        mask = trace::indexOf(t) % trace::kLaneMasks + 1;
        if (last)
          return "step " + std::to_string(step) + " (CTA " + std::to_string(cta) + ", " +
                 trace::tokenName(exTok) + "): the warp and its active lanes";
        break;
      case Family::Cta:
        ++cta;
        if (last) return "the start of CTA " + std::to_string(cta);
        break;
      case Family::End:
      case Family::FaultTok:
      case Family::Limit:
        if (last) return "the end of the run, after " + stepText;
        break;
      case Family::Tick:
        if (last)
          return "a step tick (" + trace::tokenName(t) + ") after " + std::to_string(step + 1) +
                 " steps, before the next EX or LIMIT";
        break;
      case Family::Wr:
      case Family::Wu:
      case Family::Wp:
      case Family::Mg:
      case Family::Ms:
      case Family::Nop:
        ++record;
        head = t;
        values = 0;
        if (last)
          return stepText + ", op record " + std::to_string(record) + ": its kind (" +
                 trace::tokenName(t) + ")";
        break;
      case Family::C:
      case Family::T: {
        acc.add(trace::indexOf(t));
        if (last) {
          std::string where = stepText + ", op record " + std::to_string(record) + " " +
                              trace::tokenName(head) + ": ";
          Family hf = trace::familyOf(head);
          if (hf == Family::Wr)
            where += "the value of lane " + std::to_string(nthLane(mask, values));
          else if (hf == Family::Wu)
            where += "the value of every active lane";
          else if (hf == Family::Wp)
            where += "the predicate's lane bits";
          else if (hf == Family::Mg || hf == Family::Ms) {
            int lanes = trace::indexOf(head) + 1;
            std::string space = hf == Family::Mg ? "global" : "shared";
            int lane = nthLane(lanes, values / 2);
            where += values % 2 == 0
                         ? "lane " + std::to_string(lane) + "'s " + space + " word index"
                         : "the value of " + space + " word " + std::to_string(lastValue) +
                               " after lane " + std::to_string(lane) + "'s access";
          } else {
            where += "a value";
          }
          return where;
        }
        if (f == Family::T) {
          lastValue = acc.take();
          ++values;
        }
        break;
      }
      default:
        if (last) return "a prompt token inside the run";
        break;
    }
  }
  return "after the end of the run";
}

std::string tokenText(std::optional<trace::Token> t) {
  if (!t) return "end of trace";
  if (*t >= trace::kVocabSize) return "id " + std::to_string(*t) + " (not a qgpu token)";
  return trace::tokenName(*t);
}

}  // namespace

TraceRecord makeTraceRecord(const harness::CaseResult& c, const machine::Program& program,
                            const machine::Launch& launch, std::span<const uint32_t> params,
                            std::span<const trace::Token> run) {
  TraceRecord r;
  r.kernel = c.kernel;
  r.compiler = c.compiler;
  r.backend = c.backend;
  r.programName = program.name;
  r.params.assign(params.begin(), params.end());
  r.tokens = trace::encodePrompt(program, launch);
  r.promptTokens = r.tokens.size();
  r.tokens.insert(r.tokens.end(), run.begin(), run.end());
  return r;
}

Json toJson(const TraceRecord& r) {
  return {{"magic", kTraceRecordMagic},     {"version", kTraceRecordVersion},
          {"traceVersion", r.traceVersion}, {"kernel", r.kernel},
          {"compiler", r.compiler},         {"backend", harness::backendName(r.backend)},
          {"programName", r.programName},   {"params", r.params},
          {"promptTokens", r.promptTokens}, {"tokens", r.tokens}};
}

Expected<TraceRecord> parseTraceRecord(const std::string& text, const std::string& file,
                                       const std::string& commit) {
  Fields rd(ErrorKind::TraceInvalid, file);
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return rd.error("", "not JSON (a corrupt or truncated trace record)");
  if (!doc.is_object()) return rd.error("", "not a JSON object: not a qgpu trace record");
  QGPU_TRY(magic, rd.str(doc, "", "magic"));
  if (magic != kTraceRecordMagic)
    return rd.error("magic",
                    "'" + echo(magic) + "' is not " + kTraceRecordMagic + ": a foreign file");
  QGPU_TRY(version, rd.u64(doc, "", "version", 1u << 20));
  if (version != uint64_t(kTraceRecordVersion))
    return rd.error("version", "trace record version " + std::to_string(version) +
                                   "; this qgpu reads version " +
                                   std::to_string(kTraceRecordVersion));
  QGPU_TRY(traceVersion, rd.u64(doc, "", "traceVersion", 1u << 20));
  if (traceVersion != uint64_t(trace::kTraceVersion))
    return rd.error("traceVersion",
                    "recorded in trace version " + std::to_string(traceVersion) +
                        "; this qgpu speaks trace version " + std::to_string(trace::kTraceVersion) +
                        ": the token ids mean other things, so the trace cannot be re-derived here "
                        "(audit it with the qgpu of the run's commit " +
                        echo(commit) + ", or record the run again)");
  TraceRecord r;
  r.traceVersion = static_cast<int>(traceVersion);
  QGPU_TRY(kernel, rd.str(doc, "", "kernel"));
  QGPU_TRY(compiler, rd.str(doc, "", "compiler"));
  QGPU_TRY(backend, rd.str(doc, "", "backend"));
  QGPU_TRY(programName, rd.str(doc, "", "programName"));
  auto b = backendByName(backend);
  if (!b) return rd.error("backend", "unknown backend '" + echo(backend) + "'");
  r.kernel = kernel;
  r.compiler = compiler;
  r.backend = *b;
  r.programName = programName;
  QGPU_TRY(params, rd.field(doc, "", "params", Json::value_t::array));
  for (size_t i = 0; i < params->size(); ++i) {
    const Json& v = (*params)[i];
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)
      return rd.error("params[" + std::to_string(i) + "]", "not a 32-bit word");
    r.params.push_back(static_cast<uint32_t>(v.get<uint64_t>()));
  }
  QGPU_TRY(tokens, rd.field(doc, "", "tokens", Json::value_t::array));
  r.tokens.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Json& v = (*tokens)[i];
    if (!v.is_number_unsigned() || v.get<uint64_t>() >= trace::kVocabSize)
      return rd.error("tokens[" + std::to_string(i) + "]",
                      "not a token id (0.." + std::to_string(trace::kVocabSize - 1) + ")");
    r.tokens.push_back(static_cast<trace::Token>(v.get<uint64_t>()));
  }
  QGPU_TRY(promptTokens, rd.u64(doc, "", "promptTokens", r.tokens.size()));
  r.promptTokens = promptTokens;
  return r;
}

std::optional<TraceDifference> firstDifference(std::span<const trace::Token> expected,
                                               std::span<const trace::Token> actual,
                                               uint64_t promptTokens) {
  size_t n = std::min(expected.size(), actual.size());
  size_t i = 0;
  while (i < n && expected[i] == actual[i]) ++i;
  if (i == n && expected.size() == actual.size()) return std::nullopt;
  TraceDifference d;
  d.runIndex = i;
  d.index = promptTokens + i;
  if (i < expected.size()) d.expected = expected[i];
  if (i < actual.size()) d.actual = actual[i];
  d.expectedName = tokenText(d.expected);
  d.actualName = tokenText(d.actual);
  d.where = i < expected.size() ? describePosition(expected, i) : "after the end of the run";
  return d;
}

Tally AuditReport::total() const {
  Tally t;
  for (const CaseAudit& c : cases) t.add(c.verdict);
  return t;
}

namespace {

// Every check of one case with a trace record; the findings, empty when it holds.
std::vector<std::string> auditCase(const ManifestCase& mc, const TraceRecord& rec,
                                   const report::Plan& plan,
                                   const std::vector<kernels::KernelSpec>* catalog,
                                   CaseAudit& out) {
  std::vector<std::string> findings;
  auto differs = [&](const std::string& field, const std::string& manifest,
                     const std::string& record) {
    if (manifest != record)
      findings.push_back(field + ": the manifest says " + manifest + ", the trace record's is " +
                         record);
  };
  differs("kernel", mc.kernel, rec.kernel);
  differs("compiler", mc.compiler, rec.compiler);
  differs("backend", harness::backendName(mc.backend), harness::backendName(rec.backend));
  size_t consumed = 0;
  auto prompt = trace::decodePrompt(std::span(rec.tokens).first(rec.promptTokens), &consumed);
  if (!prompt.ok()) {
    findings.push_back("the recorded prompt does not decode: " + prompt.error().message);
    return findings;
  }
  if (consumed != rec.promptTokens) {
    findings.push_back("the recorded prompt ends at token " + std::to_string(consumed) +
                       ", the record says " + std::to_string(rec.promptTokens));
    return findings;
  }
  machine::Program program = prompt->program;
  program.name = rec.programName;
  const machine::Launch& launch = prompt->launch;
  std::span<const trace::Token> recorded = std::span(rec.tokens).subspan(rec.promptTokens);
  differs("programDigest", mc.programDigest, harness::programDigest(program));
  differs("inputDigest", mc.inputDigest, harness::inputDigest(launch.global, rec.params));
  differs("launch.gridX", std::to_string(mc.gridX), std::to_string(launch.gridX));
  differs("launch.blockX", std::to_string(mc.blockX), std::to_string(launch.blockX));
  differs("traceDigest", mc.traceDigest, digestString(trace::digest(recorded)));
  differs("traceTokens", std::to_string(mc.traceTokens), std::to_string(recorded.size()));
  if (catalog) {
    auto spec = std::find_if(catalog->begin(), catalog->end(),
                             [&](const kernels::KernelSpec& s) { return s.name == mc.kernel; });
    if (spec == catalog->end()) {
      findings.push_back("no kernel " + mc.kernel + " in the catalog the plan names");
    } else if (auto image = kernels::layout(*spec); !image.ok()) {
      findings.push_back("the catalog kernel's inputs do not lay out: " + image.error().message);
    } else {
      for (size_t w = 0; w < launch.global.size(); ++w)
        if (launch.global[w] != image->global[w]) {
          findings.push_back("input: global word " + std::to_string(w) + " is " +
                             std::to_string(launch.global[w]) + " in the record, " +
                             std::to_string(image->global[w]) + " in catalog kernel " + mc.kernel);
          break;
        }
      if (rec.params != image->params)
        findings.push_back("input: the parameter values differ from catalog kernel " + mc.kernel +
                           "'s");
    }
  }
  oracle::RunOptions options;
  options.maxSteps = plan.maxSteps;
  auto rerun = oracle::run(program, launch, options);
  if (!rerun.ok()) {
    findings.push_back("the interpreter refuses the recorded program: " + rerun.error().message);
    return findings;
  }
  out.runTokens = rerun->trace.size();
  out.difference = firstDifference(rerun->trace, recorded, rec.promptTokens);
  if (out.difference) {
    const TraceDifference& d = *out.difference;
    findings.insert(findings.begin(),
                    "the re-derived trace differs at token " + std::to_string(d.index) +
                        " (run token " + std::to_string(d.runIndex) + "): the interpreter writes " +
                        d.expectedName + ", the record has " + d.actualName + " — " + d.where);
  }
  return findings;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

Expected<AuditReport> auditRun(const std::string& run, const AuditOptions& options) {
  std::error_code ec;
  fs::path manifestPath =
      fs::is_directory(run, ec) ? fs::path(run) / "manifest.json" : fs::path(run);
  QGPU_TRY(text, readInputFile(manifestPath.string(), kMaxManifestBytes, "manifest"));
  QGPU_TRY(manifest, parseManifest(text, manifestPath.string()));
  AuditReport out;
  out.manifest = manifestPath.string();
  out.commit = manifest.commit;
  fs::path dir = manifestPath.parent_path();

  // The run report next to the manifest, when there is one: the same cases with the same evidence.
  std::map<std::tuple<std::string, std::string, harness::Backend>, harness::CaseResult> reported;
  fs::path reportPath = dir / "report.json";
  if (fs::exists(reportPath, ec)) {
    QGPU_TRY(rep, report::readReport(reportPath.string()));
    if (rep.plan.digest() != manifest.plan.digest())
      return makeDiag(ErrorKind::ReportInvalid,
                      "the report's plan (" + rep.plan.digest() + ") is not the manifest's (" +
                          manifest.plan.digest() + "): they are not of one run",
                      SourceLoc{reportPath.string(), 0, 0});
    for (const report::ReportCase& c : rep.cases)
      reported[{c.result.kernel, c.result.compiler, c.result.backend}] = c.result;
    out.reportChecked = true;
  }
  // The catalog, when it is the one the run was planned from.
  std::optional<std::vector<kernels::KernelSpec>> catalog;
  if (!options.catalogDir.empty()) {
    auto loaded = kernels::loadCatalog(options.catalogDir);
    if (loaded.ok() && report::catalogDigest(*loaded) == manifest.plan.catalogDigest)
      catalog = std::move(loaded).value();
  }
  out.catalogChecked = catalog.has_value();

  for (const ManifestCase& mc : manifest.cases) {
    CaseAudit ca;
    ca.kernel = mc.kernel;
    ca.compiler = mc.compiler;
    ca.backend = mc.backend;
    ca.traceFile = mc.traceFile;
    std::vector<std::string> findings;
    if (out.reportChecked) {
      auto it = reported.find({mc.kernel, mc.compiler, mc.backend});
      if (it == reported.end()) {
        findings.push_back("the run report has no such case");
      } else {
        const harness::CaseResult& r = it->second;
        auto same = [&](const char* field, const std::string& m, const std::string& rr) {
          if (m != rr)
            findings.push_back(std::string(field) + ": the manifest says " + m +
                               ", the run report " + rr);
        };
        same("verdict", mc.verdict, verdictName(r.verdict));
        same("programDigest", mc.programDigest, r.programDigest);
        same("inputDigest", mc.inputDigest, r.inputDigest);
        same("traceDigest", mc.traceDigest, r.traceDigest);
        same("traceTokens", std::to_string(mc.traceTokens), std::to_string(r.traceTokens));
      }
    }
    if (mc.traceFile.empty()) {
      if (findings.empty()) {
        ca.verdict = Verdict::Inconclusive;
        ca.detail = mc.backend == harness::Backend::Interp
                        ? "no trace recorded (the case's verdict: " + mc.verdict + ")"
                        : std::string("no trace recorded: the ") +
                              harness::backendName(mc.backend) + " leg writes none";
      } else {
        ca.verdict = Verdict::Mismatch;
        ca.detail = join(findings);
      }
      out.cases.push_back(std::move(ca));
      continue;
    }
    fs::path tracePath =
        fs::path(mc.traceFile).is_absolute() ? fs::path(mc.traceFile) : dir / mc.traceFile;
    if (!fs::exists(tracePath, ec)) {
      findings.push_back("the trace file " + echo(tracePath.string()) + " is missing");
    } else {
      QGPU_TRY(recText, readInputFile(tracePath.string(), kMaxTraceRecordBytes, "trace record"));
      QGPU_TRY(record, parseTraceRecord(recText, tracePath.string(), manifest.commit));
      std::vector<std::string> more =
          auditCase(mc, record, manifest.plan, catalog ? &*catalog : nullptr, ca);
      findings.insert(findings.end(), more.begin(), more.end());
    }
    ca.verdict = findings.empty() ? Verdict::Match : Verdict::Mismatch;
    ca.detail = join(findings);
    out.cases.push_back(std::move(ca));
  }
  return out;
}

std::string formatAudit(const AuditReport& r) {
  std::string out;
  Tally t = r.total();
  for (const CaseAudit& c : r.cases) {
    if (c.verdict == Verdict::Match) continue;
    out += std::string(verdictName(c.verdict)) + "  " + c.kernel + " [" + c.compiler + ", " +
           harness::backendName(c.backend) + "]: " + c.detail + "\n";
  }
  out += "audit of " + r.manifest + " (commit " + r.commit + ", trace version " +
         std::to_string(r.traceVersion) + "): " + std::to_string(t[Verdict::Match]) +
         " traces confirmed 1:1, " + std::to_string(t[Verdict::Mismatch]) + " differ, " +
         std::to_string(t[Verdict::Inconclusive]) + " without a trace; run report " +
         (r.reportChecked ? "compared" : "absent") + ", catalog inputs " +
         (r.catalogChecked ? "compared" : "not compared (another or no catalog)") + "\n";
  return out;
}

Json toJson(const AuditReport& r) {
  Json cases = Json::array();
  for (const CaseAudit& c : r.cases) {
    Json j = {{"kernel", c.kernel},
              {"compiler", c.compiler},
              {"backend", harness::backendName(c.backend)},
              {"verdict", verdictName(c.verdict)},
              {"detail", c.detail},
              {"traceFile", c.traceFile},
              {"runTokens", c.runTokens}};
    if (c.difference) {
      const TraceDifference& d = *c.difference;
      j["difference"] = {{"index", d.index},
                         {"runIndex", d.runIndex},
                         {"expected", d.expected ? Json(*d.expected) : Json(nullptr)},
                         {"actual", d.actual ? Json(*d.actual) : Json(nullptr)},
                         {"expectedName", d.expectedName},
                         {"actualName", d.actualName},
                         {"where", d.where}};
    }
    cases.push_back(std::move(j));
  }
  Tally t = r.total();
  return {{"manifest", r.manifest},
          {"commit", r.commit},
          {"traceVersion", r.traceVersion},
          {"reportChecked", r.reportChecked},
          {"catalogChecked", r.catalogChecked},
          {"match", t[Verdict::Match]},
          {"mismatch", t[Verdict::Mismatch]},
          {"inconclusive", t[Verdict::Inconclusive]},
          {"harnessError", t[Verdict::HarnessError]},
          {"cases", cases}};
}

}  // namespace qgpu::audit
