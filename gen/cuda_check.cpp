// qgpu/gen/cuda_check.cpp — random CUDA through both compilers, the PTX evaluator, lowering and
// the interpreter, against the generator's expectation (gen/cuda_check.h).
#include "gen/cuda_check.h"

#include <chrono>
#include <optional>

#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "kernels/catalog.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "ptxeval/eval.h"

namespace qgpu::gen {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Diag failure(const CudaCase& c, host::Compiler compiler, const std::string& what, ErrorKind kind = ErrorKind::Internal) {
  return makeDiag(kind, what + "\n  case: " + c.name + " " + c.header + "\n  compiler: " + host::compilerName(compiler));
}

std::string firstDifference(std::span<const uint32_t> got, std::span<const uint32_t> want, const CudaCase& c,
                            const char* who) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      auto at = [&](const char* name, size_t from) { return std::string(name) + " word " + std::to_string(i - from); };
      std::string where = i < c.outWord() ? "in[" + std::to_string(i) + "]"
                          : i < c.accWord() ? "out[" + std::to_string(i - c.outWord()) + "]"
                          : i < c.accWord() + kCudaAccWords ? "acc[" + std::to_string(i - c.accWord()) + "]"
                          : !c.wide || i < c.in64Word() ? "word " + std::to_string(i) + " (no array's)"
                          : i < c.qWord() ? at("in64", c.in64Word())
                          : i < c.o64Word() ? at("q", c.qWord())
                          : i < c.o8Word() ? at("o64", c.o64Word())
                          : i < c.endWord() ? at("o8", c.o8Word())
                                            : "word " + std::to_string(i) + " (no array's)";
      return std::string(who) + " differs from the generator at " + where + " (word " + std::to_string(i) +
             "): " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
    }
  return "";
}

// The file must be a kernel file whose launch and expectations are the case's.
Status checkFile(const CudaCase& c) {
  auto spec = kernels::parseKernelText(c.text, c.name + ".cu");
  if (!spec) return makeDiag(ErrorKind::Internal, "generated kernel file does not parse: " + spec.error().str() + "\n  case: " + c.header);
  auto image = kernels::layout(*spec);
  if (!image) return makeDiag(ErrorKind::Internal, "generated kernel file has no layout: " + image.error().str());
  std::array<uint32_t, 126> want = c.expectedGlobal();
  auto diffs = kernels::checkOutputs(*spec, *image, want);
  if (!diffs || !diffs->empty() || image->global != c.initialGlobal() || image->params != c.params() ||
      spec->gridX != c.gridX || spec->blockX != c.blockX)
    return makeDiag(ErrorKind::Internal, "generated kernel file's header disagrees with the case\n  case: " + c.header);
  return Ok{};
}

Expected<CudaLeg> checkLeg(const CudaCase& c, host::Compiler compiler, const ptx::Module& module) {
  CudaLeg leg;
  leg.compiler = compiler;
  auto entry = ptx::findEntry(module, c.name);
  if (!entry) return failure(c, compiler, "no entry: " + entry.error().str());
  const std::array<uint32_t, 126> want = c.expectedGlobal();

  ptxeval::Launch el;
  el.gridX = c.gridX;
  el.blockX = c.blockX;
  el.global = c.initialGlobal();
  for (uint32_t p : c.params()) el.params.push_back(p);
  ptxeval::EvalOptions eo;
  eo.entry = (*entry)->name;
  auto ev = ptxeval::evaluate(module, el, eo);
  // A typed refusal of the evaluator (PtxUnsupported: a construct it does not define, eval.h) is a
  // gap of the second oracle, not a wrong answer: the leg cannot be a match without it, but the
  // lowered program is still checked against the generator's expectation below, so a wrong value
  // there is still a failure. Any other evaluator error is the harness's (Internal).
  std::optional<Diag> evalRefusal;
  if (!ev) {
    if (ev.error().kind != ErrorKind::PtxUnsupported)
      return failure(c, compiler, "the PTX evaluator refused: " + ev.error().str());
    evalRefusal = ev.error();
  } else {
    if (ev->status != ptxeval::EvalStatus::Finished)
      return failure(c, compiler, std::string("the PTX evaluator: ") + ptxeval::statusName(ev->status) + ": " + ev->fault.str());
    if (ev->unspecified) return failure(c, compiler, "the PTX meets unspecified behaviour: " + ev->firstUnspecified);
    if (std::string d = firstDifference(ev->global, want, c, "the PTX evaluator"); !d.empty()) return failure(c, compiler, d);
  }

  auto refusedKind = [](const Diag& d) -> std::optional<CudaVerdict> {
    if (d.kind == ErrorKind::OverLimit) return CudaVerdict::RefusedLimit;
    if (d.kind == ErrorKind::PtxUnsupported) return CudaVerdict::RefusedUnsupported;
    return std::nullopt;
  };
  lower::LowerOptions lo;
  lo.entry = (*entry)->name;
  lo.params = c.params();
  lo.verifyPasses = true;
  auto program = lower::lower(module, lo);
  machine::Launch ml;
  ml.gridX = c.gridX;
  ml.blockX = c.blockX;
  ml.global = c.initialGlobal();
  Status verified = program ? machine::verify(*program, ml) : Status(program.error());
  if (!verified) {
    auto r = refusedKind(verified.error());
    if (!r) return failure(c, compiler, "lowering failed (not a typed refusal): " + verified.error().str(), verified.error().kind);
    leg.verdict = *r;
    leg.refusal = verified.error();
    return leg;
  }
  oracle::RunOptions ro;
  ro.recordTrace = false;
  ro.maxSteps = 10'000'000;
  auto run = oracle::run(*program, ml, ro);
  if (!run) return failure(c, compiler, "interpreter: " + run.error().str(), run.error().kind);
  if (run->status != oracle::RunStatus::Finished)
    return failure(c, compiler, "the interpreter did not finish: " + run->fault.str(), ErrorKind::MachineFault);
  if (std::string d = firstDifference(run->global, want, c, "the interpreter"); !d.empty())
    return failure(c, compiler, d);
  leg.final = run->global;
  if (evalRefusal) {  // the interpreter agreed with the generator, but only one oracle ran
    leg.verdict = CudaVerdict::RefusedUnsupported;
    leg.refusal = *evalRefusal;
  }
  return leg;
}

