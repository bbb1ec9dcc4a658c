// qgpu/model/safetensors.cpp — see safetensors.h.
#include "model/safetensors.h"
#include "model/checkpoint_error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file.h"
#include "model/json_text.h"

namespace qgpu::model {
namespace {

Diag ioFail(const std::string& file, const std::string& what) {
  return makeDiag(ErrorKind::Io, what + ": " + std::strerror(errno), SourceLoc{file});
}

}  // namespace

Expected<std::string> readTextFile(const std::string& path) {
  return readInputFile(path, kMaxTextFileBytes, "checkpoint file");
}

Status writeTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ioFail(path, "cannot create");
  out << text;
  if (!out) return ioFail(path, "write failed");
  return Ok{};
}

Expected<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  // A directory, FIFO or device is refused before open() (which would block on a FIFO); the size
  // is not capped, as the file is mapped, not read.
  QGPU_CHECK(regularFileSize(path, UINT64_MAX, "safetensors file"));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ioFail(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ioFail(path, "cannot stat as a regular file");
  }
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (file->size_ > 0) {
    // MAP_PRIVATE + PROT_READ: pages are shared with the page cache; nothing is copied until read.
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return ioFail(path, "cannot mmap");
    }
    file->base_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  auto header = parseSafetensors(std::span<const uint8_t>(file->base_, file->size_), path);
  if (!header) return header.error();
  file->header_ = std::move(header.value());
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
}

std::span<const uint8_t> SafetensorsFile::bytes(const StTensorInfo& info) const {
  return {base_ + header_.dataStart + info.begin, info.bytes()};
}

void SafetensorsFile::release(const StTensorInfo& info) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t begin = header_.dataStart + info.begin, end = header_.dataStart + info.end;
  begin = (begin + page - 1) / page * page;  // only whole pages inside the tensor
  end = end / page * page;
  if (base_ != nullptr && end > begin)
    ::madvise(const_cast<uint8_t*>(base_) + begin, end - begin, MADV_DONTNEED);
}

Expected<Checkpoint> Checkpoint::open(const std::string& dir) {
  namespace fs = std::filesystem;
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  const std::string indexPath = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string singlePath = (fs::path(dir) / "model.safetensors").string();
  std::error_code ec;
  if (fs::exists(indexPath, ec)) {
    QGPU_TRY(text, readTextFile(indexPath));
    QGPU_TRY(doc, parseJsonText(text, indexPath, ErrorKind::Checkpoint));
    if (!doc.is_object() || !doc.contains("weight_map") ||
        !doc["weight_map"].is_object())
      return checkpointError(indexPath, "index is not JSON with a \"weight_map\" object");
    std::map<std::string, size_t> shardIndex;
    for (auto it = doc["weight_map"].begin(); it != doc["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        return checkpointError(indexPath,
                               "weight_map entry of '" + it.key() + "' is not a file name");
      std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == ".." || shard.empty())
        return checkpointError(indexPath,
                               "weight_map entry of '" + it.key() + "' is not a plain file name");
      if (!shardIndex.count(shard)) {
        QGPU_TRY(file, SafetensorsFile::open((fs::path(dir) / shard).string()));
        shardIndex[shard] = ckpt.files_.size();
        ckpt.files_.push_back(std::move(file));
      }
      size_t fi = shardIndex[shard];
      const StTensorInfo* info = ckpt.files_[fi]->header().find(it.key());
      if (info == nullptr)
        return checkpointError(
            ckpt.files_[fi]->path(),
            "tensor '" + it.key() + "' is listed in the index but missing from this shard");
      ckpt.where_[it.key()] = {fi, info};
    }
    // Tensors present in a shard but not in the index would be silently unreachable: refuse.
    for (size_t fi = 0; fi < ckpt.files_.size(); ++fi)
      for (const auto& t : ckpt.files_[fi]->header().tensors)
        if (!ckpt.where_.count(t.name))
          return checkpointError(ckpt.files_[fi]->path(),
                                 "tensor '" + t.name + "' is not in the index");
    return ckpt;
  }
  if (!fs::exists(singlePath, ec))
    return makeDiag(ErrorKind::Io, "no model.safetensors or model.safetensors.index.json",
                    SourceLoc{dir});
  QGPU_TRY(file, SafetensorsFile::open(singlePath));
  ckpt.files_.push_back(std::move(file));
  for (const auto& t : ckpt.files_[0]->header().tensors) ckpt.where_[t.name] = {0, &t};
  return ckpt;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : where_) out.push_back(name);
  return out;
}

Expected<CheckpointTensor> Checkpoint::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return checkpointError(dir_, "missing tensor '" + name + "'");
  return CheckpointTensor{it->second.second, files_[it->second.first]};
}

uint64_t Checkpoint::dataBytes() const {
  uint64_t total = 0;
  for (const auto& f : files_) total += f->header().dataBytes;
  return total;
}

Status writeSafetensors(const std::string& path, const std::vector<const StTensorWrite*>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const StTensorWrite* t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t->shape) numel *= static_cast<uint64_t>(d);
    if (numel * stDtypeSize(t->dtype) != t->bytes().size())
      return makeDiag(ErrorKind::Usage,
                      "tensor '" + t->name + "': data size does not match shape and dtype",
                      SourceLoc{path});
    header[t->name] = {{"dtype", stDtypeName(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->bytes().size()}}};
    offset += t->bytes().size();
  }
  std::string json = header.dump();
  // The reference writer pads the header with spaces so that the data section is 8-aligned.
  while ((json.size() % 8) != 0) json.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ioFail(path, "cannot create");
  uint64_t n = json.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(json.data(), static_cast<std::streamsize>(json.size()));
  for (const StTensorWrite* t : tensors)
    out.write(reinterpret_cast<const char*>(t->bytes().data()),
              static_cast<std::streamsize>(t->bytes().size()));
  if (!out) return ioFail(path, "write failed");
  return Ok{};
}

Status writeCheckpointTensors(const std::string& dir, const std::vector<StTensorWrite>& tensors,
                              uint64_t maxShardBytes,
                              const std::map<std::string, std::string>& metadata) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeDiag(ErrorKind::Io, "cannot create directory: " + ec.message(), SourceLoc{dir});
  std::vector<std::vector<const StTensorWrite*>> shards(1);
  uint64_t inShard = 0, total = 0;
  for (const auto& t : tensors) {
    if (!shards.back().empty() && inShard + t.bytes().size() > maxShardBytes) {
      shards.emplace_back();
      inShard = 0;
    }
    shards.back().push_back(&t);
    inShard += t.bytes().size();
    total += t.bytes().size();
  }
  // Remove a stale layout so that the directory holds exactly one checkpoint.
  fs::remove(fs::path(dir) / "model.safetensors", ec);
  fs::remove(fs::path(dir) / "model.safetensors.index.json", ec);
  if (shards.size() == 1)
    return writeSafetensors((fs::path(dir) / "model.safetensors").string(), shards[0], metadata);
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    QGPU_CHECK(writeSafetensors((fs::path(dir) / name).string(), shards[i], metadata));
    for (const StTensorWrite* t : shards[i]) index["weight_map"][t->name] = name;
  }
  return writeTextFile((fs::path(dir) / "model.safetensors.index.json").string(),
                       index.dump(2) + "\n");
}

}  // namespace qgpu::model
