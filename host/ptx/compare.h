// qgpu/host/ptx/compare.h — structural equality of PTX modules, for round-trip checks.
//
// Two modules are equal when everything lowering can see is equal: header, functions, variables,
// registers, scopes, labels and instructions with their operands. Source locations, the file
// name and Instruction::text are ignored (printing changes them by design).
#pragma once

#include <optional>
#include <string>

#include "host/ptx/ir.h"

namespace qgpu::ptx {

// nullopt when equal, else a description of the first difference ("function 'k': body[3]: ...").
std::optional<std::string> firstDifference(const Module& a, const Module& b);

}  // namespace qgpu::ptx
