// qgpu/harness/cli/cmd_fuzz.cpp — `qgpu fuzz`: runs one of the random generators (gen/) and its
// property outside the test framework, for a time or a number of cases.
//
//   qgpu fuzz --gen cuda|ptx|program [--seconds N] [--cases N] [--seed S] [--policy "k=v ..."]
//             [--compiler clang|nvcc|both] [--batch N] [--out DIR] [--print]
//
// Seeds S, S+1, ... (default S = 1, N = 10 seconds; --cases stops after that many). Per generator:
//   cuda     gen/cuda_check.h: clang-14 and/or nvcc, batches of --batch kernels per compiler run;
//            ptxeval, lowering + interpreter == the generator's expectation, compilers agree
//   ptx      gen/ptx_gen.h: checkPtxCase, each seed in both dialects (clang and nvcc spelling)
//   program  gen/properties.h: checkCase (verify, determinism, termination, trace round trips)
// Verdicts: match; refused (limit) and refused (unsupported), counted as inconclusive, never as
// failures; failed (the property did not hold: a finding). Each failing case is written to DIR
// (default: nothing is written) as <gen>-<seed>[.cu|.ptx|.txt] with its header (generator
// version, seed, policy) and the failure; stderr gets the command that replays it.
// --print writes each case (header and text) to stdout before it runs. A progress line on stderr
// when it is a terminal; a summary on stdout (JSON with --json): cases, seconds, cases/s, the
// verdict counts, and for `program` how the runs ended (Finished, Fault, StepLimit: the policy's
// mix, each a checked outcome).
// Exit codes (common/outcome.h's tally rule): 0 nothing failed and something matched, 1 a case
// failed, 2 bad usage or policy, 3 harness error, 4 nothing matched (every case refused, or no
// compiler installed).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/text.h"
#include "gen/cuda_check.h"
#include "gen/program_gen.h"
#include "gen/properties.h"
#include "gen/ptx_gen.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"
#include "oracle/machine.h"

