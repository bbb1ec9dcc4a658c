// qgpu/harness/report/plan.h — what a conformance run was asked to do, and one shard's share.
//
// A plan is the unsharded run: the catalog it came from (its digest), the selected kernels in
// catalog order, the compilers, whether the GPU leg ran, the model legs, the step limit. Its digest covers all
// of that, so two reports merge only when they were cut from the same plan. The unit of
// sharding is the kernel: every case of a kernel (each compiler, each leg) runs in one shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/catalog.h"

namespace qgpu::report {

struct Plan {
  std::string catalogDigest;          // catalogDigest() of the whole catalog the run loaded
  uint32_t catalogKernels = 0;        // kernels in that catalog
  std::vector<std::string> kernels;   // the selected kernels, catalog order
  std::vector<std::string> compilers; // "clang", "nvcc", in run order
  bool gpu = false;                   // the GPU leg was tried
  std::vector<std::string> models;    // the model legs run: "fp32", "bf16" (none: no model rows)
  uint64_t maxSteps = 0;              // the interpreter's step limit

  // Cases per kernel: one per compiler and leg.
  size_t casesPerKernel() const { return compilers.size() * (1 + (gpu ? 1 : 0) + models.size()); }
  std::string digest() const;         // fnv1a64 over every field above
};

// fnv1a64 over each kernel's name and whole source text, in catalog order.
std::string catalogDigest(const std::vector<kernels::KernelSpec>& catalog);

// One shard of a plan: shard `index` of `total` (0-based, as GTEST_SHARD_INDEX).
struct ShardSpec {
  uint32_t index = 0;
  uint32_t total = 1;
  bool sharded() const { return total > 1; }
};

}  // namespace qgpu::report
