// qgpu/harness/cli/steps.h — the `--max-steps` flag, defined once for every subcommand that runs
// the interpreter (run, expr, check).
//
// The value is checked as text, before CLI11 converts it: decimal digits only, 1..kMaxRunSteps
// (oracle/interpreter.h), so "-1" is a usage error naming the range instead of becoming 2^64 - 1.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

#include "oracle/interpreter.h"

namespace qgpu::cli {

inline CLI::Option* addMaxStepsOption(CLI::App* app, uint64_t& maxSteps) {
  CLI::Validator range(
      [](std::string& text) -> std::string {
        const std::string want =
            "must be an integer from 1 to " + std::to_string(oracle::kMaxRunSteps);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return want + ", got '" + text.substr(0, 40) + "'";
        // Digits only; more than 19 of them (leading zeros apart) is over the range anyway.
        const size_t first = std::min(text.find_first_not_of('0'), text.size());
        if (text.size() - first > 19) return want + ", got " + text.substr(0, 40);
        uint64_t value = 0;
        for (size_t i = first; i < text.size(); ++i) value = value * 10 + uint64_t(text[i] - '0');
        if (value < 1 || value > oracle::kMaxRunSteps) return want + ", got " + text;
        return "";
      },
      "1.." + std::to_string(oracle::kMaxRunSteps), "MaxStepsRange");
  return app->add_option("--max-steps", maxSteps, "Interpreter step limit")
      ->check(range)
      ->capture_default_str();
}

}  // namespace qgpu::cli
