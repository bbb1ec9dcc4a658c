// qgpu/harness/report/plan.cpp — see plan.h.
#include "harness/report/plan.h"

#include "common/digest.h"

namespace qgpu::report {

namespace {

// Length-prefixed, so that no two different field lists hash the same bytes.
uint64_t mix(uint64_t h, std::string_view field) {
  h = fnv1a64(std::to_string(field.size()) + ":", h);
  return fnv1a64(field, h);
}

}  // namespace

std::string Plan::digest() const {
  uint64_t h = mix(kFnvOffset, "qgpu-plan-1");
  h = mix(h, catalogDigest);
  h = mix(h, std::to_string(catalogKernels));
  h = mix(h, std::to_string(kernels.size()));
  for (const std::string& k : kernels) h = mix(h, k);
  h = mix(h, std::to_string(compilers.size()));
  for (const std::string& c : compilers) h = mix(h, c);
  h = mix(h, gpu ? "gpu" : "no-gpu");
  // Only a plan with model legs mixes them in: a plan without keeps the digest it always had.
  if (!models.empty()) {
    h = mix(h, "models " + std::to_string(models.size()));
    for (const std::string& m : models) h = mix(h, m);
  }
  h = mix(h, std::to_string(maxSteps));
  return digestString(h);
}

std::string catalogDigest(const std::vector<kernels::KernelSpec>& catalog) {
  uint64_t h = mix(kFnvOffset, "qgpu-catalog-1");
  for (const kernels::KernelSpec& spec : catalog) h = mix(mix(h, spec.name), spec.source);
  return digestString(h);
}

}  // namespace qgpu::report
