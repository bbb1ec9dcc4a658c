// qgpu/harness/report/junit.cpp — see junit.h.
#include "harness/report/junit.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "harness/report/markup.h"

namespace qgpu::report {

namespace {

std::string content(std::string_view text) { return escapeMarkup(text, MarkupContext::Content); }

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  void add(const harness::CaseResult& c) {
    ++tests;
    failures += c.verdict == Verdict::Mismatch;
    errors += c.verdict == Verdict::HarnessError;
    skipped += c.verdict == Verdict::Inconclusive;
    time += c.wallSeconds;
  }
  std::string str() const {
    return "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
           "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
           "\" time=\"" + seconds(time) + "\"";
  }
};

std::string evidence(const harness::CaseResult& c) {
  std::string out = c.detail + "\n";
  if (c.error) out += std::string("error kind: ") + kindName(*c.error) + "\n";
  out += "ptx " + c.ptxDigest + ", program " + c.programDigest + ", input " + c.inputDigest +
         ", trace " + c.traceDigest + " (" + std::to_string(c.traceTokens) + " tokens)\n";
  const char* leg = c.backend == harness::Backend::ModelF32    ? " --no-gpu --model fp32"
                    : c.backend == harness::Backend::ModelBf16 ? " --no-gpu --model bf16"
                    : c.backend == harness::Backend::Gpu       ? ""
                                                               : " --no-gpu";
  out += "reproduce with: qgpu check --kernel " + c.kernel + " --compiler " + c.compiler + leg + " --verbose\n";
  return out;
}

}  // namespace

std::string junitXml(const RunReport& r) {
  using Key = std::pair<harness::Backend, std::string>;
  std::map<Key, std::vector<const harness::CaseResult*>> suites;
  Counts total;
  for (const ReportCase& rc : r.cases) {
    suites[{rc.result.backend, rc.result.compiler}].push_back(&rc.result);
    total.add(rc.result);
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"qgpu check\" " << total.str() << " timestamp=\""
    << escapeAttribute(r.startedAt) << "\">\n";
  o << "  <properties>\n";
  auto property = [&o](const std::string& name, const std::string& value) {
    o << "    <property name=\"" << escapeAttribute(name) << "\" value=\"" << escapeAttribute(value)
      << "\"/>\n";
  };
  property("commit", r.provenance.commit);
  property("dirty", r.provenance.dirty);
  property("host", r.provenance.host);
  property("catalog", r.plan.catalogDigest);
  property("plan", r.plan.digest());
  property("shard", std::to_string(r.shard.index) + "/" + std::to_string(r.shard.total));
  property("partial", r.partial ? "true" : "false");
  property("gpu", r.gpuDevice);
  for (const auto& [tool, version] : r.provenance.tools) property("tool." + tool, version);
  o << "  </properties>\n";
  for (const auto& [key, cases] : suites) {
    std::string suite = std::string(harness::backendName(key.first)) + "." + key.second;
    Counts counts;
    for (const harness::CaseResult* c : cases) counts.add(*c);
    o << "  <testsuite name=\"" << escapeAttribute(suite) << "\" " << counts.str() << " hostname=\""
      << escapeAttribute(r.provenance.host) << "\" timestamp=\"" << escapeAttribute(r.startedAt)
      << "\">\n";
    for (const harness::CaseResult* c : cases) {
      o << "    <testcase classname=\"qgpu." << escapeAttribute(suite) << "\" name=\""
        << escapeAttribute(c->kernel) << "\" time=\"" << seconds(c->wallSeconds) << "\"";
      switch (c->verdict) {
        case Verdict::Match: o << "/>\n"; continue;
        case Verdict::Inconclusive:
          o << ">\n      <skipped message=\"" << escapeAttribute(c->detail) << "\"/>\n";
          break;
        case Verdict::Mismatch:
          o << ">\n      <failure type=\"mismatch\" message=\"" << escapeAttribute(c->detail)
            << "\">" << content(evidence(*c)) << "</failure>\n";
          break;
        case Verdict::HarnessError:
          o << ">\n      <error type=\"harness-error\" message=\"" << escapeAttribute(c->detail)
            << "\">" << content(evidence(*c)) << "</error>\n";
          break;
      }
      o << "    </testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace qgpu::report
