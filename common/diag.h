// qgpu/common/diag.h — errors as values.
//
// Contract: library code never throws for bad user input and never asserts on it. A function that
// can fail on its input returns `Expected<T>`: either a value or a `Diag` that names the error kind,
// where it happened (file, line, column when known) and a one-line message. The CLI turns a Diag
// into a message and an exit code; tests compare `Diag::kind`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace qgpu {

// Every kind of error qgpu reports. One line each; the CLI prints `kindName(kind)`.
enum class ErrorKind : uint8_t {
  Io,              // a file could not be read or written
  Usage,           // wrong command-line arguments or API misuse by the caller
  CompileFailed,   // the CUDA compiler (clang or nvcc) rejected the source
  ToolMissing,     // an external tool (clang-14, nvcc, ptxas) is not installed
  PtxSyntax,       // the PTX text does not parse
  PtxUnsupported,  // valid PTX that uses a construct outside the supported subset
  PtxInvalid,      // PTX that parses but is inconsistent (undeclared register, type clash)
  OverLimit,       // the program does not fit the machine (registers, blocks, memory, threads)
  ProgramInvalid,  // a machine program violates an invariant (verify())
  MachineFault,    // the machine trapped at run time (out-of-bounds access, misaligned address)
  StepLimit,       // the run did not finish within the step limit
  KernelFile,      // a catalog kernel file's header is malformed
  TraceInvalid,    // a token sequence is not a well-formed trace
  Checkpoint,      // a model checkpoint is corrupt or inconsistent
  Device,          // a GPU driver call failed
  NoDevice,        // no GPU or driver is available (an inconclusive result, not a failure)
  ReportInvalid,   // a run report is corrupt, foreign (another tool or schema version), or does
                   // not fit the others it is merged with (commit, catalog, plan, cases)
  Internal,        // a bug in qgpu itself
};

const char* kindName(ErrorKind kind);

// Where an error was found. `line` and `column` are 1-based; 0 means unknown.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;

  std::string str() const;  // "file:line:col", omitting what is unknown
};

struct Diag {
  ErrorKind kind = ErrorKind::Internal;
  std::string message;
  SourceLoc loc;
  // When the input is a sequence (a trace's tokens): the 0-based index of the element at fault,
  // as a field so callers never parse it back out of `message`.
  std::optional<uint64_t> index;

  std::string str() const;  // "file:line:col: error[Kind]: message"
};

inline Diag makeDiag(ErrorKind kind, std::string message, SourceLoc loc = {}) {
  return Diag{kind, std::move(message), std::move(loc), std::nullopt};
}

// A value or a Diag. Small on purpose: C++20 has no std::expected.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Diag diag) : state_(std::move(diag)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Diag& error() const { return std::get<Diag>(state_); }

 private:
  std::variant<T, Diag> state_;
};

// For functions that return nothing but may fail.
struct Ok {};
using Status = Expected<Ok>;

}  // namespace qgpu

// Propagates the error of an Expected expression, else binds its value.
#define QGPU_TRY(var, expr)                              \
  auto var##_result_ = (expr);                           \
  if (!var##_result_.ok()) return var##_result_.error(); \
  auto var = std::move(var##_result_).value()

#define QGPU_CHECK(expr)                        \
  do {                                          \
    auto qgpu_status_ = (expr);                 \
    if (!qgpu_status_.ok()) return qgpu_status_.error(); \
  } while (0)
