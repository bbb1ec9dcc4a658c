// qgpu/harness/reduce.h — test-case reduction of CUDA kernel files and PTX (issue 9, item 5), in
// C-Reduce's conventions.
//
// The predicate is a shell command (`/bin/sh -c CMD`) run in a fresh scratch directory that holds
// only the candidate, under the input file's own name (a kernel file's stem is its kernel's name,
// kernels/README.md); $QGPU_REDUCE_FILE names it too. Exit 0 within the timeout = "still
// interesting"; any other exit, a signal, or the timeout = not interesting. stdin is /dev/null;
// its output goes to a log in the scratch directory (the last lines are quoted in errors).
//
// Before reducing, the predicate runs `determinismRuns` times on the original: every run must be
// interesting, else a typed error (Usage: "not interesting on the original", "nondeterministic",
// "predicate command not found" for sh's 127). Then the passes below run to a fixed point (a round
// in which no pass shrinks the file), each candidate tried at most once (a set of the texts
// tried), and never more than `budget` predicate calls in all: the result is always the smallest
// interesting file seen, never a candidate that was not interesting.
//
// Passes (both kinds of file; header lines — the leading `//` lines: a kernel file's header, a
// corpus case's keys — and PTX's .version/.target/.address_size are never touched, except by
// `params`):
//   lines     ddmin over the body's lines: remove chunks of n/2, n/4, ... 1 lines
//   blocks    a line ending in `{` with its matching `}`: the whole block; its braces only (the
//             body stays: an if/for/helper unwrapped); `} else {` keeps either arm
//   exprs     CUDA: a parenthesised expression (not a cast, call or control header) becomes 0, then 1
//   atoms     CUDA: an identifier or integer literal that is read becomes 0, then 1; a call
//             `f(...)` becomes 0. PTX: a source operand (register or immediate) becomes 0, then
//             1; a guard `@%p` / `@!%p` is dropped
//   params    CUDA: a kernel parameter the body does not use leaves the signature together with
//             its `// param:` and `// expect:` lines (the kernel file stays consistent); PTX: an
//             entry `.param` the body does not name
// Validity: the predicate decides (the usual one compiles and runs qgpu and greps a verdict), but
// for CUDA the passes keep what makes gen/cuda_gen.h's kernels UB-free by construction, so that a
// reduced kernel is still free of undefined behaviour: nothing inside `[...]` is rewritten (loads
// stay `in[x & 15u]`, stores stay in the thread's own slots, atomics on their own word), mask
// operands (a literal after `&` or `|`: `& 31u`, `| 1u`, `& 0x7777u`) are never rewritten, a
// divisor (after `/` or `%`, a `(int)` cast between allowed) is only ever replaced by 1, the
// definition of a variable that indexes a store or an atomic is never rewritten (the thread's own
// slot), a for-header only in its bound, and a candidate whose shared-memory exchange would race
// is never tried (sharedExchangesRaceFree). gen/cuda_check.h's property does not apply to a
// reduced kernel (it needs the generator's own expectation): these rules stand in for it, and
// the predicate is the final judge of validity.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::reduce {

enum class FileKind : uint8_t {
  Cuda,  // a .cu kernel file (kernels/README.md)
  Ptx,   // a .ptx module (with an optional corpus/bugs header)
};
// From the file name's extension: .cu or .ptx, else Usage naming the file.
Expected<FileKind> fileKindOf(const std::string& path);

// One predicate call's outcome.
struct PredicateRun {
  bool interesting = false;
  bool timedOut = false;
  int exitCode = -1;    // when it exited
  int signal = 0;       // when a signal ended it
  std::string logTail;  // the last lines of its stdout+stderr
};

struct PredicateOptions {
  std::string command;          // run by /bin/sh -c in the scratch directory
  double timeoutSeconds = 30;   // a run past it is killed (its process group) = not interesting
  std::string fileName;         // the candidate's name in the scratch directory (a basename)
};

// Runs the predicate once on `text`. Errors: Io (no scratch directory, cannot write the
// candidate), Internal (fork/wait failed).
Expected<PredicateRun> runPredicate(const std::string& text, const PredicateOptions& options);

struct ReduceOptions {
  PredicateOptions predicate;
  int determinismRuns = 2;  // the original must be interesting this many times in a row
  int budget = 2000;        // predicate calls in all (the determinism runs included)
  // Progress lines ("pass lines: 112 -> 57 lines, 40 calls"); none when empty.
  std::function<void(const std::string&)> progress;
};

struct PassStats {
  std::string name;
  int tried = 0, accepted = 0;
};

struct ReduceResult {
  std::string text;  // the smallest interesting file seen
  int linesBefore = 0, linesAfter = 0;
  size_t bytesBefore = 0, bytesAfter = 0;
  int predicateCalls = 0, cacheHits = 0, rounds = 0;
  bool budgetExhausted = false;  // stopped by the budget, not at a fixed point
  std::vector<PassStats> passes;
};

// Reduces `text` (of `kind`). Errors: Usage (empty file, predicate not interesting on the
// original, nondeterministic, not found; budget below the determinism runs), and runPredicate's.
Expected<ReduceResult> reduce(const std::string& text, FileKind kind, const ReduceOptions& options);

// ---- The candidate rules, exposed for tests ----
// Lines of `text` (without their '\n'); join(split(t)) == t for text ending in '\n' or not.
std::vector<std::string> splitLines(const std::string& text);
std::string joinLines(const std::vector<std::string>& lines, bool finalNewline = true);
// The CUDA rule a whole candidate is checked for (no predicate call when it fails): every read of
// a `__shared__` array follows a store to it and a `__syncthreads();` after that store, and a
// `__syncthreads();` separates each read from the next store (gen/cuda_gen.h's exchange).
bool sharedExchangesRaceFree(const std::string& candidate);

}  // namespace qgpu::reduce
