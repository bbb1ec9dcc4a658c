// qgpu/host/ptx/tests/typecheck_ptxas_test.cpp — the front end's operand typing against NVIDIA's
// assembler (label tools; skipped with the reason when clang-14, nvcc or ptxas is missing):
// 1. each hand-written twin of typecheck_cases.h is judged by ptxas as the table says;
// 2. differential: every catalog kernel's PTX, from both compilers, is mutated deterministically
//    (a register swapped for one of another width or kind, an instruction type suffix changed,
//    an address register swapped for a 32-bit one), and parse()+verify() may accept a mutant
//    only if `ptxas -arch=sm_75` accepts it. Refusing one that ptxas accepts is allowed (the
//    front end takes a subset), and is counted in the summary the test prints.
// QGPU_TYPECHECK_MUTANTS (default 3) sets the mutants per PTX file, to keep the run under a
// minute on two cores; the seed is the file's name, so a failure reproduces.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/digest.h"
#include "host/cuda/compile.h"
#include "host/ptx/parser.h"
#include "host/ptx/tests/typecheck_cases.h"
#include "kernels/catalog.h"

namespace qgpu::ptx {
namespace {

bool ptxasAccepts(const std::string& text) { return host::ptxasCheck(text, "sm_75").ok(); }

TEST(PtxTypeCheckPtxas, HandWrittenTwinsAreJudgedByPtxasAsTheTableSays) {
  if (!host::ptxasAvailable()) GTEST_SKIP() << "tool missing: " << host::ptxasPath().error().message;
  for (const auto& c : testing::typeCases()) {
    EXPECT_TRUE(ptxasAccepts(testing::typeCaseModule(c.accepted))) << c.rule << ": " << c.accepted;
    EXPECT_FALSE(ptxasAccepts(testing::typeCaseModule(c.rejected))) << c.rule << ": " << c.rejected;
  }
}

// ---- mutations ----
struct Mutant {
  std::string what;  // "line 12: '%r3' -> '%rd1'"
  std::string text;
};

struct Rng {  // a fixed LCG: the same picks on every platform
  uint64_t s;
  uint64_t next() { return s = s * 6364136223846793005ull + 1442695040888963407ull; }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>((next() >> 33) % n); }
};

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}
std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Replaces `from` at (line, column) by `to`; false if the text there is not `from`.
bool replaceAt(std::vector<std::string>& lines, const SourceLoc& at, const std::string& from,
               const std::string& to) {
  if (at.line == 0 || at.line > lines.size() || at.column == 0) return false;
  std::string& l = lines[at.line - 1];
  size_t c = at.column - 1;
  if (l.compare(c, from.size(), from) != 0) return false;
  l.replace(c, from.size(), to);
  return true;
}

// The body-level registers of `f` by kind: name lists for pred, 16, 32 and 64 bits.
std::map<int, std::vector<std::string>> registersByWidth(const Function& f) {
  std::map<int, std::vector<std::string>> out;
  for (const RegInfo& r : f.regs)
    if (r.scopeDepth == 0) out[bits(r.type)].push_back(r.name);
  return out;
}

