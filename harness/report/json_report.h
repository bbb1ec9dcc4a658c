// qgpu/harness/report/json_report.h — the run report: one document per run or shard, written as
// JSON (schema "qgpu-check-report" version 2, docs/reports.md), read back for `report merge`
// and `check --balance`.
//
// Version 2 is a superset of version 1 (`check --report` before sharding): every version-1 key
// keeps its meaning; new are `partial`, `provenance`, `plan`, `shard`, `jobs`, the run's times
// and, per case, `job`, the program and input digests, the launch and the case's times.
//
// Contract of `parseReport`: it never throws and refuses with ErrorKind::ReportInvalid (the file
// as the location, the JSON path of the offending field in the message) anything that is not a
// version-2 qgpu check report: not JSON, another magic (a foreign file), another version, a
// missing or mistyped field, an unknown verdict/backend/error kind, a plan whose digest does not
// match its fields, a case outside the shard's jobs or the plan's compilers, a duplicate case,
// tallies that do not count the cases. A non-partial report must hold every case of its jobs.
// `readReport` reads the file with common/file.h (Io for a missing file, a directory, a FIFO,
// a file over kMaxReportBytes) and then parses it.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "harness/check.h"
#include "harness/report/json_fields.h"
#include "harness/report/plan.h"
#include "harness/report/provenance.h"

namespace qgpu::report {

inline constexpr const char* kReportMagic = "qgpu-check-report";
inline constexpr int kReportVersion = 2;
inline constexpr size_t kMaxReportBytes = size_t{256} << 20;

struct ReportCase {
  size_t job = 0;               // the kernel's index in Plan::kernels
  harness::CaseResult result;
};

struct RunReport {
  bool partial = false;         // true until the run finished: a killed run leaves it true
  Plan plan;
  ShardSpec shard;
  std::vector<size_t> jobs;     // the plan's kernels this report covers (indices, ascending)
  Provenance provenance;
  std::string gpuDevice;        // the GPU used, or why none was
  std::string startedAt, finishedAt;  // UTC, ISO 8601 ("" while partial)
  double wallSeconds = 0;       // the run's wall time (a merged report: its longest shard's)
  std::vector<ReportCase> cases;  // job order, then compiler, then leg

  // Counts per (leg, compiler), from the cases.
  std::map<std::pair<harness::Backend, std::string>, Tally> tallies() const;
  Tally total() const;
};

// A report of `check` (cases of `jobs`, in that order) as a RunReport.
RunReport makeRunReport(const Plan& plan, ShardSpec shard, std::vector<size_t> jobs,
                        const harness::CheckReport& check);

nlohmann::json toJson(const RunReport& report);
nlohmann::json toJson(const Plan& plan);  // the report's "plan" object, digest included
// The "plan" object of `doc` (a run report or a manifest), checked field by field and against its
// digest; errors are rd's kind at its file.
Expected<Plan> parsePlan(const JsonFields& rd, const nlohmann::json& doc);
Expected<RunReport> parseReport(const nlohmann::json& doc, const std::string& file);
Expected<RunReport> parseReportText(const std::string& text, const std::string& file);
Expected<RunReport> readReport(const std::string& path);

// "2026-12-01T09:54:52Z" for now.
std::string utcNow();

}  // namespace qgpu::report
