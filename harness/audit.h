// qgpu/harness/audit.h — replay audits of a recorded run (`qgpu audit RUN`, issue 10 item 2).
//
// A recorded run is what `qgpu check --out DIR` leaves in DIR: `manifest.json` (the provenance
// manifest, harness/report/manifest.h), `report.json` (the run report) and `traces/`, one trace
// record per interpreter case (written by `check --traces DIR` too). The audit trusts none of it:
// for every case with a trace it decodes the recorded prompt (program, launch, initial memory),
// recomputes the manifest's program, input and trace digests from the record, runs the program
// again in the interpreter with the plan's step limit and compares the two runs token for token.
// When the catalog the run was planned from is present (same catalog digest), the recorded
// inputs must also be the catalog kernel's own (kernels::layout): an input edited consistently
// in the record and the manifest is still caught.
//
// Verdicts per case (common/outcome.h): Match, every check held and the re-derived trace equals
// the recorded one; Mismatch, a check failed (`detail` names the field and both values; a trace
// difference comes with its position and decoded meaning, TraceDifference); Inconclusive, the
// case has no trace to audit (a GPU case, a case that did not build). The audit's exit code is
// the tally's (exitCode(Tally)).
//
// Refusals (the whole audit; a Diag, exit 2): the manifest missing (Io), not JSON, another magic
// or manifest version, a field missing or mistyped, a plan whose digest does not match its
// fields, a partial run (ReportInvalid); a trace record that is not one, or was written by
// another trace version (TraceInvalid, naming both versions and the run's commit); a trace file
// that the manifest names and that cannot be read (Io). A trace file the manifest names that is
// missing is a finding (Mismatch: evidence was removed), not a refusal.
//
// Trace record (`qgpu-trace-record` version 1, docs/reports.md): a JSON object with
// `traceVersion` (trace::kTraceVersion of the writer), `kernel`, `compiler`, `backend`,
// `programName` (machine::Program::name, which the prompt does not carry), `params` (the
// parameter values, part of the input digest, not of the prompt), `promptTokens` and `tokens`
// (the full trace: prompt, then run).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "common/outcome.h"
#include "harness/verdict.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::audit {

inline constexpr const char* kTraceRecordMagic = "qgpu-trace-record";
inline constexpr int kTraceRecordVersion = 1;  // the file's schema (the tokens': kTraceVersion)
inline constexpr size_t kMaxTraceRecordBytes = size_t{512} << 20;
inline constexpr size_t kMaxManifestBytes = size_t{256} << 20;

struct TraceRecord {
  int traceVersion = trace::kTraceVersion;  // the token format the tokens are in
  std::string kernel;
  std::string compiler;
  harness::Backend backend = harness::Backend::Interp;
  std::string programName;           // machine::Program::name
  std::vector<uint32_t> params;      // the kernel's parameter values
  uint64_t promptTokens = 0;         // tokens[0 .. promptTokens) are the prompt
  std::vector<trace::Token> tokens;  // prompt + run
};

// The record of one run: encodePrompt(program, launch) followed by `run`.
TraceRecord makeTraceRecord(const harness::CaseResult& c, const machine::Program& program,
                            const machine::Launch& launch, std::span<const uint32_t> params,
                            std::span<const trace::Token> run);
nlohmann::json toJson(const TraceRecord& record);
// Refuses (TraceInvalid, `file` as the location) anything that is not a version-1 record of
// trace version kTraceVersion; `commit` (the run's) goes into the message of a version refusal.
Expected<TraceRecord> parseTraceRecord(const std::string& text, const std::string& file,
                                       const std::string& commit = "unknown");

// Where the first difference between the recorded and the re-derived trace lies.
struct TraceDifference {
  uint64_t index = 0;                    // token index in the record's `tokens` (prompt included)
  uint64_t runIndex = 0;                 // index in the run part
  std::optional<trace::Token> expected;  // the re-derived token (nullopt: the run ended earlier)
  std::optional<trace::Token> actual;    // the recorded token (nullopt: the record ended earlier)
  std::string expectedName, actualName;  // tokenName, or "end of trace"
  std::string where;  // decoded position: "step 3 (CTA 0, EX(2) WM(w1,0011)) ..."
};

struct CaseAudit {
  std::string kernel, compiler;
  harness::Backend backend = harness::Backend::Interp;
  Verdict verdict = Verdict::Inconclusive;
  std::string detail;      // why, when not a match
  std::string traceFile;   // as the manifest names it ("" when none)
  uint64_t runTokens = 0;  // tokens re-derived and compared
  std::optional<TraceDifference> difference;
};

struct AuditReport {
  std::string manifest;  // the manifest's path
  std::string commit;    // the run's commit (provenance)
  int traceVersion = trace::kTraceVersion;
  bool reportChecked = false;   // a report.json sat next to the manifest and was compared
  bool catalogChecked = false;  // the catalog matched the plan's: inputs were compared
  std::vector<CaseAudit> cases;
  Tally total() const;
};

struct AuditOptions {
  std::string catalogDir;  // the kernel catalog; "" or another catalog: no input check
};

// `run`: a directory holding manifest.json (and report.json), or a manifest file.
Expected<AuditReport> auditRun(const std::string& run, const AuditOptions& options = {});

// The first difference of two runs' tokens, decoded against `expected` (nullopt when equal).
// `promptTokens` offsets `index`.
std::optional<TraceDifference> firstDifference(std::span<const trace::Token> expected,
                                               std::span<const trace::Token> actual,
                                               uint64_t promptTokens);

std::string formatAudit(const AuditReport& report);
nlohmann::json toJson(const AuditReport& report);

}  // namespace qgpu::audit
