// qgpu/model/json_text.h — parsing the JSON files of a checkpoint (config.json, tokenizer.json,
// the shard index, the safetensors header) with errors that say where.
//
// Contract: `parseJsonText` never throws. A syntax error becomes a Diag of the given kind whose
// location is the 1-based line and column (in bytes) of the offending character, converted from
// nlohmann's byte offset. With `rejectDuplicateKeys`, an object that names a key twice at any depth
// is an error naming the key (nlohmann, like Python's json, would silently keep the last value).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "common/diag.h"

namespace qgpu::model {

// The 1-based line and column of byte `offset` (0-based) of `text`; past the end means the end.
SourceLoc locateByte(std::string_view text, size_t offset, const std::string& file);

Expected<nlohmann::json> parseJsonText(std::string_view text, const std::string& file, ErrorKind kind,
                                       bool rejectDuplicateKeys = false);

}  // namespace qgpu::model
