// qgpu/common/file.cpp — bounded reads of user-named files, atomic writes (common/file.h).
#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/text.h"

namespace qgpu {

namespace {

const char* typeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

Diag ioError(const std::string& path, std::string message) {
  return makeDiag(ErrorKind::Io, std::move(message), SourceLoc{path, 0, 0});
}

Diag refuseType(const std::string& path, std::string_view what, mode_t mode) {
  return ioError(path, "cannot read " + std::string(what) + ": it is " + typeName(mode) +
                           ", not a regular file");
}

Diag refuseSize(const std::string& path, std::string_view what, const std::string& size,
                uint64_t maxBytes) {
  return ioError(path, std::string(what) + " is " + size + " bytes, over the limit of " +
                           std::to_string(maxBytes) + " bytes");
}

// Closes the descriptor on every path out of readInputFile.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Diag writeError(const std::string& path, const std::string& what, int err) {
  return ioError(path, "cannot " + what + " '" + echo(path, 400) + "': " + std::strerror(err));
}

}  // namespace

Expected<uint64_t> regularFileSize(const std::string& path, uint64_t maxBytes,
                                   std::string_view what) {
  // stat before open: opening a FIFO for reading would block until a writer comes.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return ioError(path, "cannot read " + std::string(what) + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuseType(path, what, st.st_mode);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes) return refuseSize(path, what, std::to_string(size), maxBytes);
  return size;
}

Expected<std::string> readInputFile(const std::string& path, size_t maxBytes,
                                    std::string_view what) {
  const std::string name(what);
  const std::string cap = std::to_string(maxBytes);
  QGPU_CHECK(regularFileSize(path, maxBytes, what));

  // The path may have been replaced since the stat: O_NONBLOCK keeps a FIFO from blocking the
  // open, and fstat checks what was actually opened.
  struct stat st {};
  Fd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (file.fd < 0) return ioError(path, "cannot read " + name + ": " + std::strerror(errno));
  if (::fstat(file.fd, &st) != 0)
    return ioError(path, "cannot read " + name + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuseType(path, what, st.st_mode);
  if (static_cast<unsigned long long>(st.st_size) > maxBytes)
    return refuseSize(path, what, std::to_string(st.st_size), maxBytes);

  // Read at most maxBytes + 1 bytes: one byte more than the cap proves the file grew past it.
  std::string text;
  text.resize(static_cast<size_t>(st.st_size) < maxBytes ? static_cast<size_t>(st.st_size) + 1
                                                         : maxBytes + 1);
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (got > maxBytes) return refuseSize(path, what, "more than " + cap, maxBytes);
      text.resize(std::min(maxBytes + 1, text.size() * 2 + 4096));
    }
    ssize_t n = ::read(file.fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ioError(path, "cannot read " + name + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > maxBytes) return refuseSize(path, what, "more than " + cap, maxBytes);
  text.resize(got);
  return text;
}

Status writeFileAtomic(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.filename().empty()) return writeError(path, "write", EISDIR);
  // rename() would replace an empty directory: refuse a directory at the target up front.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return writeError(path, "write", EISDIR);
  static std::atomic<unsigned> counter{0};
  fs::path temp = target.parent_path() /
                  ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                   std::to_string(counter.fetch_add(1)));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return writeError(path, "create a temporary file beside", errno);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(temp.c_str());
      return writeError(path, "write", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  int synced = ::fsync(fd);
  int err = synced != 0 ? errno : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    return writeError(path, "write", err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return writeError(path, "rename a temporary file onto", err);
  }
  return Ok{};
}

}  // namespace qgpu
