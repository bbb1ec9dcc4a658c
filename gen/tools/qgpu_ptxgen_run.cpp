// qgpu/gen/tools/qgpu_ptxgen_run.cpp — runs the random PTX generator (gen/ptx_gen.h) and its
// property (parse -> lower -> interpret == the PTX evaluator, or a typed refusal) for a while,
// outside the test framework, alternating the clang and nvcc dialects, and prints a summary.
//
//   qgpu_ptxgen_run [--seconds N] [--seed S] [--cases N] [--policy "name=value ..."] [--print]
//
// Seeds S, S+1, ... (default S = 1, N = 10 seconds; --cases stops after that many cases; each
// seed is run in both dialects). --print writes each case's PTX to stdout before running it.
// Exit codes: 0 every case held the property, 1 a case failed (the Diag, the case's header and
// the command that replays it are printed), 2 bad arguments.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "gen/ptx_gen.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "qgpu_ptxgen_run: %s\nusage: qgpu_ptxgen_run [--seconds N] [--seed S] [--cases N] "
               "[--policy \"name=value ...\"] [--print]\n",
               why);
  return 2;
}

bool parseU64(const char* text, uint64_t& out) {
  char* end = nullptr;
  out = std::strtoull(text, &end, 10);
  return end != text && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qgpu::gen;
  uint64_t seconds = 10, seed = 1, maxCases = 0;
  std::string policyText;
  bool print = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    if (a == "--print") {
      print = true;
    } else if (a == "--seconds" && hasValue) {
      if (!parseU64(argv[++i], seconds)) return usage("--seconds needs a number");
    } else if (a == "--seed" && hasValue) {
      if (!parseU64(argv[++i], seed)) return usage("--seed needs a number");
    } else if (a == "--cases" && hasValue) {
      if (!parseU64(argv[++i], maxCases)) return usage("--cases needs a number");
    } else if (a == "--policy" && hasValue) {
      policyText = argv[++i];
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  auto policy = parsePtxPolicy(policyText);
  if (!policy) return usage(policy.error().message.c_str());
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  uint64_t cases = 0, match = 0, refused = 0;
  std::map<std::string, uint64_t> reasons;
  double lastProgress = 0;
  for (uint64_t s = seed;; ++s) {
    for (PtxDialect d : {PtxDialect::Clang, PtxDialect::Nvcc}) {
      auto c = generatePtx(*policy, s, d);
      if (!c) return usage(c.error().message.c_str());
      if (print) std::printf("%s\n", c->ptx.c_str());
      auto r = checkPtxCase(*c);
      ++cases;
      if (!r) {
        std::printf("FAIL %s\nreplay: qgpu_ptxgen_run --seed %llu --cases 2 --print --policy \"%s\"\n",
                    r.error().str().c_str(), static_cast<unsigned long long>(s),
                    c->header.substr(c->header.find("policy: ") + 8, c->header.find(" dialect=") - c->header.find("policy: ") - 8).c_str());
        return 1;
      }
      if (r->verdict == PtxVerdict::Match) {
        ++match;
      } else {
        ++refused;
        ++reasons[std::string(qgpu::kindName(r->refusal.kind)) + ": " + r->refusal.message.substr(0, 70)];
      }
    }
    double t = elapsed();
    if (t - lastProgress >= 5) {
      std::fprintf(stderr, "... %llu cases, %.0f cases/s\n", static_cast<unsigned long long>(cases), cases / t);
      lastProgress = t;
    }
    if ((maxCases && cases >= maxCases) || (!maxCases && t >= static_cast<double>(seconds))) break;
  }
  double t = elapsed();
  std::printf("random PTX: %llu cases in %.2f s (%.0f cases/s): %llu match, %llu refused, 0 failed\n",
              static_cast<unsigned long long>(cases), t, cases / (t > 0 ? t : 1),
              static_cast<unsigned long long>(match), static_cast<unsigned long long>(refused));
  for (const auto& [why, n] : reasons) std::printf("  %6llu  %s\n", static_cast<unsigned long long>(n), why.c_str());
  return 0;
}
