// qgpu/harness/cli/cmd_reduce.cpp — `qgpu reduce FILE --predicate CMD`: shrinks a CUDA kernel
// file or a PTX file while the predicate still finds it interesting (harness/reduce.h,
// docs/reduce.md).
//
//   qgpu reduce FILE.cu|FILE.ptx --predicate CMD [--timeout S] [--budget N] [--runs N] [--out F]
//
// The predicate runs through /bin/sh -c in a scratch directory holding only the candidate, under
// FILE's own name ($QGPU_REDUCE_FILE): exit 0 = still interesting; anything else, a signal or the
// timeout = not. The original must be interesting --runs times (default 2) first. Progress lines
// on stderr; the reduced file on stdout, or into F with --out (written atomically); a summary
// (lines and bytes before and after, predicate calls, rounds, per-pass counts) on stderr, or as
// JSON on stdout with --json (the text included when there is no --out).
// Exit codes: 0 reduced (also when nothing could be removed, or the budget ran out: the result is
// still interesting); 2 bad input (FILE missing, empty or not .cu/.ptx; the predicate not found,
// not interesting on the original, or nondeterministic); 3 harness error.
#include <cstdio>
#include <filesystem>

#include "common/file.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "harness/reduce.h"

namespace qgpu::cli {

namespace {

struct ReduceCmdOptions {
  std::string file;
  std::string predicate;
  double timeout = 30;
  int budget = 2000;
  int runs = 2;
  std::string out;
  bool quiet = false;
};

constexpr size_t kMaxReduceInput = size_t{4} << 20;  // the PTX front end's own cap

int runReduceCommand(const ReduceCmdOptions& o) {
  auto kind = reduce::fileKindOf(o.file);
  if (!kind) return reportError(kind.error());
  auto text = readInputFile(o.file, kMaxReduceInput, "file to reduce");
  if (!text) return reportError(text.error());
  reduce::ReduceOptions options;
  options.predicate.command = o.predicate;
  options.predicate.timeoutSeconds = o.timeout;
  options.predicate.fileName = std::filesystem::path(o.file).filename().string();
  options.budget = o.budget;
  options.determinismRuns = o.runs;
  if (!o.quiet)
    options.progress = [](const std::string& line) {
      std::fprintf(stderr, "reduce: %s\n", line.c_str());
    };
  auto r = reduce::reduce(*text, *kind, options);
  if (!r) {
    Diag d = r.error();
    if (d.loc.file.empty()) d.loc.file = o.file;
    return reportError(d);
  }
  if (!o.out.empty()) {
    auto w = writeFileAtomic(o.out, r->text);
    if (!w) return reportError(w.error());
  }
  if (jsonOutput()) {
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& p : r->passes)
      passes.push_back({{"name", p.name}, {"tried", p.tried}, {"accepted", p.accepted}});
    nlohmann::json j = {{"file", o.file},
                        {"linesBefore", r->linesBefore},
                        {"linesAfter", r->linesAfter},
                        {"bytesBefore", r->bytesBefore},
                        {"bytesAfter", r->bytesAfter},
                        {"predicateCalls", r->predicateCalls},
                        {"cacheHits", r->cacheHits},
                        {"rounds", r->rounds},
                        {"budgetExhausted", r->budgetExhausted},
                        {"passes", passes}};
    if (o.out.empty())
      j["text"] = r->text;
    else
      j["out"] = o.out;
    std::printf("%s\n", dumpJson(j).c_str());
  } else {
    if (o.out.empty()) std::fwrite(r->text.data(), 1, r->text.size(), stdout);
    std::fprintf(stderr,
                 "reduce: %s: %d -> %d lines (%zu -> %zu bytes), %d predicate calls (%d candidates "
                 "seen before), "
                 "%d rounds%s%s\n",
                 o.file.c_str(), r->linesBefore, r->linesAfter, r->bytesBefore, r->bytesAfter,
                 r->predicateCalls, r->cacheHits, r->rounds,
                 r->budgetExhausted ? ", stopped by the budget" : ", fixed point",
                 o.out.empty() ? "" : (", written to " + o.out).c_str());
  }
  return kExitOk;
}

}  // namespace

Command addReduceCommand(CLI::App& root, const CommonOptions&) {
  static ReduceCmdOptions o;
  CLI::App* app = root.add_subcommand(
      "reduce", "Shrink a .cu or .ptx file while a predicate still holds (C-Reduce style)");
  app->add_option("file", o.file, "The .cu kernel file or .ptx file")->required();
  app->add_option(
         "--predicate", o.predicate,
         "Shell command run in a scratch dir with the candidate (same name): exit 0 = interesting")
      ->required();
  app->add_option("--timeout", o.timeout, "Seconds per predicate run; over = not interesting")
      ->capture_default_str();
  app->add_option("--budget", o.budget, "Predicate calls in all")->capture_default_str();
  app->add_option("--runs", o.runs,
                  "The original must be interesting this many times (determinism)")
      ->capture_default_str();
  app->add_option("--out", o.out, "Write the reduced file here (default: stdout)");
  app->add_flag("--quiet", o.quiet, "No progress lines");
  return {app, [] { return runReduceCommand(o); }};
}

}  // namespace qgpu::cli
