// qgpu/model/safetensors.h — safetensors files and checkpoint directories (torch-free).
//
// Reading: `SafetensorsFile::open` memory-maps a file read-only and validates its header
// (safetensors_header.h); tensor bytes are then views into the mapping, so a 4 GB checkpoint costs
// no copy until a consumer converts it. `Checkpoint::open` reads a directory holding either one
// `model.safetensors` or shards listed in `model.safetensors.index.json` ("weight_map": name →
// shard file), and answers "which file holds tensor X" with every error naming file and tensor.
//
// Writing: `writeSafetensors` writes one file (header padded with spaces to 8 bytes, as the
// reference writer does); `writeCheckpointTensors` splits a tensor list into shards of at most
// `maxShardBytes` (one file when everything fits) and writes the index when there is more than one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/diag.h"
#include "model/safetensors_header.h"

namespace qgpu::model {

class SafetensorsFile {
 public:
  static Expected<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const StHeader& header() const { return header_; }
  // The bytes of a tensor of this file's header (valid while the file object lives).
  std::span<const uint8_t> bytes(const StTensorInfo& info) const;
  // Tells the kernel the tensor's pages are no longer needed (after copying them elsewhere), so a
  // converting loader does not hold the file and the converted weights at once. The bytes stay
  // readable (re-read from the file on access).
  void release(const StTensorInfo& info) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  StHeader header_;
  const uint8_t* base_ = nullptr;  // the mapping
  uint64_t size_ = 0;
};

// A tensor found in a checkpoint: its header entry and the file (kept alive) that holds it.
struct CheckpointTensor {
  const StTensorInfo* info = nullptr;
  std::shared_ptr<SafetensorsFile> file;
  std::span<const uint8_t> bytes() const { return file->bytes(*info); }
};

class Checkpoint {
 public:
  // Opens DIR/model.safetensors.index.json if present, else DIR/model.safetensors.
  static Expected<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // Looks a tensor up; the Diag names the checkpoint and the tensor.
  Expected<CheckpointTensor> get(const std::string& name) const;
  // Total bytes of tensor data.
  uint64_t dataBytes() const;

 private:
  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<size_t, const StTensorInfo*>> where_;  // name → file index, entry
};

// One tensor to write: raw little-endian bytes of product(shape) elements of `dtype`.
struct StTensorWrite {
  std::string name;
  StDtype dtype = StDtype::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  // Set: the bytes are the caller's (kept alive until the write returns) and `data` is ignored —
  // a writer of large tensors (circuit/weights.cpp) then needs no second copy in memory.
  std::span<const uint8_t> view;
  std::span<const uint8_t> bytes() const { return view.empty() ? std::span<const uint8_t>(data) : view; }
};

Status writeSafetensors(const std::string& path, const std::vector<const StTensorWrite*>& tensors,
                        const std::map<std::string, std::string>& metadata = {});

// Writes DIR/model.safetensors, or DIR/model-0000i-of-0000n.safetensors plus the index when the
// tensors exceed `maxShardBytes`. Tensors keep their order; a tensor is never split.
Status writeCheckpointTensors(const std::string& dir, const std::vector<StTensorWrite>& tensors,
                              uint64_t maxShardBytes = UINT64_MAX,
                              const std::map<std::string, std::string>& metadata = {});

// The largest JSON file of a checkpoint that is read (config.json, tokenizer.json, the index):
// the official Qwen3.5 tokenizer.json is about 13 MB.
inline constexpr uint64_t kMaxTextFileBytes = 64ull << 20;

// Whole-file helpers used by the loaders and the tests. readTextFile is common/file.h's
// readInputFile with the cap kMaxTextFileBytes: a directory, FIFO, device or socket, or a larger
// file, is an Io error naming the path, refused before anything opens it.
Expected<std::string> readTextFile(const std::string& path);
Status writeTextFile(const std::string& path, const std::string& text);

}  // namespace qgpu::model
