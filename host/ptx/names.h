// qgpu/host/ptx/names.h — spellings of the PTX IR enums, shared by the parser and the printer so
// that each name is written down once.
#pragma once

#include <optional>
#include <string_view>

#include "host/ptx/ir.h"

namespace qgpu::ptx {

std::optional<Opcode> opcodeFromSpelling(std::string_view text);  // "add" -> Add
std::optional<Type> typeFromName(std::string_view name);            // "s32" -> S32 (no dot)
bool isFloatTypeName(std::string_view name);                        // "f32", "bf16", "f16x2", ...
const char* cmpName(CmpOp cmp);                                     // Lt -> "lt"
std::optional<CmpOp> cmpFromName(std::string_view name);            // "lt" -> Lt
const char* spaceName(StateSpace space);                            // Global -> "global"
std::optional<StateSpace> spaceFromName(std::string_view name);     // "global" -> Global
std::optional<AtomOp> atomOpFromName(std::string_view text);        // "cas" -> Cas
std::optional<ShflMode> shflModeFromName(std::string_view text);    // "bfly" -> Bfly
std::optional<VoteMode> voteModeFromName(std::string_view text);    // "ballot" -> Ballot

}  // namespace qgpu::ptx
