// qgpu/harness/cli/util.h — small helpers the subcommands share: error printing, option parsing
// of compiler names, the catalog location, and the reproduce line printed on failure.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/diag.h"
#include "harness/cli/command.h"
#include "host/cuda/compile.h"

namespace qgpu::cli {

// Prints "qgpu: <diag>" on stderr and returns the exit code its kind implies (common/outcome.h:
// bad input 2, inconclusive 4, mismatch 1, harness error 3).
int reportError(const Diag& diag);

// "clang" / "nvcc" / "both" -> compilers; Usage error otherwise.
Expected<std::vector<host::Compiler>> parseCompilers(const std::string& name);

std::string catalogDir(const CommonOptions& common);

// The exact command line, for "reproduce with:" lines.
std::string commandLine();
void setCommandLine(int argc, char** argv);

}  // namespace qgpu::cli
