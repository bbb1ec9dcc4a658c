// qgpu/harness/cli/command.h — the one shape of every `qgpu` subcommand.
//
// Each subcommand lives in its own file `cmd_<name>.cpp` with an options struct, a function that
// registers its flags on a CLI11 subcommand, and a run function returning the exit code. `main`
// only dispatches. Exit codes (the contract for scripts and CI) and what each error kind means are
// common/outcome.h's, decided there once:
//   0  everything compared matched (or the command succeeded)
//   1  at least one mismatch (a fault, a driver failure, a differing word)
//   2  usage error or bad input (the message names it)
//   3  harness error (a bug in qgpu, an unexpected exception)
//   4  inconclusive: nothing mismatched and nothing matched (no GPU, a tool missing, an
//      unsupported construct, a program over the machine's limits, a step limit)
//   5  `bench report` only: a benchmark regressed beyond its threshold and the noise
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "common/outcome.h"

namespace qgpu::cli {

using qgpu::kExitHarnessError;
using qgpu::kExitInconclusive;
using qgpu::kExitMismatch;
using qgpu::kExitOk;
using qgpu::kExitRegression;
using qgpu::kExitUsage;

// Flags every subcommand shares, defined once.
struct CommonOptions {
  bool json = false;          // --json: machine-readable output on stdout
  std::string sourceDir;      // --root: the qgpu source tree (kernels/, reports/); default: the build's
};

// A registered subcommand: `run` is called when the user picked it.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Each cmd_<name>.cpp defines one of these; main.cpp calls them all.
Command addCompileCommand(CLI::App& root, const CommonOptions& common);
Command addRunCommand(CLI::App& root, const CommonOptions& common);
Command addExprCommand(CLI::App& root, const CommonOptions& common);
Command addTraceCommand(CLI::App& root, const CommonOptions& common);
Command addCheckCommand(CLI::App& root, const CommonOptions& common);
Command addModelCommand(CLI::App& root, const CommonOptions& common);  // model/ (LibTorch builds)
Command addGpuCommand(CLI::App& root, const CommonOptions& common);
Command addReportCommand(CLI::App& root, const CommonOptions& common);  // `report merge`
Command addAuditCommand(CLI::App& root, const CommonOptions& common);   // `audit RUN`
Command addBenchCommand(CLI::App& root, const CommonOptions& common);   // `bench report`
Command addFuzzCommand(CLI::App& root, const CommonOptions& common);    // random generators (gen/)
Command addReduceCommand(CLI::App& root, const CommonOptions& common);  // `reduce FILE --predicate`
Command addBisectCommand(CLI::App& root, const CommonOptions& common);  // `bisect-run` (git bisect)
Command addCircuitCommand(CLI::App& root, const CommonOptions& common);  // `circuit plan`

}  // namespace qgpu::cli
