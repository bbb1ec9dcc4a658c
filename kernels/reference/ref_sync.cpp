// qgpu/kernels/reference/ref_sync.cpp — references: atomics, warp votes and shuffles, barriers.
#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

}  // namespace

void addSyncKernels(Table& t) {
  (void)t;
}

}  // namespace qgpu::kernels::ref