namespace qgpu::cli {

namespace {

struct FuzzOptions {
  std::string gen = "cuda";
  double seconds = 10;
  uint64_t cases = 0;  // 0: until --seconds
  uint64_t seed = 1;
  std::string policy;
  std::string compiler = "both";
  uint32_t batch = 32;
  std::string outDir;
  bool print = false;
};

using Clock = std::chrono::steady_clock;

struct Summary {
  uint64_t cases = 0, match = 0, refusedLimit = 0, refusedUnsupported = 0, failed = 0;
  std::map<std::string, uint64_t> reasons;  // refusal messages' first words, for the summary
  std::map<std::string, uint64_t> outcomes;  // program: how the checked runs ended
  Tally tally() const {
    Tally t;
    t.counts[static_cast<int>(Verdict::Match)] = static_cast<int>(match);
    t.counts[static_cast<int>(Verdict::Inconclusive)] = static_cast<int>(refusedLimit + refusedUnsupported);
    t.counts[static_cast<int>(Verdict::Mismatch)] = static_cast<int>(failed);
    return t;
  }
};

class Progress {
 public:
  explicit Progress(const std::string& gen) : gen_(gen), tty_(isatty(STDERR_FILENO) == 1), last_(Clock::now()) {}
  void update(const Summary& s, Clock::time_point start, bool force = false) {
    if (!tty_) return;
    auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    double t = std::chrono::duration<double>(now - start).count();
    std::fprintf(stderr, "\r%s: %llu cases, %.1f s, %.1f/s: %llu match, %llu refused, %llu failed   ", gen_.c_str(),
                 static_cast<unsigned long long>(s.cases), t, t > 0 ? s.cases / t : 0.0,
                 static_cast<unsigned long long>(s.match),
                 static_cast<unsigned long long>(s.refusedLimit + s.refusedUnsupported),
                 static_cast<unsigned long long>(s.failed));
  }
  void done() {
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  std::string gen_;
  bool tty_;
  Clock::time_point last_;
};

// A policy error repeats the user's text: echoed (common/text.h), whichever parser made it.
template <typename T>
Expected<T> echoed(Expected<T> e) {
  if (e) return e;
  Diag d = e.error();
  d.message = echo(d.message, 400);
  return d;
}

std::string policyPart(const std::string& header) {
  size_t p = header.find("policy: ");
  return p == std::string::npos ? "" : header.substr(p + 8);
}

// Writes a failing case and prints how to replay it.
void recordFailure(const FuzzOptions& o, const std::string& file, const std::string& content, uint64_t seed,
                   const std::string& header, const Diag& why) {
  std::fprintf(stderr, "qgpu fuzz: FAILED %s\n%s\nreplay: qgpu fuzz --gen %s --seed %llu --cases 1 --policy \"%s\"\n",
               header.c_str(), why.str().c_str(), o.gen.c_str(), static_cast<unsigned long long>(seed),
               policyPart(header).c_str());
  if (o.outDir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.outDir, ec);
  std::ofstream f(std::filesystem::path(o.outDir) / file);
  f << content;
  std::ofstream w(std::filesystem::path(o.outDir) / (file + ".failure.txt"));
  w << header << "\n" << why.str() << "\n";
}

bool timeUp(const FuzzOptions& o, const Summary& s, Clock::time_point start) {
  if (o.cases) return s.cases >= o.cases;
  return std::chrono::duration<double>(Clock::now() - start).count() >= o.seconds;
}

void countRefusal(Summary& s, const Diag& d, bool limit) {
  ++(limit ? s.refusedLimit : s.refusedUnsupported);
  // The reason without what is particular to the case: a quoted name becomes `*` (a quoted
  // instruction keeps its opcode), digits become N, and it ends at the first ':', '(' or line.
  const std::string& msg = d.message;
  std::string m;
  for (size_t i = 0; i < msg.size() && msg[i] != ':' && msg[i] != '(' && msg[i] != '\n'; ++i) {
    if (msg[i] == '`') {
      size_t close = msg.find('`', i + 1);
      if (close == std::string::npos) break;
      std::string inner = msg.substr(i + 1, close - i - 1);
      bool instruction = m.size() >= 4 && m.compare(m.size() - 4, 4, "PTX ") == 0;
      m += "`" + (instruction ? inner.substr(0, inner.find(' ')) : std::string("*")) + "`";
      i = close;
    } else if (msg[i] >= '0' && msg[i] <= '9') {
      while (i + 1 < msg.size() && msg[i + 1] >= '0' && msg[i + 1] <= '9') ++i;
      m += 'N';
    } else {
      m += msg[i];
    }
  }
  ++s.reasons[m.substr(0, 100)];
}

Expected<Summary> fuzzCuda(const FuzzOptions& o, Clock::time_point start, Progress& progress) {
  QGPU_TRY(policy, echoed(gen::parseCudaPolicy(o.policy)));
  QGPU_TRY(compilers, parseCompilers(o.compiler));
  Summary s;
  gen::CudaBatchStats stats;
  for (uint64_t seed = o.seed; !timeUp(o, s, start);) {
    std::vector<gen::CudaCase> batch;
    uint64_t n = o.batch;
    if (o.cases) n = std::min<uint64_t>(n, o.cases - s.cases);
    for (uint64_t i = 0; i < n; ++i, ++seed) {
      QGPU_TRY(c, gen::generateCuda(policy, seed));
      if (o.print) std::printf("%s\n", c.text.c_str());
      batch.push_back(std::move(c));
    }
    QGPU_TRY(results, gen::checkCudaBatch(batch, compilers, &stats));
    for (size_t i = 0; i < batch.size(); ++i) {
      ++s.cases;
      const auto& r = results[i];
      if (!r) {
        ++s.failed;
        recordFailure(o, batch[i].name + ".cu", batch[i].text, seed - batch.size() + i, batch[i].header, r.error());
        continue;
      }
      // A case matches if every leg that ran matched; it is refused if no leg ran.
      bool ran = false;
      for (const auto& leg : r->legs) {
        if (leg.verdict == gen::CudaVerdict::Match) ran = true;
        else countRefusal(s, leg.refusal, leg.verdict == gen::CudaVerdict::RefusedLimit);
      }
      if (ran) ++s.match;
      // countRefusal counted legs; a case with one leg refused and one matched counts as a match
      // and as a refusal of that leg.
    }
    progress.update(s, start);
  }
  if (!jsonOutput())
    std::printf("compilers: %d runs, %.2f s compiling, %.2f s checking (%.1f kernels per compiler run)\n",
                stats.compilerRuns, stats.compileSeconds, stats.checkSeconds,
                stats.compilerRuns ? double(s.cases) * double(compilers.size()) / stats.compilerRuns : 0.0);
  return s;
}

Expected<Summary> fuzzPtx(const FuzzOptions& o, Clock::time_point start, Progress& progress) {
  QGPU_TRY(policy, echoed(gen::parsePtxPolicy(o.policy)));
  Summary s;
  for (uint64_t seed = o.seed; !timeUp(o, s, start); ++seed) {
    for (gen::PtxDialect d : {gen::PtxDialect::Clang, gen::PtxDialect::Nvcc}) {
      QGPU_TRY(c, gen::generatePtx(policy, seed, d));
      if (o.print) std::printf("%s\n", c.ptx.c_str());
      ++s.cases;
      auto r = gen::checkPtxCase(c);
      if (!r) {
        ++s.failed;
        recordFailure(o, "ptx-" + std::to_string(seed) + "-" + gen::dialectName(d) + ".ptx", c.ptx, seed, c.header,
                      r.error());
      } else if (r->verdict == gen::PtxVerdict::Refused) {
        countRefusal(s, r->refusal, r->refusal.kind == ErrorKind::OverLimit);
      } else {
        ++s.match;
      }
    }
    progress.update(s, start);
  }
  return s;
}

Expected<Summary> fuzzProgram(const FuzzOptions& o, Clock::time_point start, Progress& progress) {
  QGPU_TRY(policy, echoed(gen::parsePolicy(o.policy)));
  Summary s;
  for (uint64_t seed = o.seed; !timeUp(o, s, start); ++seed) {
    QGPU_TRY(c, gen::generateProgram(policy, seed));
    const std::string text = c.header + "\n" + machine::print(c.program);
    if (o.print) std::printf("%s\n", text.c_str());
    ++s.cases;
    auto r = gen::checkCase(c);
    if (!r) {
      ++s.failed;
      recordFailure(o, "program-" + std::to_string(seed) + ".txt", text, seed, c.header, r.error());
    } else {
      ++s.match;  // every property held (a Fault or StepLimit the policy asked for included)
      ++s.outcomes[gen::statusName(r->status)];
    }
    progress.update(s, start);
  }
  return s;
}

int runFuzz(const FuzzOptions& o) {
  if (o.batch < 1 || o.batch > 512) return reportError(makeDiag(ErrorKind::Usage, "--batch must be 1..512"));
  if (!(o.seconds >= 0) || o.seconds > 1e7) return reportError(makeDiag(ErrorKind::Usage, "--seconds must be 0..1e7"));
  const auto start = Clock::now();
  Progress progress(o.gen);
  Expected<Summary> s = o.gen == "cuda"  ? fuzzCuda(o, start, progress)
                        : o.gen == "ptx" ? fuzzPtx(o, start, progress)
                        : o.gen == "program"
                            ? fuzzProgram(o, start, progress)
                            : Expected<Summary>(makeDiag(ErrorKind::Usage, "--gen must be cuda, ptx or program, not '" + echo(o.gen) + "'"));
  progress.done();
  if (!s) return reportError(s.error());
  const double t = std::chrono::duration<double>(Clock::now() - start).count();
  const double rate = t > 0 ? double(s->cases) / t : 0.0;
  const Tally tally = s->tally();
  if (jsonOutput()) {
    nlohmann::json j = {{"gen", o.gen},
                        {"seed", o.seed},
                        {"cases", s->cases},
                        {"seconds", t},
                        {"casesPerSecond", rate},
                        {"match", s->match},
                        {"refusedLimit", s->refusedLimit},
                        {"refusedUnsupported", s->refusedUnsupported},
                        {"failed", s->failed},
                        {"exit", exitCode(tally)}};
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [m, n] : s->reasons) reasons[m] = n;
    j["refusals"] = reasons;
    if (!s->outcomes.empty()) j["outcomes"] = s->outcomes;
    std::printf("%s\n", dumpJson(j).c_str());
  } else {
    std::printf("fuzz %s: %llu cases from seed %llu in %.2f s (%.1f cases/s): %llu match, %llu refused (limit), "
                "%llu refused (unsupported), %llu failed\n",
                o.gen.c_str(), static_cast<unsigned long long>(s->cases), static_cast<unsigned long long>(o.seed), t,
                rate, static_cast<unsigned long long>(s->match), static_cast<unsigned long long>(s->refusedLimit),
                static_cast<unsigned long long>(s->refusedUnsupported), static_cast<unsigned long long>(s->failed));
    for (const auto& [m, n] : s->reasons)
      std::printf("  refused %llu x: %s\n", static_cast<unsigned long long>(n), m.c_str());
    if (!s->outcomes.empty()) {
      std::printf("  runs ended:");
      for (const auto& [m, n] : s->outcomes) std::printf(" %s %llu", m.c_str(), static_cast<unsigned long long>(n));
      std::printf("\n");
    }
  }
  return exitCode(tally);
}

}  // namespace

Command addFuzzCommand(CLI::App& root, const CommonOptions&) {
  static FuzzOptions o;
  CLI::App* app = root.add_subcommand("fuzz", "Run a random generator and its property for a while (gen/)");
  app->add_option("--gen", o.gen, "cuda, ptx or program")->capture_default_str();
  app->add_option("--seconds", o.seconds, "Stop after this long (unless --cases)")->capture_default_str();
  app->add_option("--cases", o.cases, "Stop after this many cases (0: use --seconds)")->capture_default_str();
  app->add_option("--seed", o.seed, "First seed (then S+1, ...)")->capture_default_str();
  app->add_option("--policy", o.policy, "Policy fields \"name=value ...\" (the rest keep their defaults)");
  app->add_option("--compiler", o.compiler, "cuda: clang, nvcc or both")->capture_default_str();
  app->add_option("--batch", o.batch, "cuda: kernels per compiler run (one translation unit)")->capture_default_str();
  app->add_option("--out", o.outDir, "Write each failing case (with its seed and policy) under this directory");
  app->add_flag("--print", o.print, "Write each case (header and text) to stdout before it runs");
  return {app, [] { return runFuzz(o); }};
}

}  // namespace qgpu::cli
