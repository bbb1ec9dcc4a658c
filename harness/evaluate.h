// qgpu/harness/evaluate.h — runs an expression (harness/expr.h) on the machine: every operation
// becomes one launch of its catalog kernel with the operands as inputs, innermost first.
//
// The host computes nothing of the result: each operation's output is read from the machine's
// final memory. As a conformance check the host also evaluates the expression itself with plain
// 32-bit wrap-around integer arithmetic (`hostValue`), and the CLI reports any disagreement. A
// third evaluation, `exactValue`, computes the mathematically exact integers (128-bit, every
// operation checked for overflow) so that the CLI can say when the int32 answer wrapped around.
//
// Cost: a kernel is compiled (a clang-14/nvcc subprocess, ~50-150 ms) once per evaluation and
// lowered once per distinct parameter list (the shape, and vscale's k); a chain of a thousand
// `+` compiles vadd once and lowers it once. Every evaluation loop here walks the flat ExprTree
// in order: no recursion.
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "harness/expr.h"
#include "harness/pipeline.h"

namespace qgpu::harness {

// One kernel launch made while evaluating.
struct Launched {
  std::string kernel;                 // catalog kernel name
  Value result;                       // what the machine computed
  std::vector<trace::Token> prompt;   // program + launch + memory as tokens
  std::vector<trace::Token> run;      // the run part of the trace
  uint64_t steps = 0;
};

struct Evaluation {
  Value value;                        // the machine's result
  std::vector<Launched> launches;     // in execution order
};

struct EvalOptions {
  host::Compiler compiler = host::Compiler::Clang;
  std::string catalogDir;             // where the normal-mode kernels live
  uint64_t maxSteps = trace::kModelStepLimit;  // the limit a compiled model writes LIMIT at
};

Expected<Evaluation> evaluate(const ExprTree& expr, const EvalOptions& options);

// The same expression evaluated directly on the host (32-bit wrap-around), for comparison only.
Value hostValue(const ExprTree& expr);

// The expression's exact integer value, independent of the machine and of int32 arithmetic.
struct ExactValue {
  uint32_t rows = 0, cols = 0;   // as in Value
  std::vector<__int128> data;    // row-major; empty when !representable
  bool representable = true;     // false: an intermediate result left the 128-bit range

  // Some element lies outside int32, so an int32 evaluation wrapped (or, when !representable,
  // cannot be vouched for).
  bool wrapped() const;
  std::string str() const;       // as Value::str; "?" when !representable
};
ExactValue exactValue(const ExprTree& expr);

}  // namespace qgpu::harness