// ---- Cutting one case's functions out of a batch's PTX ----
// A PTX module is a header (.version, .target, .address_size) and top-level items: functions
// (".visible .entry NAME(...) {...}", ".func ... NAME(...) {...}"), prototypes and module-scope
// variables (one statement ending in ';'). The case owning an item is read from the first mangled
// name on its first line: _Z<len><name> (the kernel, its helpers <name>_h<j>) or _ZZ<len><name>
// (a kernel's static __shared__ array).
struct PtxItem {
  size_t firstLine = 0, lastLine = 0;  // 1-based, inclusive
  std::string owner;                   // the kernel name, or "" if none could be read
};

std::string ownerOf(std::string_view line) {
  size_t z = line.find("_Z");
  if (z == std::string_view::npos) return "";
  size_t i = z + 2;
  if (i < line.size() && line[i] == 'Z') ++i;
  size_t len = 0, d = i;
  while (d < line.size() && line[d] >= '0' && line[d] <= '9') len = len * 10 + static_cast<size_t>(line[d++] - '0');
  if (d == i || d + len > line.size()) return "";
  std::string name(line.substr(d, len));
  size_t h = name.rfind("_h");
  if (h != std::string::npos && h + 2 < name.size() &&
      name.find_first_not_of("0123456789", h + 2) == std::string::npos)
    name.resize(h);
  return name;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<PtxItem> ptxItems(const std::vector<std::string>& lines) {
  std::vector<PtxItem> items;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty() || l[0] != '.' || l.rfind(".version", 0) == 0 || l.rfind(".target", 0) == 0 ||
        l.rfind(".address_size", 0) == 0)
      continue;
    PtxItem item;
    item.firstLine = i + 1;
    item.owner = ownerOf(l);
    size_t j = i;
    bool body = false;
    for (; j < lines.size(); ++j) {
      if (lines[j] == "{") body = true;
      if (body && lines[j] == "}") break;
      if (!body && !lines[j].empty() && lines[j].back() == ';') break;
    }
    item.lastLine = std::min(j, lines.size() - 1) + 1;
    items.push_back(item);
    i = item.lastLine - 1;
  }
  return items;
}

// The index of the case owning PTX line `line`, or -1.
int ptxOwner(const std::string& ptxText, uint32_t line, std::span<const CudaCase> cases) {
  for (const PtxItem& item : ptxItems(splitLines(ptxText)))
    if (line >= item.firstLine && line <= item.lastLine)
      for (size_t i = 0; i < cases.size(); ++i)
        if (!item.owner.empty() && item.owner == cases[i].name) return static_cast<int>(i);
  return -1;
}

std::string withoutCase(const std::string& ptxText, const std::string& name) {
  std::vector<std::string> lines = splitLines(ptxText);
  for (const PtxItem& item : ptxItems(lines))
    if (item.owner == name)
      for (size_t l = item.firstLine; l <= item.lastLine; ++l) lines[l - 1] = "";  // keeps line numbers
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return out;
}

}  // namespace

Expected<CudaLeg> checkCudaLeg(const CudaCase& c, host::Compiler compiler, const ptx::Module& module) {
  return checkLeg(c, compiler, module);
}

const char* cudaVerdictName(CudaVerdict v) {
  switch (v) {
    case CudaVerdict::Match: return "match";
    case CudaVerdict::RefusedLimit: return "refused-limit";
    case CudaVerdict::RefusedUnsupported: return "refused-unsupported";
  }
  return "?";
}

