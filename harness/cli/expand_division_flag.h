// qgpu/harness/cli/expand_division_flag.h — the `--expand-division` flag, defined once for every
// subcommand that builds a program (run, trace, compile), and the one line that reports what the
// pass did.
//
// With the flag, every div/rem of the lowered program is replaced by a shift-subtract loop of
// existing ops (host/lower/expand_division.h), as the circuit target needs (docs/circuit.md §8
// "Division", docs/lowering.md "Expanding division"): the interpreter then runs, and traces, the
// program the model must write. A program the expansion does not fit is OverLimit (exit 4), the
// message naming the division and its PTX line.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "host/lower/expand_division.h"

namespace qgpu::cli {

inline CLI::Option* addExpandDivisionFlag(CLI::App* app, bool& expand) {
  return app->add_flag("--expand-division", expand,
                       "Replace div/rem by a shift-subtract loop (the circuit target; "
                       "docs/lowering.md)");
}

// "division expanded: 2 ops into loops (0 dead ones removed); 6 -> 10 blocks, 23 -> 419 ops"
inline std::string describeExpansion(const lower::ExpandDivisionStats& s) {
  return "division expanded: " + std::to_string(s.expanded) + " ops into loops (" + std::to_string(s.removed) +
         " dead ones removed); " + std::to_string(s.blocksBefore) + " -> " + std::to_string(s.blocksAfter) +
         " blocks, " + std::to_string(s.opsBefore) + " -> " + std::to_string(s.opsAfter) + " ops";
}

inline nlohmann::json expansionJson(const lower::ExpandDivisionStats& s) {
  return {{"expanded", s.expanded},         {"removed", s.removed}, {"blocksBefore", s.blocksBefore},
          {"blocksAfter", s.blocksAfter},   {"opsBefore", s.opsBefore}, {"opsAfter", s.opsAfter}};
}

}  // namespace qgpu::cli
