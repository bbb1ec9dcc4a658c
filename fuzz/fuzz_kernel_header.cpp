// qgpu/fuzz/fuzz_kernel_header.cpp — libFuzzer target for the catalog kernel-file parser.
//
// Feeds arbitrary text to parseKernelText. It must never crash, hang or trip a sanitizer; a spec it
// accepts must be internally consistent (launch in range, expectations the size of their arrays,
// scalars with one value), and layout/checkOutputs on it must succeed or fail with a Diag.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/catalog.h"

using namespace qgpu::kernels;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = parseKernelText(text, "fuzz.cu");
  if (!spec) {
    if (spec.error().kind != qgpu::ErrorKind::KernelFile) __builtin_trap();
    return 0;
  }
  if (spec->gridX < 1 || spec->gridX > kMaxGrid) __builtin_trap();
  if (spec->blockX < 1 || spec->blockX > kMaxBlockThreads) __builtin_trap();
  if (spec->params.empty()) __builtin_trap();
  for (const ParamSpec& p : spec->params) {
    if (!p.isArray() && p.init.size() != 1) __builtin_trap();
    if (p.isArray() && (p.init.empty() || p.init.size() > kGlobalWords)) __builtin_trap();
    if (p.isOutput() && (!p.hasExpect || p.expect.size() != p.init.size())) __builtin_trap();
    if (!p.isOutput() && p.hasExpect) __builtin_trap();
  }
  auto image = layout(*spec);
  if (!image) {
    if (image.error().kind != qgpu::ErrorKind::OverLimit) __builtin_trap();
    return 0;
  }
  if (image->usedWords > kGlobalWords || image->params.size() != spec->params.size()) {
    __builtin_trap();
  }
  // The initial image matches the expectations only where they equal the initial values, so this
  // just has to run; a spec whose outputs start at their expected values must report no diff.
  auto diffs = checkOutputs(*spec, *image, image->global);
  if (!diffs) __builtin_trap();
  return 0;
}
