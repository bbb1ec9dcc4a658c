// readInputFile (common/file.h): what it refuses before reading, and that the read itself is
// bounded. Each refusal has a twin that is read. writeFileAtomic: a write leaves the whole new
// file or the old one, and no temporary beside it.
#include "common/file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace qgpu {
namespace {

namespace fs = std::filesystem;

class ReadInputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/qgpu_file_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Expects an Io refusal located at `path` whose message contains `words`.
  static void expectRefused(const Expected<std::string>& read, const std::string& path,
                            const std::string& words) {
    ASSERT_FALSE(read.ok()) << path << " was read";
    EXPECT_EQ(read.error().kind, ErrorKind::Io);
    EXPECT_EQ(read.error().loc.file, path);
    EXPECT_NE(read.error().message.find(words), std::string::npos) << read.error().message;
  }

  std::string dir_;
};

TEST_F(ReadInputFile, ReadsARegularFileAndAnEmptyOne) {
  const std::string bytes("abc\0def", 7);  // a NUL inside: read as bytes, not as a C string
  auto text = readInputFile(write("k.cu", bytes), 100, "kernel file");
  ASSERT_TRUE(text.ok()) << text.error().str();
  EXPECT_EQ(*text, bytes);
  auto empty = readInputFile(write("empty.cu", ""), 100, "kernel file");
  ASSERT_TRUE(empty.ok()) << empty.error().str();
  EXPECT_EQ(*empty, "");
}

TEST_F(ReadInputFile, ReadsAFileExactlyAtTheCapAndRefusesOneByteMore) {
  auto at = readInputFile(write("at.txt", std::string(64, 'x')), 64, "kernel file");
  ASSERT_TRUE(at.ok()) << at.error().str();
  EXPECT_EQ(at->size(), 64u);
  std::string over = write("over.txt", std::string(65, 'x'));
  expectRefused(readInputFile(over, 64, "kernel file"), over,
                "kernel file is 65 bytes, over the limit of 64 bytes");
}

TEST_F(ReadInputFile, RefusesASparseFileOverTheCapFromItsSize) {
  std::string path = dir_ + "/sparse.bin";
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{3} << 30), 0);  // 3 GiB of holes: reading it would take 3 GiB
  ::close(fd);
  expectRefused(readInputFile(path, size_t{4} << 20, "PTX file"), path, "3221225472 bytes");
}

TEST_F(ReadInputFile, RefusesADirectory) {
  expectRefused(readInputFile(dir_, 100, "kernel file"), dir_, "a directory");
}

TEST_F(ReadInputFile, RefusesAFifoWithoutBlocking) {
  std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expectRefused(readInputFile(path, 100, "kernel file"), path, "a FIFO");
}

TEST_F(ReadInputFile, RefusesACharacterDevice) {
  expectRefused(readInputFile("/dev/zero", 100, "kernel file"), "/dev/zero",
                "a character device");
}

TEST_F(ReadInputFile, RefusesASocket) {
  std::string path = dir_ + "/sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  expectRefused(readInputFile(path, 100, "kernel file"), path, "a socket");
  ::close(fd);
}

TEST_F(ReadInputFile, RefusesAMissingFileWithTheReason) {
  std::string path = dir_ + "/missing.cu";
  expectRefused(readInputFile(path, 100, "kernel file"), path, "No such file");
}

// /proc files stat as empty regular files yet yield text: the stat passes, so only the bounded
// read can catch that there is more than the cap (as for a file that grows after the stat).
TEST_F(ReadInputFile, RegularFileSizeGivesTheSizeAndTheSameRefusals) {
  auto size = regularFileSize(write("w.safetensors", std::string(10, 'x')), 10, "weights file");
  ASSERT_TRUE(size.ok()) << size.error().str();
  EXPECT_EQ(*size, 10u);
  auto over = regularFileSize(write("big.safetensors", std::string(11, 'x')), 10, "weights file");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("weights file is 11 bytes, over the limit of 10 bytes"),
            std::string::npos)
      << over.error().message;
  auto directory = regularFileSize(dir_, UINT64_MAX, "weights file");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().kind, ErrorKind::Io);
  EXPECT_NE(directory.error().message.find("cannot read weights file: it is a directory"),
            std::string::npos)
      << directory.error().message;
}

TEST(ReadInputFileBound, StopsAReadThatOutgrowsItsStatAtTheCap) {
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/maps", &st), 0);
  ASSERT_EQ(st.st_size, 0);
  auto small = readInputFile("/proc/self/maps", 16, "maps");
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().kind, ErrorKind::Io);
  EXPECT_NE(small.error().message.find("more than 16"), std::string::npos)
      << small.error().message;
  auto whole = readInputFile("/proc/self/maps", size_t{1} << 20, "maps");  // the twin
  ASSERT_TRUE(whole.ok()) << whole.error().str();
  EXPECT_GT(whole->size(), 16u);
}

size_t entries(const std::string& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST_F(ReadInputFile, WriteFileAtomicWritesAndReplacesLeavingNoTemporary) {
  const std::string f = dir_ + "/r.json";
  ASSERT_TRUE(writeFileAtomic(f, "first").ok());
  EXPECT_EQ(*readInputFile(f, 100, "report"), "first");
  ASSERT_TRUE(writeFileAtomic(f, "second, longer").ok());
  EXPECT_EQ(*readInputFile(f, 100, "report"), "second, longer");
  EXPECT_EQ(entries(dir_), 1u);
}

TEST_F(ReadInputFile, WriteFileAtomicRefusesAMissingDirectoryAndADirectoryTarget) {
  auto missing = writeFileAtomic(dir_ + "/no/r.json", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::Io);
  fs::create_directory(dir_ + "/d");
  auto directory = writeFileAtomic(dir_ + "/d", "x");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().kind, ErrorKind::Io);
  EXPECT_TRUE(fs::is_directory(dir_ + "/d"));
  EXPECT_EQ(entries(dir_), 1u);  // no temporary left behind
}

}  // namespace
}  // namespace qgpu
