// qgpu/harness/evaluate.h — runs an expression (harness/expr.h) on the machine: every operation
// becomes one launch of its catalog kernel with the operands as inputs, innermost first.
//
// The host computes nothing of the result: each operation's output is read from the machine's
// final memory. As a conformance check the host also evaluates the expression itself with plain
// 32-bit wrap-around integer arithmetic (`hostValue`), and the CLI reports any disagreement.
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
  uint64_t maxSteps = 1'000'000;
};

Expected<Evaluation> evaluate(const Expr& expr, const EvalOptions& options);

// The same expression evaluated directly on the host (32-bit wrap-around), for comparison only.
Value hostValue(const Expr& expr);

}  // namespace qgpu::harness