Expected<ParsedCudaBatch> parseCudaBatchPtx(std::string ptxText, std::span<const CudaCase> cases) {
  ParsedCudaBatch out;
  for (size_t round = 0; round <= cases.size(); ++round) {
    auto module = ptx::parse(ptxText, "gen_batch.ptx");
    if (module) {
      out.module = std::move(*module);
      return out;
    }
    int owner = ptxOwner(ptxText, module.error().loc.line, cases);
    if (owner < 0) return module.error();
    out.refused.push_back(static_cast<size_t>(owner));
    ptxText = withoutCase(ptxText, cases[static_cast<size_t>(owner)].name);
  }
  return makeDiag(ErrorKind::Internal, "parseCudaBatchPtx: no progress cutting cases out");
}

std::string cudaBatchSource(std::span<const CudaCase> cases) {
  std::string src;
  for (const CudaCase& c : cases) src += c.text + "\n";
  return src;
}

Expected<std::vector<Expected<CudaCheck>>> checkCudaBatch(std::span<const CudaCase> cases,
                                                          std::span<const host::Compiler> compilers,
                                                          CudaBatchStats* stats) {
  CudaBatchStats local;
  CudaBatchStats& st = stats ? *stats : local;
  std::vector<Expected<CudaCheck>> out;
  for (const CudaCase& c : cases) {
    if (auto f = checkFile(c); !f) out.emplace_back(f.error());
    else out.emplace_back(CudaCheck{});
  }
  for (host::Compiler compiler : compilers) {
    if (!host::toolAvailable(compiler)) {
      QGPU_TRY(path, host::toolPath(compiler));
      (void)path;
    }
    auto compilePtx = [&](std::string_view src) -> Expected<std::string> {
      host::CompileOptions co;
      co.fileName = "gen_batch.cu";
      auto t = Clock::now();
      auto ptx = host::compileToPtx(src, compiler, co);
      st.compileSeconds += since(t);
      ++st.compilerRuns;
      return ptx;
    };
    const std::string ptxName = std::string("gen_batch.") + host::compilerName(compiler) + ".ptx";
    auto checkAll = [&](const ptx::Module& module, size_t i) {
      auto t = Clock::now();
      if (out[i]) {
        auto leg = checkLeg(cases[i], compiler, module);
        if (!leg) out[i] = leg.error();
        else out[i]->legs.push_back(*leg);
      }
      st.checkSeconds += since(t);
    };
    // A PTX the front end does not take (an opcode outside the subset) is that case's refusal:
    // its functions are cut out of the batch's PTX and the rest is parsed again, so one kernel
    // does not cost the batch a recompile.
    auto parseCase = [&](std::string ptxText, std::vector<bool> active) {
      for (size_t round = 0; round <= cases.size(); ++round) {
        auto module = ptx::parse(ptxText, ptxName);
        if (module) {
          for (size_t j = 0; j < cases.size(); ++j)
            if (active[j]) checkAll(*module, j);
          return true;
        }
        int owner = ptxOwner(ptxText, module.error().loc.line, cases);
        if (owner < 0 || !active[static_cast<size_t>(owner)]) return false;
        size_t j = static_cast<size_t>(owner);
        if (out[j]) {
          if (module.error().kind == ErrorKind::PtxUnsupported) {
            CudaLeg leg;
            leg.compiler = compiler;
            leg.verdict = CudaVerdict::RefusedUnsupported;
            leg.refusal = module.error();
            out[j]->legs.push_back(leg);
          } else {
            out[j] = failure(cases[j], compiler, "the compiler's PTX does not parse: " + module.error().str());
          }
        }
        active[j] = false;
        ptxText = withoutCase(ptxText, cases[j].name);
      }
      return false;
    };
    std::vector<bool> all(cases.size(), true);
    auto batch = compilePtx(cudaBatchSource(cases));
    if (batch) {
      if (parseCase(std::move(*batch), all)) continue;
    } else if (batch.error().kind == ErrorKind::ToolMissing) {
      return batch.error();
    }
    // One at a time, so the failure names its case.
    for (size_t i = 0; i < cases.size(); ++i) {
      if (!out[i]) continue;
      auto one = compilePtx(cases[i].text);
      if (!one) {
        out[i] = failure(cases[i], compiler, "the compiler rejected a generated kernel: " + one.error().str());
        continue;
      }
      std::vector<bool> only(cases.size(), false);
      only[i] = true;
      if (!parseCase(std::move(*one), only) && out[i])
        out[i] = failure(cases[i], compiler, "the compiler's PTX does not parse");
    }
  }
  // Where two compilers' programs ran, they agree (each equals the expectation, so this can only
  // fail together with that check; it is here so that a report names the disagreement).
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!out[i]) continue;
    const CudaLeg* first = nullptr;
    for (const CudaLeg& leg : out[i]->legs) {
      if (leg.verdict != CudaVerdict::Match) continue;
      if (first && first->final != leg.final)
        out[i] = failure(cases[i], leg.compiler, std::string("clang and nvcc disagree: ") +
                                                     firstDifference(leg.final, first->final, cases[i], host::compilerName(leg.compiler)));
      if (!first) first = &leg;
    }
  }
  return out;
}

}  // namespace qgpu::gen
