// qgpu/kernels/reference/reference.h — plain C++ references for the catalog kernels.
//
// Contract: for every catalog kernel there is one function, registered under the kernel's name,
// that computes sequentially what the CUDA source computes for the spec's inputs and launch shape.
// It knows nothing of PTX, the machine or any qgpu leg: it is the independent source of the
// `expect:` lines (generated once with qgpu_kernel_expect, re-checked by reference_test).
// Arithmetic on signed values is written so that C++ has no undefined behaviour (wrapping ops go
// through uint32_t), mirroring the 32-bit two's-complement results of the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"
#include "kernels/catalog.h"

namespace qgpu::kernels {

// The kernel's parameters by name, as a reference function sees them. Arrays hold the initial
// contents and are updated in place; scalars are read-only.
class RefArgs {
 public:
  uint32_t gridX = 1;
  uint32_t blockX = 1;

  std::vector<int32_t>& a(std::string_view name);  // array parameter
  int32_t s(std::string_view name);                 // scalar parameter (as int)
  uint32_t threads() const { return gridX * blockX; }

  // Filled by runReference; a lookup of an unknown name is recorded here (a reference bug).
  std::map<std::string, std::vector<int32_t>, std::less<>> arrays;
  std::map<std::string, int32_t, std::less<>> scalars;
  std::string missing;

 private:
  std::vector<int32_t> dummy_;
};

using ReferenceFn = void (*)(RefArgs&);

// name -> reference, one entry per catalog kernel.
const std::map<std::string, ReferenceFn, std::less<>>& referenceTable();

// Final contents of every array parameter (words, in parameter order; scalars give an empty
// vector). Internal error when the kernel has no reference or the reference names a wrong param.
Expected<std::vector<std::vector<uint32_t>>> runReference(const KernelSpec& spec);

// Sets every output's expectation from the reference.
Status fillExpectations(KernelSpec& spec);

// Wrapping 32-bit helpers for references (no signed-overflow UB in C++).
inline int32_t wrapAdd(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
}
inline int32_t wrapSub(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) - static_cast<uint32_t>(y));
}
inline int32_t wrapMul(int32_t x, int32_t y) {
  return static_cast<int32_t>(static_cast<uint32_t>(x) * static_cast<uint32_t>(y));
}

}  // namespace qgpu::kernels
