// qgpu/model/safetensors_header.cpp — see safetensors_header.h.
#include "model/safetensors_header.h"
#include "model/checkpoint_error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

#include "model/json_text.h"

namespace qgpu::model {
namespace {

struct DtypeRow {
  StDtype dtype;
  const char* name;
  uint64_t size;
};

constexpr DtypeRow kDtypes[] = {
    {StDtype::F64, "F64", 8}, {StDtype::F32, "F32", 4}, {StDtype::F16, "F16", 2},
    {StDtype::BF16, "BF16", 2}, {StDtype::I64, "I64", 8}, {StDtype::I32, "I32", 4},
    {StDtype::I16, "I16", 2}, {StDtype::I8, "I8", 1},   {StDtype::U8, "U8", 1},
    {StDtype::BOOL, "BOOL", 1},
};

// Reads a JSON number as a non-negative integer that fits in int64 (offsets and dims both).
std::optional<uint64_t> asCount(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return u;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return std::nullopt;
    return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

}  // namespace

const char* stDtypeName(StDtype dtype) {
  for (const auto& row : kDtypes)
    if (row.dtype == dtype) return row.name;
  return "?";
}

std::optional<StDtype> stDtypeFromName(std::string_view name) {
  for (const auto& row : kDtypes)
    if (name == row.name) return row.dtype;
  return std::nullopt;
}

uint64_t stDtypeSize(StDtype dtype) {
  for (const auto& row : kDtypes)
    if (row.dtype == dtype) return row.size;
  return 0;
}

uint64_t StTensorInfo::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

const StTensorInfo* StHeader::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Expected<StHeader> parseSafetensorsJson(std::string_view json, uint64_t dataBytes,
                                        const std::string& fileName) {
  // Duplicate keys are refused at every depth. The reference reader (serde_json) refuses a
  // repeated field of an entry or a second "__metadata__"; a repeated tensor name it resolves as
  // "the last one wins" and then usually fails the coverage check below. We refuse every
  // duplicate: no writer produces one, and which entry was meant cannot be known.
  auto parsed = parseJsonText(json, fileName, ErrorKind::Checkpoint, /*rejectDuplicateKeys=*/true);
  if (!parsed) {
    Diag d = parsed.error();
    d.message = "safetensors header: " + d.message;
    return d;
  }
  const nlohmann::json& doc = *parsed;
  if (!doc.is_object()) return checkpointError(fileName, "safetensors header is not a JSON object");

  StHeader header;
  header.dataStart = 8 + json.size();
  header.dataBytes = dataBytes;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) return checkpointError(fileName, "__metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          return checkpointError(fileName,
                                 "__metadata__ value of '" + m.key() + "' is not a string");
        header.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object()) return checkpointError(fileName, where + "entry is not an object");
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string())
      return checkpointError(fileName, where + "missing dtype");
    if (sh == entry.end() || !sh->is_array())
      return checkpointError(fileName, where + "missing shape");
    if (off == entry.end() || !off->is_array() || off->size() != 2)
      return checkpointError(fileName, where + "data_offsets is not [begin, end]");

    StTensorInfo info;
    info.name = name;
    auto dtype = stDtypeFromName(dt->get<std::string>());
    if (!dtype)
      return checkpointError(fileName, where + "unknown dtype '" + dt->get<std::string>() + "'");
    info.dtype = *dtype;

    // numel * size must not overflow: once the running product exceeds the data section the
    // tensor cannot fit, so it saturates there (a zero dimension still makes the tensor empty).
    uint64_t numel = 1;
    bool tooBig = false, empty = false;
    for (const auto& d : *sh) {
      auto dim = asCount(d);
      if (!dim)
        return checkpointError(fileName, where + "shape has a non-integer or negative dimension");
      info.shape.push_back(static_cast<int64_t>(*dim));
      if (*dim == 0) empty = true;
      else if (tooBig || numel > dataBytes / *dim) tooBig = true;
      else numel *= *dim;
    }
    if (empty) numel = 0, tooBig = false;
    auto begin = asCount((*off)[0]);
    auto end = asCount((*off)[1]);
    if (!begin || !end)
      return checkpointError(fileName, where + "data_offsets are not non-negative integers");
    if (*begin > *end) return checkpointError(fileName, where + "data_offsets begin > end");
    if (*end > dataBytes)
      return checkpointError(fileName, where + "data_offsets end " + std::to_string(*end) +
                                           " lies past the data section (" +
                                           std::to_string(dataBytes) + " bytes): truncated file?");
    uint64_t size = stDtypeSize(info.dtype);
    if (tooBig || numel * size != *end - *begin)
      return checkpointError(fileName, where + "byte size " + std::to_string(*end - *begin) +
                                           " does not match shape and dtype " +
                                           stDtypeName(info.dtype));
    info.begin = *begin;
    info.end = *end;
    header.tensors.push_back(std::move(info));
  }

  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const StTensorInfo& a, const StTensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // As the reference reader (Metadata::validate): in offset order, each tensor starts where the
  // previous one ended (no gap, no overlap), and the last one ends where the data section does.
  uint64_t expected = 0;
  for (const auto& t : header.tensors) {
    if (t.begin != expected)
      return checkpointError(
          fileName, "tensor '" + t.name + "': data_offsets begin " + std::to_string(t.begin) +
                        (t.begin < expected ? " overlaps the previous tensor" : " leaves a gap") +
                        " (expected " + std::to_string(expected) + ")");
    expected = t.end;
  }
  if (expected != dataBytes)
    return checkpointError(
        fileName, "the tensors cover " + std::to_string(expected) + " bytes of a " +
                      std::to_string(dataBytes) +
                      "-byte data section: " + std::to_string(dataBytes - expected) +
                      " trailing bytes belong to no tensor (Hugging Face's reader refuses this "
                      "as MetadataIncompleteBuffer)");
  return header;
}

Expected<StHeader> parseSafetensors(std::span<const uint8_t> bytes, const std::string& fileName) {
  if (bytes.size() < 8)
    return checkpointError(fileName, "file is shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  if (n > kMaxSafetensorsHeader)
    return checkpointError(fileName, "header length " + std::to_string(n) + " is over 100 MB");
  if (n > bytes.size() - 8)
    return checkpointError(fileName, "header length " + std::to_string(n) +
                                         " runs past the end of the file (" +
                                         std::to_string(bytes.size()) + " bytes)");
  std::string_view json(reinterpret_cast<const char*>(bytes.data() + 8), n);
  return parseSafetensorsJson(json, bytes.size() - 8 - n, fileName);
}

}  // namespace qgpu::model
