// qgpu/gen/tools/qgpu_gen_run.cpp — runs the machine-program generator and every property of
// gen/properties.h for a while, outside the test framework, and prints a summary.
//
//   qgpu_gen_run [--seconds N] [--seed S] [--cases N] [--policy "name=value ..."] [--print]
//
// Seeds S, S+1, ... (default S = 1, N = 10 seconds; --cases stops after that many cases).
// --print lists each case (header and program) before running it.
// Exit codes: 0 every case held every property, 1 a property failed (the Diag, the case's header
// and the command that replays it are printed), 2 bad arguments.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gen/program_gen.h"
#include "gen/properties.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "qgpu_gen_run: %s\nusage: qgpu_gen_run [--seconds N] [--seed S] [--cases N] "
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
  uint64_t seconds = 10, seed = 1, maxCases = 0;
  std::string policyText;
  bool printCases = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--seconds" || arg == "--seed" || arg == "--cases") {
      const char* v = value();
      uint64_t& out = arg == "--seconds" ? seconds : arg == "--seed" ? seed : maxCases;
      if (!v || !parseU64(v, out)) return usage("a number must follow the flag");
    } else if (arg == "--policy") {
      const char* v = value();
      if (!v) return usage("--policy needs a value");
      policyText = v;
    } else if (arg == "--print") {
      printCases = true;
    } else {
      return usage("unknown argument");
    }
  }
  auto policy = qgpu::gen::parsePolicy(policyText);
  if (!policy.ok()) return usage(policy.error().message.c_str());

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  uint64_t cases = 0, finished = 0, faults = 0, limits = 0, steps = 0;
  for (uint64_t s = seed;; ++s) {
    if (maxCases != 0 ? cases >= maxCases : Clock::now() >= deadline) break;
    auto c = qgpu::gen::generateProgram(*policy, s);
    if (!c.ok()) return usage(c.error().message.c_str());
    if (printCases)
      std::printf("%s\n%s", c->header.c_str(), qgpu::machine::print(c->program).c_str());
    auto result = qgpu::gen::checkCase(*c);
    if (!result.ok()) {
      std::fprintf(stderr,
                   "%s\nreplay: qgpu_gen_run --seed %llu --cases 1 --print --policy \"%s\"\n",
                   result.error().str().c_str(), static_cast<unsigned long long>(s),
                   c->header.substr(c->header.find("policy: ") + 8).c_str());
      return 1;
    }
    ++cases;
    steps += result->blockExecs;
    switch (result->status) {
      case qgpu::oracle::RunStatus::Finished:
        ++finished;
        break;
      case qgpu::oracle::RunStatus::Fault:
        ++faults;
        break;
      case qgpu::oracle::RunStatus::StepLimit:
        ++limits;
        break;
    }
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "qgpu-gen program v%d: %llu cases from seed %llu in %.2f s (%.0f cases/s, every "
      "property checked), %llu steps\n  Finished %llu  Fault %llu  StepLimit %llu\n",
      qgpu::gen::kGeneratorVersion, static_cast<unsigned long long>(cases),
      static_cast<unsigned long long>(seed), elapsed, elapsed > 0 ? cases / elapsed : 0.0,
      static_cast<unsigned long long>(steps), static_cast<unsigned long long>(finished),
      static_cast<unsigned long long>(faults), static_cast<unsigned long long>(limits));
  return 0;
}
