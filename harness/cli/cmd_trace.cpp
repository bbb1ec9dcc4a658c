// qgpu/harness/cli/cmd_trace.cpp — `qgpu trace`: pretty-prints a token trace with its decoded
// meaning (block, warp, lanes, registers, memory). The trace comes from running a kernel in the
// interpreter (prompt + run), or from a file of token ids (`--tokens FILE`, whitespace-separated
// decimal ids, as `qgpu trace KERNEL --ids` writes them). An error in such a file names the file,
// the line:column of the token and its absolute position in the file's sequence ("token 12").
// --json prints {"tokens": [ids], "names": [...], "pretty": "..."} (or the error object). A
// malformed trace is exit 2 (TraceInvalid) whatever is printed: --ids, --names or the listing.
#include <cctype>
#include <iostream>
#include <optional>
#include <sstream>

#include "common/file.h"
#include "common/text.h"
#include "harness/cli/command.h"
#include "harness/cli/expand_flags.h"
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
  ExpandFlags expand;  // --expand-division, --expand-multiply, --expand-mulhi
};

// A token file holds decimal ids separated by white space: 16 MiB is over 3 million tokens.
constexpr size_t kMaxTokenFileBytes = size_t{16} << 20;

// The ids of a token file and where each one starts in it.
struct TokenFile {
  std::string path;
  std::vector<trace::Token> tokens;
  std::vector<SourceLoc> where;  // where[k]: the file, line and column of tokens[k]

  // A decoder's error located in the file: its token index (Diag::index, absolute in `tokens`)
  // becomes the token's line:column; at the end of the input, the file alone.
  Diag locate(Diag d) const {
    d.loc = SourceLoc{path, 0, 0};
    if (d.index && *d.index < where.size()) d.loc = where[*d.index];
    return d;
  }
};

Expected<TokenFile> parseTokens(const std::string& text, const std::string& path) {
  TokenFile f;
  f.path = path;
  uint32_t line = 1, column = 1;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f') {
      if (c == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
      ++i;
      continue;
    }
    size_t start = i;
    SourceLoc at{path, line, column};
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    column += static_cast<uint32_t>(i - start);
    std::string_view word(text.data() + start, i - start);
    uint64_t id = 0;
    bool digits = word.size() <= 6;
    for (char d : word) {
      digits = digits && d >= '0' && d <= '9';
      if (digits) id = id * 10 + static_cast<uint64_t>(d - '0');
    }
    if (!digits || id >= trace::kVocabSize) {
      Diag d = makeDiag(ErrorKind::TraceInvalid,
                        "token " + std::to_string(f.tokens.size()) + " is '" + echo(word) +
                            "', not a decimal id below " + std::to_string(trace::kVocabSize),
                        at);
      d.index = f.tokens.size();
      return d;
    }
    f.tokens.push_back(static_cast<trace::Token>(id));
    f.where.push_back(at);
  }
  return f;
}

Expected<TokenFile> readTokens(const std::string& path) {
  QGPU_TRY(text, readInputFile(path, kMaxTokenFileBytes, "token file"));
  return parseTokens(text, path);
}

int runTrace(const TraceCmdOptions& o, const CommonOptions& common) {
  std::vector<trace::Token> tokens;
  std::optional<TokenFile> file;  // when the tokens come from --tokens
  if (!o.tokensFile.empty()) {
    auto read = readTokens(o.tokensFile);
    if (!read.ok()) return reportError(read.error());
    file = std::move(read).value();
    tokens = file->tokens;
  } else if (!o.kernel.empty()) {
    auto compilers = parseCompilers(o.compiler);
    if (!compilers.ok()) return reportError(compilers.error());
    auto spec = harness::resolveKernel(o.kernel, catalogDir(common));
    if (!spec.ok()) return reportError(spec.error());
    harness::BuildOptions build;
    o.expand.applyTo(build);
    auto built = harness::buildKernel(*spec, compilers->front(), build);
    if (!built.ok()) return reportError(built.error());
    machine::Launch launch = built->image.toMachineLaunch();
    auto run = oracle::run(built->program, launch);
    if (!run.ok()) return reportError(run.error());
    tokens = trace::encodePrompt(built->program, launch);
    tokens.insert(tokens.end(), run->trace.begin(), run->trace.end());
  } else {
    return reportError(makeDiag(ErrorKind::Usage, "give a kernel or --tokens FILE"));
  }

  // A malformed trace is an error, located in the token file when it came from one (the decoders'
  // token indexes are absolute: the run's are offset by the prompt's length).
  auto located = [&](const Diag& d) { return file ? file->locate(d) : d; };
  size_t consumed = 0;
  std::optional<Diag> malformed;
  if (!tokens.empty() && trace::familyOf(tokens[0]) == trace::Family::Prog) {
    auto prompt = trace::decodePrompt(tokens, &consumed);
    if (!prompt.ok()) malformed = located(prompt.error());
  }
  if (!malformed) {
    auto events = trace::decodeRun(std::span(tokens).subspan(consumed), consumed);
    if (!events.ok()) malformed = located(events.error());
  }

  if (common.json) {
    if (malformed) return reportError(*malformed);
    std::vector<std::string> names;
    for (trace::Token t : tokens) names.push_back(trace::tokenName(t));
    std::cout << dumpJson({{"tokens", tokens}, {"names", names}, {"pretty", trace::pretty(tokens)}})
              << "\n";
    return kExitOk;
  }
  if (o.ids || o.names) {
    std::string line;
    for (trace::Token t : tokens)
      line += (line.empty() ? "" : " ") + (o.ids ? std::to_string(t) : trace::tokenName(t));
    std::cout << line << "\n";
    return malformed ? reportError(*malformed) : kExitOk;
  }
  // pretty() prints a malformed trace up to the error; the exit code says whether it was one.
  std::cout << trace::pretty(tokens);
  return malformed ? reportError(*malformed) : kExitOk;
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
  addExpandFlags(app, o.expand);
  return {app, [&common] { return runTrace(o, common); }};
}

}  // namespace qgpu::cli
