// qgpu/harness/cli/cmd_compile.cpp — `qgpu compile`: shows the PTX a compiler makes of a kernel and
// the machine program lowering makes of that PTX. Also takes a .ptx file directly (then the
// parameter values come from --param).
#include <iostream>

#include "common/file.h"
#include "common/text.h"
#include "harness/cli/command.h"
#include "harness/cli/expand_flags.h"
#include "harness/cli/util.h"
#include "harness/pipeline.h"
#include "host/ptx/parser.h"

namespace qgpu::cli {

namespace {

struct CompileCmdOptions {
  std::string kernel;                 // catalog name, .cu file or .ptx file
  std::string compiler = "clang";
  bool ptxOnly = false;
  bool programOnly = false;
  std::string entry;                  // .ptx input: the kernel (default: the only one)
  std::vector<int64_t> params;        // .ptx input: parameter values
  ExpandFlags expand;  // --expand-division, --expand-multiply, --expand-mulhi
};

nlohmann::json statsJson(const lower::LowerStats& s) {
  return {{"ptxInstructions", s.ptxInstructions}, {"basicBlocks", s.basicBlocks},
          {"machineOps", s.machineOps},           {"machineBlocks", s.machineBlocks},
          {"maxLive", s.maxLive},                 {"spillSlots", s.spillSlots}};
}

void printStats(const lower::LowerStats& s) {
  std::cout << "// " << s.ptxInstructions << " PTX instructions in " << s.basicBlocks
            << " basic blocks -> " << s.machineOps << " machine ops in " << s.machineBlocks
            << " blocks; max live " << s.maxLive << ", spill slots " << s.spillSlots << "\n";
}

int compilePtxFile(const CompileCmdOptions& o, const CommonOptions& common) {
  auto text = readInputFile(o.kernel, ptx::kMaxInputBytes, "PTX file");
  if (!text.ok()) return reportError(text.error());
  auto module = ptx::parse(*text, o.kernel);
  if (!module.ok()) return reportError(module.error());
  lower::LowerOptions options;
  options.entry = o.entry;
  for (int64_t v : o.params) options.params.push_back(static_cast<uint32_t>(v));
  lower::LowerStats stats;
  auto program = lower::lower(*module, options, &stats);
  if (!program.ok()) return reportError(program.error());
  lower::ExpandDivisionStats division;
  lower::ExpandMultiplyStats multiply;
  if (o.expand.any()) {
    harness::BuildOptions build;
    o.expand.applyTo(build);
    program = harness::expandProgram(std::move(*program), build, stats.opLocs, &division, &multiply);
    if (!program.ok()) return reportError(program.error());
  }
  if (common.json) {
    nlohmann::json out = {{"file", o.kernel}, {"stats", statsJson(stats)}, {"program", machine::print(*program)}};
    addExpansionJson(out, o.expand, division, multiply);
    std::cout << dumpJson(out) << "\n";
    return kExitOk;
  }
  printStats(stats);
  for (const std::string& line : expansionLines(o.expand, division, multiply)) std::cout << "// " << line << "\n";
  std::cout << machine::print(*program);
  return kExitOk;
}

int runCompile(const CompileCmdOptions& o, const CommonOptions& common) {
  if (o.kernel.ends_with(".ptx")) return compilePtxFile(o, common);
  auto compilers = parseCompilers(o.compiler);
  if (!compilers.ok()) return reportError(compilers.error());
  auto spec = harness::resolveKernel(o.kernel, catalogDir(common));
  if (!spec.ok()) return reportError(spec.error());
  // The first failing compiler's exit code; with --json one document holds every compiler's
  // result or error.
  int code = kExitOk;
  nlohmann::json results = nlohmann::json::array();
  for (host::Compiler compiler : *compilers) {
    harness::BuildOptions build;
    o.expand.applyTo(build);
    auto built = harness::buildKernel(*spec, compiler, build);
    if (!built.ok()) {
      int c = exitCode(built.error());
      if (code == kExitOk) code = c;
      if (common.json) {
        std::fprintf(stderr, "qgpu: %s\n", built.error().str().c_str());
        results.push_back(
            {{"compiler", host::compilerName(compiler)}, {"error", errorJson(built.error())}});
      } else {
        reportError(built.error());
      }
      continue;
    }
    if (common.json) {
      nlohmann::json r = {{"compiler", host::compilerName(compiler)},
                          {"entry", built->entry},
                          {"ptxDigest", built->ptxDigest}};
      if (!o.programOnly) r["ptx"] = built->ptx;
      if (!o.ptxOnly) {
        r["stats"] = statsJson(built->stats);
        addExpansionJson(r, o.expand, built->division, built->multiply);
        r["program"] = machine::print(built->program);
      }
      results.push_back(r);
      continue;
    }
    if (!o.programOnly) {
      std::cout << "// ---- PTX (" << host::compilerName(compiler) << ", " << built->ptxDigest
                << ") ----\n"
                << built->ptx << "\n";
    }
    if (!o.ptxOnly) {
      std::cout << "// ---- machine program (" << host::compilerName(compiler) << ") ----\n";
      printStats(built->stats);
      for (const std::string& line : expansionLines(o.expand, built->division, built->multiply))
        std::cout << "// " << line << "\n";
      std::cout << machine::print(built->program);
    }
  }
  if (common.json) std::cout << dumpJson({{"kernel", spec->name}, {"results", results}}) << "\n";
  return code;
}

}  // namespace

Command addCompileCommand(CLI::App& root, const CommonOptions& common) {
  static CompileCmdOptions o;
  CLI::App* app = root.add_subcommand("compile", "Show the PTX and the lowered machine program");
  app->add_option("kernel", o.kernel, "Catalog kernel name, .cu file, or .ptx file")->required();
  app->add_option("--compiler", o.compiler, "clang, nvcc or both")->capture_default_str();
  app->add_flag("--ptx", o.ptxOnly, "Only the PTX");
  app->add_flag("--program", o.programOnly, "Only the machine program");
  addExpandFlags(app, o.expand);
  app->add_option("--entry", o.entry, ".ptx input: the kernel to lower");
  app->add_option("--param", o.params, ".ptx input: parameter values in order (pointers: byte "
                                       "addresses in machine memory)");
  return {app, [&common] { return runCompile(o, common); }};
}

}  // namespace qgpu::cli
