// qgpu/host/ptx/parser.h — PTX text to the IR of ir.h.
//
// Contract: `parse` accepts the PTX subset that clang-14 (PTX 6.4) and nvcc 13 (PTX 9.0) emit for
// small integer kernels (../shared/reference/ptx-subset.md) and returns a Module that has passed
// verify(). It never throws, aborts, recurses on input structure or reads out of bounds; every
// failure is a Diag with file, line and column:
//   PtxSyntax      — the text is not PTX (column = the offending token), malformed or out-of-range
//                    immediates, unterminated comments, strings or scopes, truncated input;
//   PtxUnsupported — valid PTX outside the subset: unknown opcode or modifier, float types and
//                    immediates, module-level variables (.global/.const/.extern/.shared), vector
//                    operands, and inputs over the limits below;
//   PtxInvalid     — consistent syntax but inconsistent declarations: undeclared register,
//                    duplicate register or label, unknown label or callee, wrong operand count,
//                    operand types or widths that ptxas refuses (verify()'s kTypeRules).
// Performance directives (.maxntid, .reqntid, .minnctapersm, .maxnreg), `.pragma`, `.loc` and
// `.file` are accepted and dropped. Immediates: decimal must fit int64; hex/octal/binary literals
// up to 64 bits are bit patterns (0xFFFFFFFFFFFFFFFF reads as -1).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/diag.h"
#include "host/ptx/ir.h"

namespace qgpu::ptx {

inline constexpr size_t kMaxInputBytes = size_t{4} << 20;  // larger inputs are refused unread
inline constexpr uint32_t kMaxScopeDepth = 64;              // nested `{ }` below the body
inline constexpr uint32_t kMaxRegisters = 1u << 16;         // per function, ranges expanded
inline constexpr uint32_t kMaxModuleRegisters = 1u << 20;   // over all functions

Expected<Module> parse(std::string_view text, std::string file = "<ptx>");

}  // namespace qgpu::ptx
