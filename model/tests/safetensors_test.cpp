// Tests of model/safetensors_header.h and model/safetensors.h: round trips of single and sharded
// files, and one test per corrupt-file check (each check's failing twin is the round trip).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <unistd.h>

#include "model/safetensors.h"
#include "model/tiny.h"

namespace qgpu::model {
namespace {

namespace fs = std::filesystem;

std::string tempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("qgpu_st_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// A file from a literal JSON header and `dataBytes` zero bytes of data.
std::vector<uint8_t> rawFile(const std::string& json, size_t dataBytes) {
  std::vector<uint8_t> out(8 + json.size() + dataBytes, 0);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(json.begin(), json.end(), out.begin() + 8);
  return out;
}

Expected<StHeader> parseRaw(const std::string& json, size_t dataBytes) {
  auto bytes = rawFile(json, dataBytes);
  return parseSafetensors(bytes, "x.safetensors");
}

StTensorWrite f32Tensor(const std::string& name, std::vector<int64_t> shape, float start) {
  StTensorWrite t;
  t.name = name;
  t.shape = shape;
  int64_t n = 1;
  for (auto d : shape) n *= d;
  t.data.resize(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = start + static_cast<float>(i);
    std::memcpy(t.data.data() + 4 * i, &v, 4);
  }
  return t;
}

TEST(SafetensorsHeader, ParsesValidHeader) {
  auto h = parseRaw(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},
                        "b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},
                        "__metadata__":{"format":"pt"}})",
                    32);
  ASSERT_TRUE(h.ok()) << h.error().str();
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->find("a")->numel(), 6u);
  EXPECT_EQ(h->find("b")->dtype, StDtype::BF16);
  EXPECT_EQ(h->metadata.at("format"), "pt");
}

TEST(SafetensorsHeader, RejectsShorterThanLengthField) {
  std::vector<uint8_t> bytes = {1, 2, 3};
  auto h = parseSafetensors(bytes, "short.safetensors");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().kind, ErrorKind::Checkpoint);
  EXPECT_EQ(h.error().loc.file, "short.safetensors");
}

TEST(SafetensorsHeader, RejectsHeaderLengthPastEndOfFile) {
  auto bytes = rawFile(R"({})", 0);
  bytes[0] = 200;  // claims a 200-byte header in a 10-byte file
  auto h = parseSafetensors(bytes, "x.safetensors");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("runs past the end"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsNonJson) {
  auto h = parseRaw("{not json", 0);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("not valid JSON"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsUnknownDtypeNamingTensor) {
  auto h = parseRaw(R"({"w":{"dtype":"F8_E9","shape":[1],"data_offsets":[0,1]}})", 1);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("tensor 'w'"), std::string::npos);
  EXPECT_NE(h.error().message.find("unknown dtype"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsByteSizeThatDoesNotMatchShape) {
  // A lying header: 2x3 F32 needs 24 bytes, the offsets give 20.
  auto h = parseRaw(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("does not match shape"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsOffsetsPastDataSection) {
  auto h = parseRaw(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 12);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("past the data section"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsOverlappingTensors) {
  auto h = parseRaw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                        "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                    12);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("overlaps"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsHugeShapeWithoutOverflow) {
  // 2^62 * 2^62 elements would overflow 64 bits; the parser must say "does not match", not wrap.
  auto h = parseRaw(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904,4],
                        "data_offsets":[0,0]}})",
                    0);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("does not match shape"), std::string::npos);
}

TEST(SafetensorsHeader, RejectsNegativeDimensionAndBadOffsets) {
  EXPECT_FALSE(parseRaw(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4).ok());
  EXPECT_FALSE(parseRaw(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4).ok());
  EXPECT_FALSE(parseRaw(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4).ok());
  EXPECT_FALSE(parseRaw(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4).ok());
  EXPECT_FALSE(parseRaw(R"({"w":[1,2]})", 4).ok());
  EXPECT_FALSE(parseRaw(R"([1,2])", 4).ok());
  EXPECT_FALSE(parseRaw(R"({"__metadata__":{"k":1}})", 0).ok());
}

TEST(SafetensorsFile, RoundTripsTensorsAndMetadata) {
  std::string dir = tempDir("roundtrip");
  auto a = f32Tensor("a", {2, 3}, 1.0f), b = f32Tensor("b", {5}, 100.0f);
  std::string path = dir + "/m.safetensors";
  ASSERT_TRUE(writeSafetensors(path, {&a, &b}, {{"format", "pt"}}).ok());
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().str();
  EXPECT_EQ((*file)->header().dataStart % 8, 0u);  // header padded like the reference writer
  auto bytes = (*file)->bytes(*(*file)->header().find("b"));
  ASSERT_EQ(bytes.size(), b.data.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), b.data.begin()));
  EXPECT_EQ((*file)->header().metadata.at("format"), "pt");
}

