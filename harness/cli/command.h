// qgpu/harness/cli/command.h — the one shape of every `qgpu` subcommand.
//
// Each subcommand lives in its own file `cmd_<name>.cpp` with an options struct, a function that
// registers its flags on a CLI11 subcommand, and a run function returning the exit code. `main`
// only dispatches. Exit codes (the contract for scripts and CI):
//   0  everything compared matched (or the command succeeded)
//   1  at least one mismatch
//   2  usage error or bad input (the message names it)
//   3  harness error (a bug or an environment failure: tool missing, I/O)
//   4  only inconclusive results (e.g. no GPU), nothing mismatched
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace qgpu::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitMismatch = 1,
  kExitUsage = 2,
  kExitHarnessError = 3,
  kExitInconclusive = 4,
};

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

}  // namespace qgpu::cli
