// Tests of model/safetensors_header.h and model/safetensors.h: round trips of single and sharded
// files, and one test per corrupt-file check (each check's failing twin is the round trip).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstring>
#include <limits>
#include <sys/stat.h>
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
  EXPECT_EQ(h.error().kind, ErrorKind::Checkpoint);
  EXPECT_NE(h.error().message.find("invalid JSON"), std::string::npos) << h.error().str();
}

// Hugging Face's reader (safetensors 0.8, checked with its Python binding) refuses a repeated
// field of an entry and a repeated "__metadata__"; a repeated tensor name it resolves by keeping
// the last entry. We refuse every repeated key (header doc comment in safetensors_header.cpp).
TEST(SafetensorsHeader, RejectsDuplicateTensorName) {
  // The second "a" is identical: HF would accept this file, taking the last entry.
  auto h = parseRaw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                        "a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                    4);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("duplicate key 'a'"), std::string::npos) << h.error().str();
}

TEST(SafetensorsHeader, RejectsDuplicateFieldOfAnEntryAndDuplicateMetadata) {
  auto field = parseRaw(R"({"a":{"dtype":"F32","dtype":"BF16","shape":[1],"data_offsets":[0,4]}})", 4);
  ASSERT_FALSE(field.ok());
  EXPECT_NE(field.error().message.find("duplicate key 'dtype'"), std::string::npos) << field.error().str();
  auto meta = parseRaw(R"({"__metadata__":{"x":"1"},"__metadata__":{"y":"2"}})", 0);
  ASSERT_FALSE(meta.ok());
  EXPECT_NE(meta.error().message.find("duplicate key '__metadata__'"), std::string::npos);
}

// The twin of these is ParsesValidHeader: 32 bytes of data, covered exactly.
TEST(SafetensorsHeader, RejectsTrailingBytesAfterTheLastTensor) {
  auto h = parseRaw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8 + 4096);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("4096 trailing bytes"), std::string::npos) << h.error().str();
  EXPECT_NE(h.error().message.find("MetadataIncompleteBuffer"), std::string::npos);
  // An empty header with data after it is the same mistake.
  EXPECT_FALSE(parseRaw("{}", 1).ok());
  EXPECT_TRUE(parseRaw("{}", 0).ok());
}

TEST(SafetensorsHeader, RejectsGapBetweenTensors) {
  auto h = parseRaw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                        "b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                    12);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("tensor 'b'"), std::string::npos) << h.error().str();
  EXPECT_NE(h.error().message.find("gap"), std::string::npos);
}

TEST(SafetensorsHeader, AcceptsEmptyTensorAndUnpaddedHeaderAsHfDoes) {
  auto h = parseRaw(R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},
                        "b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} )",
                    8);
  ASSERT_TRUE(h.ok()) << h.error().str();
  EXPECT_EQ(h->tensors.size(), 2u);
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

// stat() before open: none of these may block, read without bound or reach mmap.
TEST(CheckpointFiles, DirectoryNamedModelSafetensorsIsAnIoError) {
  std::string dir = tempDir("dirst");
  fs::create_directories(dir + "/model.safetensors");
  auto c = Checkpoint::open(dir);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::Io);
  EXPECT_NE(c.error().message.find("is a directory"), std::string::npos) << c.error().str();
  EXPECT_EQ(c.error().loc.file, dir + "/model.safetensors");
}

TEST(CheckpointFiles, FifoIsRefusedWithoutBlocking) {
  std::string dir = tempDir("fifo");
  ASSERT_EQ(::mkfifo((dir + "/model.safetensors").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir + "/config.json").c_str(), 0600), 0);
  auto c = Checkpoint::open(dir);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("is a FIFO"), std::string::npos) << c.error().str();
  auto t = readTextFile(dir + "/config.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::Io);
  EXPECT_NE(t.error().message.find("is a FIFO"), std::string::npos);
}

TEST(CheckpointFiles, DevZeroAsConfigIsRefused) {
  std::string dir = tempDir("devzero");
  fs::create_symlink("/dev/zero", dir + "/config.json");
  auto t = readTextFile(dir + "/config.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::Io);
  EXPECT_NE(t.error().message.find("character device"), std::string::npos) << t.error().str();
}

TEST(CheckpointFiles, HugeSparseFilesAreRefusedCheaply) {
  std::string dir = tempDir("sparse");
  // 3 GB of holes: a text file over the cap is refused before reading...
  { std::ofstream(dir + "/config.json").put('{'); }
  fs::resize_file(dir + "/config.json", 3ull << 30);
  auto t = readTextFile(dir + "/config.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::Io);
  EXPECT_NE(t.error().message.find("over the"), std::string::npos) << t.error().str();
  // ...and a mapped safetensors file is refused by its header (length 0: not JSON), unread.
  { std::ofstream(dir + "/model.safetensors").put('\0'); }
  fs::resize_file(dir + "/model.safetensors", 3ull << 30);
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::Checkpoint);
  fs::remove_all(dir);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3.0f / 256), 0x3f82);
}

// IEEE binary16 bit patterns worked by hand (sign | 5-bit exponent, bias 15 | 10-bit mantissa).
TEST(F16, RoundsToNearestEvenWithSubnormalsAndOverflow) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);          // the largest finite half
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00);          // halfway to 2^16 rounds up: infinity
  EXPECT_EQ(floatToF16(1.0f + 1.0f / 2048), 0x3c00);  // halfway: ties to even (1.0)
  EXPECT_EQ(floatToF16(1.0f + 3.0f / 2048), 0x3c02);  // halfway: ties to even (up)
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);  // halfway to it: ties to even (0)
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: ties to even (2)
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(floatToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToF16(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(floatToF16(std::nanf("")) & 0x03ff, 0);  // NaN stays NaN
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7e00)));
}

}  // namespace
}  // namespace qgpu::model
