// The differential test of the two PTX paths: every catalog kernel x {clang, nvcc}, from the PTX
// committed under reports/gpu/inputs/ (no compiler needed), through
//   (a) the PTX evaluator (ptxeval/), and
//   (b) lowering + the machine's interpreter (host/lower + oracle/),
// must give the catalog's expected outputs (computed by kernels/reference, by neither path), leave
// every word outside the arrays alone, and give the same final memory word for word.
#include <gtest/gtest.h>

#include <map>

#include <string>
#include <vector>

#include "common/file.h"
#include "harness/pipeline.h"
#include "host/lower/lower.h"
#include "host/ptx/parser.h"
#include "kernels/catalog.h"
#include "oracle/interpreter.h"
#include "ptxeval/eval.h"

namespace qgpu::ptxeval {
namespace {

struct Case {
  std::string kernel, compiler;
  std::vector<std::string> problems;  // empty: the case agrees everywhere
  bool refusedByDesign = false;        // listed in kRefusedByDesign, and refused as listed
};

Launch toLaunch(const kernels::LaunchImage& image) {
  Launch l;
  l.gridX = image.gridX;
  l.blockX = image.blockX;
  l.global = image.global;
  l.params.assign(image.params.begin(), image.params.end());
  l.dynamicSharedBytes = 4 * image.dynamicSharedWords;
  return l;
}

// Kernels the evaluator refuses by design, with the construct: `activemask` says which lanes
// run together, which PTX leaves to the hardware and the evaluator's per-thread order does not
// model. Each must still be refused (a kernel that starts to run here leaves this list).
const std::map<std::string, std::string> kRefusedByDesign = {
    {"warp_agg_atomic", "activemask"},
    {"cg_coalesced_filter", "activemask"},  // cg::coalesced_threads() is __activemask()
};

std::string words(const std::array<uint32_t, kGlobalWords>& g, uint32_t i) {
  return std::to_string(g[i]);
}

Case runCase(const kernels::KernelSpec& spec, const std::string& compiler) {
  Case c{spec.name, compiler, {}};
  auto fail = [&](const std::string& what) { c.problems.push_back(what); };
  std::string path = std::string(QGPU_SOURCE_DIR) + "/reports/gpu/inputs/" + spec.name + "." + compiler + ".ptx";
  auto text = readInputFile(path, size_t{4} << 20, "PTX");
  if (!text) return fail("no committed PTX: " + text.error().str()), c;
  auto module = ptx::parse(*text, path);
  if (!module) return fail("parse: " + module.error().str()), c;
  auto image = kernels::layout(spec);
  if (!image) return fail("layout: " + image.error().str()), c;
  auto entry = ptx::findEntry(*module, spec.name);
  if (!entry) return fail("entry: " + entry.error().str()), c;

  // (a) the evaluator, against the catalog's expectations.
  EvalOptions eo;
  eo.entry = (*entry)->name;
  auto ev = evaluate(*module, toLaunch(*image), eo);
  auto byDesign = kRefusedByDesign.find(spec.name);
  if (byDesign != kRefusedByDesign.end()) {
    if (ev || ev.error().kind != ErrorKind::PtxUnsupported ||
        ev.error().message.find(byDesign->second) == std::string::npos)
      fail("expected the evaluator to refuse '" + byDesign->second + "'");
    else
      c.refusedByDesign = true;
    return c;
  }
  if (!ev) return fail("evaluator refused: " + ev.error().str()), c;
  if (ev->status != EvalStatus::Finished) return fail(std::string("evaluator ") + statusName(ev->status) + ": " + ev->fault.str()), c;
  if (ev->unspecified) fail("evaluator met unspecified behaviour: " + ev->firstUnspecified);
  auto diffs = kernels::checkOutputs(spec, *image, ev->global);
  if (!diffs) return fail("checkOutputs: " + diffs.error().str()), c;
  for (const std::string& d : *diffs) fail("evaluator vs expectation: " + d);
  for (const std::string& d : harness::writesOutsideArrays(*image, image->global, ev->global))
    fail("evaluator: " + d);

  // (b) lowering + interpreter, against the evaluator word for word.
  lower::LowerOptions lo;
  lo.entry = (*entry)->name;
  lo.params = image->params;
  lo.dynamicSharedWords = image->dynamicSharedWords;
  lo.verifyPasses = true;
  auto program = lower::lower(*module, lo);
  if (!program) return fail("lowering refused: " + program.error().str()), c;
  machine::Launch ml = image->toMachineLaunch();
  if (auto v = machine::verify(*program, ml); !v) return fail("verify with launch: " + v.error().str()), c;
  oracle::RunOptions ro;
  ro.recordTrace = false;
  auto run = oracle::run(*program, ml, ro);
  if (!run) return fail("interpreter: " + run.error().str()), c;
  if (run->status != oracle::RunStatus::Finished) return fail("interpreter: " + run->fault.str()), c;
  for (uint32_t i = 0; i < kGlobalWords; ++i)
    if (run->global[i] != ev->global[i])
      fail("word " + std::to_string(i) + ": evaluator " + words(ev->global, i) + ", interpreter " +
           std::to_string(run->global[i]));
  return c;
}

TEST(PtxEvalCatalog, EveryKernelBothCompilersAgreesWithExpectationsAndInterpreter) {
  auto catalog = kernels::loadCatalog(kernels::defaultCatalogDir());
  ASSERT_TRUE(catalog.ok()) << catalog.error().str();
  ASSERT_GE(catalog->size(), 60u);
  int cases = 0, agreeing = 0, refused = 0;
  for (const kernels::KernelSpec& spec : *catalog)
    for (const char* compiler : {"clang", "nvcc"}) {
      Case c = runCase(spec, compiler);
      ++cases;
      if (c.refusedByDesign && c.problems.empty()) {
        ++refused;
        continue;
      }
      if (c.problems.empty()) {
        ++agreeing;
        continue;
      }
      std::string all;
      for (const std::string& p : c.problems) all += "\n  " + p;
      ADD_FAILURE() << c.kernel << " (" << c.compiler << "):" << all;
    }
  std::printf("%d of %d catalog cases agree (evaluator = expectation = interpreter), %d refused by "
              "design\n",
              agreeing, cases, refused);
}

// The comparison can fail: a tampered expectation and a tampered final word are both reported.
TEST(PtxEvalCatalog, ComparatorsCatchATamperedExpectation) {
  auto spec = kernels::parseKernelFile(kernels::defaultCatalogDir() + "/vadd.cu");
  ASSERT_TRUE(spec.ok()) << spec.error().str();
  Case good = runCase(*spec, "nvcc");
  EXPECT_TRUE(good.problems.empty());
  for (kernels::ParamSpec& p : spec->params)
    if (p.hasExpect && !p.expect.empty()) p.expect[0] ^= 1;
  Case bad = runCase(*spec, "nvcc");
  ASSERT_FALSE(bad.problems.empty());
  EXPECT_NE(bad.problems[0].find("evaluator vs expectation"), std::string::npos) << bad.problems[0];
}

}  // namespace
}  // namespace qgpu::ptxeval