std::vector<Mutant> mutate(const std::string& name, const std::string& text, size_t count) {
  auto module = parse(text, name);
  if (!module.ok()) return {};
  const auto lines = splitLines(text);
  Rng rng{fnv1a64(name)};
  struct Site {
    const Function* f;
    const Instruction* in;
    const Operand* o;  // null: the type suffix
    bool address;
  };
  std::vector<Site> regs, types, addrs;
  for (const Function& f : module->functions)
    for (const Instruction& in : f.body) {
      if (!in.types.empty()) types.push_back({&f, &in, nullptr, false});
      for (const auto* list : {&in.dsts, &in.srcs})
        for (const Operand& o : *list) {
          if (o.kind == OperandKind::Reg) regs.push_back({&f, &in, &o, false});
          if (o.kind == OperandKind::Address && o.addrIsReg) addrs.push_back({&f, &in, &o, true});
        }
    }
  static const char* const kTypes[] = {"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "pred"};
  std::vector<Mutant> out;
  for (size_t k = 0; k < count * 4 && out.size() < count; ++k) {
    int kind = static_cast<int>(out.size() % 3);  // register, type suffix, address, in turn
    std::vector<std::string> mutated = lines;
    std::string what;
    if (kind == 0 || kind == 2) {
      const auto& sites = kind == 0 ? regs : addrs;
      if (sites.empty()) continue;
      const Site& s = sites[rng.below(sites.size())];
      const RegInfo& r = s.f->regs[s.o->reg];
      auto byWidth = registersByWidth(*s.f);
      std::vector<std::string> others;
      for (const auto& [w, names] : byWidth)
        if (w != bits(r.type) && !names.empty() && (kind == 0 || w == 32)) others.push_back(names.front());
      if (others.empty()) continue;
      std::string to = others[rng.below(others.size())];
      SourceLoc at = s.o->loc;
      if (s.address) ++at.column;  // past '['
      if (!replaceAt(mutated, at, r.name, to)) continue;
      what = "line " + std::to_string(at.line) + ": '" + r.name + "' -> '" + to + "'";
    } else {
      if (types.empty()) continue;
      const Site& s = types[rng.below(types.size())];
      std::string from = std::string(".") + typeName(s.in->types[0]);
      std::string to = std::string(".") + kTypes[rng.below(std::size(kTypes))];
      if (to == from) continue;
      std::string& l = mutated[s.in->loc.line - 1];
      size_t op = l.find(spelling(s.in->op), s.in->loc.column - 1);
      size_t end = op == std::string::npos ? op : l.find_first_of(" \t;", op);
      size_t at = op == std::string::npos ? op : l.find(from, op);
      if (at == std::string::npos || at > end) continue;
      l.replace(at, from.size(), to);
      what = "line " + std::to_string(s.in->loc.line) + ": '" + from + "' -> '" + to + "' in '" + s.in->text + "'";
    }
    out.push_back({what, joinLines(mutated)});
  }
  return out;
}

TEST(PtxTypeCheckPtxas, MutatedCatalogPtxIsAcceptedOnlyIfPtxasAcceptsIt) {
  for (auto c : {host::Compiler::Clang, host::Compiler::Nvcc})
    if (auto tool = host::toolPath(c); !tool) GTEST_SKIP() << "tool missing: " << tool.error().message;
  if (!host::ptxasAvailable()) GTEST_SKIP() << "tool missing: " << host::ptxasPath().error().message;
  size_t perFile = 3;
  if (const char* env = std::getenv("QGPU_TYPECHECK_MUTANTS")) perFile = std::strtoul(env, nullptr, 10);
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();

  std::vector<std::pair<const kernels::KernelSpec*, host::Compiler>> jobs;
  for (const auto& spec : *catalog)
    for (auto c : {host::Compiler::Clang, host::Compiler::Nvcc}) jobs.push_back({&spec, c});
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures, compileFailures;
  size_t mutants = 0, frontAccepts = 0, ptxasAcceptsCount = 0, stricter = 0, bothReject = 0;
  auto worker = [&] {
    for (size_t j = next++; j < jobs.size(); j = next++) {
      const auto& [spec, compiler] = jobs[j];
      host::CompileOptions options;
      options.fileName = spec->name + ".cu";
      auto ptx = host::compileToPtx(spec->source, compiler, options);
      std::string file = spec->name + "." + host::compilerName(compiler) + ".ptx";
      if (!ptx) {
        std::lock_guard lock(mutex);
        compileFailures.push_back(file + ": " + ptx.error().str());
        continue;
      }
      for (const Mutant& m : mutate(file, *ptx, perFile)) {
        auto front = parse(m.text, file);
        bool frontOk = front.ok();
        bool kindOk = frontOk || front.error().kind == ErrorKind::PtxInvalid ||
                      front.error().kind == ErrorKind::PtxUnsupported ||
                      front.error().kind == ErrorKind::PtxSyntax;
        bool ptxasOk = ptxasAccepts(m.text);
        std::lock_guard lock(mutex);
        ++mutants;
        frontAccepts += frontOk;
        ptxasAcceptsCount += ptxasOk;
        stricter += !frontOk && ptxasOk;
        bothReject += !frontOk && !ptxasOk;
        if (frontOk && !ptxasOk)
          failures.push_back(file + " " + m.what + ": the front end accepts it, ptxas does not");
        if (!kindOk) failures.push_back(file + " " + m.what + ": unexpected " + front.error().str());
      }
    }
  };
  std::thread second(worker);
  worker();
  second.join();
  std::cout << "[ summary ] " << jobs.size() << " PTX files, " << mutants << " mutants: front end accepts "
            << frontAccepts << ", ptxas accepts " << ptxasAcceptsCount << ", both reject " << bothReject
            << ", front end stricter than ptxas " << stricter << "\n";
  EXPECT_TRUE(compileFailures.empty()) << compileFailures.front();
  for (const auto& f : failures) ADD_FAILURE() << f;
  // The mutations must bite: a run in which ptxas rejected nothing would prove nothing.
  EXPECT_GT(bothReject, mutants / 4);
  EXPECT_GT(mutants, jobs.size());
}

}  // namespace
}  // namespace qgpu::ptx
