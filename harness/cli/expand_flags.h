// qgpu/harness/cli/expand_flags.h — the `--expand-division`, `--expand-multiply` and
// `--expand-mulhi` flags, defined once for every subcommand that builds a program (run, trace,
// compile), and the lines that report what the passes did.
//
// With `--expand-division`, every div/rem of the lowered program is replaced by a shift-subtract
// loop of existing ops (host/lower/expand_division.h); with `--expand-multiply`, every mul, mad
// and mulhi by a shift-add chain or loop (host/lower/expand_multiply.h); with `--expand-mulhi`,
// only mulhi. `--expand-division --expand-mulhi` is the program the circuit target runs, whose
// pipeline multiplies mul and mad itself (docs/circuit.md "MUL in the pipeline", docs/lowering.md
// §7 and §8): the interpreter then runs, and traces, the program the model must write. A program
// an expansion does not fit is OverLimit (exit 4), the message naming the op and its PTX line.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "harness/pipeline.h"

namespace qgpu::cli {

struct ExpandFlags {
  bool division = false;
  bool multiply = false;
  bool mulhi = false;  // only mulhi; `multiply` wins where both are given
  bool any() const { return division || multiply || mulhi; }
  void applyTo(harness::BuildOptions& build) const {
    build.expandDivision = division;
    build.expandMultiply = multiply || mulhi;
    build.multiplyHighOnly = mulhi && !multiply;
  }
};

inline void addExpandFlags(CLI::App* app, ExpandFlags& flags) {
  app->add_flag("--expand-division", flags.division,
                "Replace div/rem by a shift-subtract loop (the circuit target; docs/lowering.md)");
  app->add_flag("--expand-multiply", flags.multiply,
                "Replace mul/mad/mulhi by shift-add chains and loops (docs/lowering.md)");
  app->add_flag("--expand-mulhi", flags.mulhi,
                "Replace only mulhi by straight code of 16-bit half products (the circuit target, "
                "with --expand-division; docs/lowering.md)");
}

// "6 -> 10 blocks, 23 -> 419 ops": the program's size before and after a pass.
inline std::string describeCounts(const lower::ExpansionCounts& s) {
  return std::to_string(s.blocksBefore) + " -> " + std::to_string(s.blocksAfter) + " blocks, " +
         std::to_string(s.opsBefore) + " -> " + std::to_string(s.opsAfter) + " ops";
}
inline nlohmann::json countsJson(const lower::ExpansionCounts& s) {
  return {{"blocksBefore", s.blocksBefore},
          {"blocksAfter", s.blocksAfter},
          {"opsBefore", s.opsBefore},
          {"opsAfter", s.opsAfter}};
}

// "division expanded: 2 ops into loops (0 dead ones removed); 6 -> 10 blocks, 23 -> 419 ops"
inline std::string describeExpansion(const lower::ExpandDivisionStats& s) {
  return "division expanded: " + std::to_string(s.expanded) + " ops into loops (" +
         std::to_string(s.removed) + " dead ones removed); " + describeCounts(s);
}

// "multiplication expanded: 1 ops into chains, 2 into loops, 0 into halves (0 dead ones removed);
// 3 -> 7 blocks, ..."
inline std::string describeExpansion(const lower::ExpandMultiplyStats& s) {
  return "multiplication expanded: " + std::to_string(s.chains) + " ops into chains, " +
         std::to_string(s.loops) + " into loops, " + std::to_string(s.halves) + " into halves (" +
         std::to_string(s.removed) + " dead ones removed); " + describeCounts(s);
}

inline nlohmann::json expansionJson(const lower::ExpandDivisionStats& s) {
  nlohmann::json j = countsJson(s);
  j["expanded"] = s.expanded;
  j["removed"] = s.removed;
  return j;
}

inline nlohmann::json expansionJson(const lower::ExpandMultiplyStats& s) {
  nlohmann::json j = countsJson(s);
  j["chains"] = s.chains;
  j["loops"] = s.loops;
  j["halves"] = s.halves;
  j["removed"] = s.removed;
  return j;
}

// The report lines ("// " prefixed by the caller where it wants) and JSON members of the passes
// that ran.
inline std::vector<std::string> expansionLines(const ExpandFlags& f, const lower::ExpandDivisionStats& d,
                                               const lower::ExpandMultiplyStats& m) {
  std::vector<std::string> lines;
  if (f.division) lines.push_back(describeExpansion(d));
  if (f.multiply || f.mulhi) lines.push_back(describeExpansion(m));
  return lines;
}
inline void addExpansionJson(nlohmann::json& out, const ExpandFlags& f, const lower::ExpandDivisionStats& d,
                             const lower::ExpandMultiplyStats& m) {
  if (f.division) out["expandDivision"] = expansionJson(d);
  if (f.multiply || f.mulhi) out["expandMultiply"] = expansionJson(m);
}

}  // namespace qgpu::cli
