// qgpu/harness/cli/util.h — small helpers the subcommands share: error reporting (text and
// JSON), option parsing of compiler names, the catalog location, and the reproduce line printed
// on failure.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/diag.h"
#include "harness/cli/command.h"
#include "host/cuda/compile.h"

namespace qgpu::cli {

// The one error reporter of every subcommand (cmd_expr and cmd_model included). It always prints
// "qgpu: <file:line:col: error[Kind]: message>" on stderr (NoDevice as "qgpu: skipped
// (inconclusive): ..."). With --json (setJsonOutput(true), which main calls after parsing) it also
// prints one object on stdout, and the command prints nothing else there:
//   {"error": {"kind": "PtxSyntax", "message": "...", "file": "k.ptx", "line": 3, "column": 7,
//              "outcome": "bad-input", "exit": 2}}
// (file "" and line/column 0 when unknown). Returns the exit code common/outcome.h gives the
// kind: bad input 2, inconclusive 4, mismatch 1, harness error 3.
int reportError(const Diag& diag);
void setJsonOutput(bool json);
bool jsonOutput();

// {"kind", "message", "file", "line", "column", "outcome", "exit"} of a Diag (reportError's
// "error" member), for commands that report several results in one JSON document.
nlohmann::json errorJson(const Diag& diag);

// JSON text for stdout: invalid UTF-8 in strings (a compiler's message, a kernel's bytes) becomes
// U+FFFD instead of throwing. Every subcommand prints its JSON through this.
std::string dumpJson(const nlohmann::json& j);

// "clang" / "nvcc" / "both" -> compilers; Usage error otherwise.
Expected<std::vector<host::Compiler>> parseCompilers(const std::string& name);

std::string catalogDir(const CommonOptions& common);

// The exact command line, for "reproduce with:" lines.
std::string commandLine();
void setCommandLine(int argc, char** argv);

}  // namespace qgpu::cli
