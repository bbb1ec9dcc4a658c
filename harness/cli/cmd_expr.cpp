// qgpu/harness/cli/cmd_expr.cpp — `qgpu expr "[1, 2, 3] @ [4, 5, 6]"`: evaluates a normal-mode
// expression on the machine (one catalog kernel per operation), prints the result and the trace of
// every launch, and checks the result against the host's own evaluation.
//
// Exit codes: 0 when the machine's int32 result equals the host's int32 arithmetic, 1 when it
// differs (MISMATCH), 2 for an expression that does not parse or is over a size limit. A result
// that wrapped around (the exact integer value, computed by the host in 128-bit arithmetic, lies
// outside int32) still exits 0 when the machine agrees: the machine computed int32 arithmetic
// correctly. It is reported as a warning line after the result ("warning: int32 wrap-around:
// the exact value is ...") and in JSON as "wrapped": true with "exact" (harness/README.md).
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/cli/command.h"
#include "harness/cli/steps.h"
#include "harness/cli/util.h"
#include "harness/evaluate.h"

namespace qgpu::cli {

namespace {

struct ExprCmdOptions {
  std::string text;
  std::string compiler = "clang";
  bool pretty = false;       // decoded trace instead of token names
  bool prompt = false;       // also print the prompt tokens
  uint64_t maxSteps = trace::kModelStepLimit;  // the limit a compiled model writes LIMIT at
};

std::string tokenLine(const std::vector<trace::Token>& tokens) {
  std::string line;
  for (trace::Token t : tokens) line += (line.empty() ? "" : " ") + trace::tokenName(t);
  return line;
}

int runExpr(const ExprCmdOptions& o, const CommonOptions& common) {
  auto compilers = parseCompilers(o.compiler);
  if (!compilers.ok()) return reportError(compilers.error());
  if (compilers->size() != 1)
    return reportError(makeDiag(ErrorKind::Usage, "expr takes one compiler (clang or nvcc)"));
  auto expr = harness::parseExpr(o.text);
  if (!expr.ok()) {
    const Diag& d = expr.error();
    // The caret line only for an expression short enough to echo.
    if (o.text.size() <= 200 && d.loc.column >= 1 && d.loc.column <= o.text.size() + 1)
      std::fprintf(stderr, "qgpu: error[%s]: column %u: %s\n  %s\n  %*s^\n", kindName(d.kind),
                   d.loc.column, d.message.c_str(), o.text.c_str(),
                   static_cast<int>(d.loc.column) - 1, "");
    else
      std::fprintf(stderr, "qgpu: error[%s]: column %u: %s\n", kindName(d.kind), d.loc.column,
                   d.message.c_str());
    // --json: the same error object every subcommand prints (util.h), the text above aside.
    if (jsonOutput()) std::cout << dumpJson({{"error", errorJson(d)}}) << "\n";
    return exitCode(d);
  }
  harness::EvalOptions options;
  options.compiler = compilers->front();
  options.catalogDir = catalogDir(common);
  options.maxSteps = o.maxSteps;
  auto result = harness::evaluate(*expr, options);
  if (!result.ok()) return reportError(result.error());
  harness::Value host = harness::hostValue(*expr);
  bool agrees = host == result->value;
  harness::ExactValue exact = harness::exactValue(*expr);
  std::string wrapNote =
      exact.representable
          ? "warning: int32 wrap-around: the exact value is " + exact.str()
          : "warning: int32 wrap-around: the exact value exceeds the host's 128-bit arithmetic";

  if (common.json) {
    nlohmann::json launches = nlohmann::json::array();
    for (const harness::Launched& l : result->launches) {
      std::vector<std::string> run;
      for (trace::Token t : l.run) run.push_back(trace::tokenName(t));
      launches.push_back({{"kernel", l.kernel}, {"result", l.result.str()},
                          {"promptTokens", l.prompt.size()}, {"runTokens", l.run.size()},
                          {"steps", l.steps}, {"trace", run}});
    }
    nlohmann::json exactJson = nullptr;  // null: beyond 128 bits
    if (exact.representable) exactJson = exact.str();
    std::cout << nlohmann::json{{"expr", o.text},         {"result", result->value.str()},
                                {"host", host.str()},     {"agrees", agrees},
                                {"wrapped", exact.wrapped()}, {"exact", exactJson},
                                {"launches", launches}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << result->value.str() << "\n";
    if (exact.wrapped()) std::cout << wrapNote << "\n";
    for (const harness::Launched& l : result->launches) {
      std::cout << "\n" << l.kernel << ": " << l.run.size() << " generated tokens ("
                << l.prompt.size() << " prompt tokens), " << l.steps << " steps\n";
      if (o.prompt) std::cout << "prompt: " << tokenLine(l.prompt) << "\n";
      if (o.pretty) std::cout << trace::pretty(l.run);
      else std::cout << tokenLine(l.run) << "\n";
    }
    if (!agrees)
      std::cout << "MISMATCH: the host computes " << host.str() << "\nreproduce with: "
                << commandLine() << "\n";
  }
  return agrees ? kExitOk : kExitMismatch;
}

}  // namespace

Command addExprCommand(CLI::App& root, const CommonOptions& common) {
  static ExprCmdOptions o;
  CLI::App* app =
      root.add_subcommand("expr", "Evaluate an expression such as \"[1, 2, 3] @ [4, 5, 6]\"");
  app->add_option("expression", o.text, "The expression (see kernels/README.md)")->required();
  app->add_option("--compiler", o.compiler, "clang or nvcc")->capture_default_str();
  app->add_flag("--pretty", o.pretty, "Print the trace with its decoded meaning");
  app->add_flag("--prompt", o.prompt, "Also print the prompt tokens");
  addMaxStepsOption(app, o.maxSteps);
  return {app, [&common] { return runExpr(o, common); }};
}

}  // namespace qgpu::cli
