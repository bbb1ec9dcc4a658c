// qgpu/host/lower/expansion.h — what the expansion passes (expand_division.h, expand_multiply.h)
// share in their interface: where the ops come from and go, and the program's size before and
// after. Their loop construction is expand_loop.h's.
#pragma once

#include <vector>

#include "common/diag.h"

namespace qgpu::lower {

struct ExpandOptions {
  // Where each op of the input comes from, opLocs[b][i] for program.blocks[b].ops[i]
  // (LowerStats::opLocs); named in errors. nullptr or a shape that does not match: unknown.
  const std::vector<std::vector<SourceLoc>>* opLocs = nullptr;
  // When set, receives the locations of the result's ops (each new op at the op it replaces), so
  // that a later pass can name PTX lines too.
  std::vector<std::vector<SourceLoc>>* locsOut = nullptr;
};

struct ExpansionCounts {
  int blocksBefore = 0;  // program blocks of the input
  int blocksAfter = 0;   // program blocks of the result
  int opsBefore = 0;     // ops of the input (terminators excluded)
  int opsAfter = 0;      // ops of the result
};

}  // namespace qgpu::lower
