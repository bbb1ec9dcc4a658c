// qgpu/gpu/recording.h — recorded real-GPU results: the file format, its writer and validating
// reader, and the comparison of a recording with the interpreter.
//
// File: reports/gpu/recording.json (docs/gpu.md §Recording format), written by `qgpu gpu record`
// or the standalone `qgpu-gpu-record`. One JSON object:
//   {"magic": "qgpu-gpu-recording", "version": 1,
//    "provenance": {"gpu", "computeCapability", "driverVersion", "cudaDriverApiVersion",
//                   "cudaToolkitVersion", "date", "commit", "host", "tool"},   all strings
//    "cases": [{"kernel", "compiler", "entry", "ptxDigest": "fnv1a64:<16 hex>",
//               "grid", "block", "status", "detail", "global": [126 numbers]}]}
// `global` is the whole final 126-word image (not just outputs: a stray write anywhere is seen);
// it is empty unless status is "ok" or "guard-violation". The writer prints 8 words per line so a
// diff names the words that changed.
//
// The reader parses with nlohmann-json in strict mode (also refusing a key twice in one object and
// nesting deeper than 64 levels), then validates before use: magic, version, every required field
// with its JSON type, value ranges, the digest's form, and (kernel, compiler) uniqueness. Every
// problem is ErrorKind::Io with the file and, for syntax errors, line:column; the message names the
// field ("cases[3].global: expected an array of 126 words").
//
// Digest: FNV-1a 64 of the exact PTX bytes. It detects a changed PTX (stale recording), not an
// adversary; that is all it is for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/diag.h"
#include "common/outcome.h"
#include "gpu/runner.h"

namespace qgpu::gpu {

inline constexpr const char* kRecordingMagic = "qgpu-gpu-recording";
inline constexpr int kRecordingVersion = 1;

// "fnv1a64:" followed by 16 lower-case hex digits.
std::string ptxDigest(const std::string& ptx);
bool isPtxDigest(const std::string& s);

// The outcome of one kernel on the GPU.
enum class CaseStatus : uint8_t {
  Ok,                // ran twice, same result, guards intact
  GuardViolation,    // ran, but wrote outside the image (detail names the words); a finding
  Nondeterministic,  // two runs disagreed (detail names the word); a finding
  DeviceError,       // a driver call failed (JIT rejected the PTX, launch failed): detail has it
};
const char* statusName(CaseStatus status);  // "ok", "guard-violation", ...
std::optional<CaseStatus> parseStatus(const std::string& name);

struct Provenance {
  std::string gpu;                   // device name, e.g. "NVIDIA H200"
  std::string computeCapability;     // "9.0"
  std::string driverVersion;         // NVIDIA kernel driver, from /proc/driver/nvidia/version
  std::string cudaDriverApiVersion;  // cuDriverGetVersion, e.g. "12.4"
  std::string cudaToolkitVersion;    // CUDA_VERSION of the cuda.h built against, or "unknown"
  std::string date;                  // UTC ISO-8601, e.g. "2026-11-30T01:02:03Z"
  std::string commit;                // the qgpu commit the inputs were exported from, or "unknown"
  std::string host;                  // host name of the GPU machine
  std::string tool;                  // "qgpu gpu record" or "qgpu-gpu-record"
};

struct RecordedCase {
  std::string kernel;     // catalog kernel name
  std::string compiler;   // "clang" or "nvcc"
  std::string entry;      // PTX entry name
  std::string ptxDigest;  // ptxDigest() of the PTX that ran
  uint32_t grid = 1;
  uint32_t block = 1;
  CaseStatus status = CaseStatus::Ok;
  std::string detail;            // guard report / error message; empty when Ok
  std::vector<uint32_t> global;  // final image for Ok and GuardViolation, else empty
};

struct Recording {
  Provenance provenance;
  std::vector<RecordedCase> cases;
};

std::string writeRecordingJson(const Recording& recording);

// `file` labels messages. Validates everything listed in the header comment.
Expected<Recording> parseRecordingJson(const std::string& text, const std::string& file);
Expected<Recording> readRecording(const std::string& path);
Status writeRecording(const Recording& recording, const std::string& path);

// ---- Comparison with the interpreter (the verdicts of common/outcome.h) ----
// Match: the GPU's final image equals the interpreter's. Mismatch: they differ, or the GPU run was
// a finding (guard violation, nondeterminism, a driver failure: the same verdict as live, see
// outcome.h). Inconclusive: nothing compared — the PTX changed since the recording (`stale`), or
// the interpreter's error says the case cannot be decided here (caseVerdict).
struct CaseComparison {
  Verdict verdict = Verdict::Inconclusive;
  bool stale = false;  // Inconclusive because the recorded PTX is not the host's PTX now
  std::string detail;  // "word 5 (byte 20): gpu 0x00000020 vs interpreter 0x0000001f", ...
};

// Compares one recorded case with what the host produces now: the digest of the current PTX and
// the interpreter's final image (or its error when it failed, whose verdict is caseVerdict's).
// `unordered` ranges (the catalog's `compare: multiset` outputs) are compared as multisets.
CaseComparison compareCase(const RecordedCase& recorded, const std::string& currentDigest,
                           const Expected<std::vector<uint32_t>>& interpreterGlobal,
                           const std::vector<WordRange>& unordered = {});

}  // namespace qgpu::gpu
