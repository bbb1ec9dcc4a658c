// qgpu/harness/cli/cmd_trace.cpp — `qgpu trace`: pretty-prints a token trace with its decoded
// meaning (block, warp, lanes, registers, memory). The trace comes from running a kernel in the
// interpreter (prompt + run), or from a file of token ids (`--tokens FILE`, whitespace-separated
// decimal ids, as `qgpu trace KERNEL --ids` writes them).
#include <iostream>
#include <sstream>

#include "common/file.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "harness/pipeline.h"

namespace qgpu::cli {

namespace {

struct TraceCmdOptions {
  std::string kernel;
  std::string tokensFile;
  std::string compiler = "clang";
  bool ids = false;       // print token ids (one line) instead of the decoded listing
  bool names = false;     // print token names (one line)
};

// A token file holds decimal ids separated by white space: 16 MiB is over 3 million tokens.
constexpr size_t kMaxTokenFileBytes = size_t{16} << 20;

Expected<std::vector<trace::Token>> readTokens(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxTokenFileBytes, "token file"));
  std::istringstream file(text);
  std::vector<trace::Token> tokens;
  std::string word;
  for (uint32_t index = 0; file >> word; ++index) {
    char* end = nullptr;
    unsigned long id = std::strtoul(word.c_str(), &end, 10);
    if (word.empty() || *end != '\0' || id >= trace::kVocabSize)
      return makeDiag(ErrorKind::TraceInvalid,
                      "token " + std::to_string(index) + " is '" + word + "', not an id below " +
                          std::to_string(trace::kVocabSize),
                      SourceLoc{path, 0, 0});
    tokens.push_back(static_cast<trace::Token>(id));
  }
  return tokens;
}

int runTrace(const TraceCmdOptions& o, const CommonOptions& common) {
  std::vector<trace::Token> tokens;
  if (!o.tokensFile.empty()) {
    auto read = readTokens(o.tokensFile);
    if (!read.ok()) return reportError(read.error());
    tokens = std::move(read).value();
  } else if (!o.kernel.empty()) {
    auto compilers = parseCompilers(o.compiler);
    if (!compilers.ok()) return reportError(compilers.error());
    auto spec = harness::resolveKernel(o.kernel, catalogDir(common));
    if (!spec.ok()) return reportError(spec.error());
    auto built = harness::buildKernel(*spec, compilers->front());
    if (!built.ok()) return reportError(built.error());
    machine::Launch launch = built->image.toMachineLaunch();
    auto run = oracle::run(built->program, launch);
    if (!run.ok()) return reportError(run.error());
    tokens = trace::encodePrompt(built->program, launch);
    tokens.insert(tokens.end(), run->trace.begin(), run->trace.end());
  } else {
    return reportError(makeDiag(ErrorKind::Usage, "give a kernel or --tokens FILE"));
  }

  if (o.ids || o.names) {
    std::string line;
    for (trace::Token t : tokens)
      line += (line.empty() ? "" : " ") + (o.ids ? std::to_string(t) : trace::tokenName(t));
    std::cout << line << "\n";
    return kExitOk;
  }
  std::cout << trace::pretty(tokens);
  // pretty() prints a malformed trace up to the error; the exit code says whether it was one.
  size_t consumed = 0;
  if (!tokens.empty() && trace::familyOf(tokens[0]) == trace::Family::Prog) {
    auto prompt = trace::decodePrompt(tokens, &consumed);
    if (!prompt.ok()) return reportError(prompt.error());
  }
  auto events = trace::decodeRun(std::span(tokens).subspan(consumed));
  if (!events.ok()) return reportError(events.error());
  return kExitOk;
}

}  // namespace

Command addTraceCommand(CLI::App& root, const CommonOptions& common) {
  static TraceCmdOptions o;
  CLI::App* app = root.add_subcommand("trace", "Pretty-print a token trace with decoded meaning");
  app->add_option("kernel", o.kernel, "Run this kernel (catalog name or .cu file) and show its trace");
  app->add_option("--tokens", o.tokensFile, "Read token ids from this file instead");
  app->add_option("--compiler", o.compiler, "clang or nvcc")->capture_default_str();
  app->add_flag("--ids", o.ids, "Print the token ids on one line");
  app->add_flag("--names", o.names, "Print the token names on one line");
  return {app, [&common] { return runTrace(o, common); }};
}

}  // namespace qgpu::cli