TEST(SafetensorsFile, RejectsTruncatedFileNamingFileAndTensor) {
  std::string dir = tempDir("trunc");
  auto a = f32Tensor("first", {4}, 0.0f), b = f32Tensor("second", {4}, 0.0f);
  std::string path = dir + "/m.safetensors";
  ASSERT_TRUE(writeSafetensors(path, {&a, &b}).ok());
  fs::resize_file(path, fs::file_size(path) - 3);
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().kind, ErrorKind::Checkpoint);
  EXPECT_EQ(file.error().loc.file, path);
  EXPECT_NE(file.error().message.find("'second'"), std::string::npos);
  EXPECT_NE(file.error().message.find("truncated"), std::string::npos);
}

TEST(Checkpoint, ShardedCheckpointRoundTrips) {
  std::string dir = tempDir("sharded");
  std::vector<StTensorWrite> ts = {f32Tensor("x", {8}, 0), f32Tensor("y", {8}, 10), f32Tensor("z", {8}, 20)};
  ASSERT_TRUE(writeCheckpointTensors(dir, ts, /*maxShardBytes=*/40).ok());
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir + "/model-00003-of-00003.safetensors"));
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().str();
  EXPECT_EQ(ckpt->names(), (std::vector<std::string>{"x", "y", "z"}));
  auto z = ckpt->get("z");
  ASSERT_TRUE(z.ok());
  float first;
  std::memcpy(&first, z->bytes().data(), 4);
  EXPECT_EQ(first, 20.0f);
  EXPECT_EQ(ckpt->dataBytes(), 96u);
}

TEST(Checkpoint, MissingTensorIsNamed) {
  std::string dir = tempDir("missing");
  ASSERT_TRUE(writeCheckpointTensors(dir, {f32Tensor("x", {2}, 0)}).ok());
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(ckpt.ok());
  auto t = ckpt->get("model.norm.weight");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("'model.norm.weight'"), std::string::npos);
}

TEST(Checkpoint, RejectsIndexEntryAbsentFromShard) {
  std::string dir = tempDir("badindex");
  ASSERT_TRUE(writeCheckpointTensors(dir, {f32Tensor("x", {2}, 0), f32Tensor("y", {2}, 0)}, 8).ok());
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"weight_map":{"x":"model-00001-of-00002.safetensors","y":"model-00001-of-00002.safetensors"}})";
  auto ckpt = Checkpoint::open(dir);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.error().message.find("'y'"), std::string::npos);
}

TEST(Checkpoint, RejectsIndexPathEscapingTheDirectory) {
  std::string dir = tempDir("escape");
  ASSERT_TRUE(writeCheckpointTensors(dir, {f32Tensor("x", {2}, 0)}).ok());
  std::ofstream(dir + "/model.safetensors.index.json") << R"({"weight_map":{"x":"../model.safetensors"}})";
  EXPECT_FALSE(Checkpoint::open(dir).ok());
}

TEST(Checkpoint, EmptyDirectoryIsAnIoError) {
  auto ckpt = Checkpoint::open(tempDir("empty"));
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.error().kind, ErrorKind::Io);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3.0f / 256), 0x3f82);
}

}  // namespace
}  // namespace qgpu::model
