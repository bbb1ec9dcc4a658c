// qgpu/harness/report/atomic_file.cpp — temp file + fsync + rename (see atomic_file.h).
#include "harness/report/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/text.h"

namespace qgpu::report {

namespace {

Diag ioError(const std::string& path, const std::string& what, int err) {
  return makeDiag(ErrorKind::Io, "cannot " + what + " '" + echo(path, 400) + "': " +
                                     std::strerror(err), SourceLoc{path, 0, 0});
}

}  // namespace

Status writeFileAtomic(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.filename().empty()) return ioError(path, "write", EISDIR);
  // rename() would replace an empty directory: refuse a directory at the target up front.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return ioError(path, "write", EISDIR);
  static std::atomic<unsigned> counter{0};
  fs::path temp = target.parent_path() /
                  ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                   std::to_string(counter.fetch_add(1)));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ioError(path, "create a temporary file beside", errno);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(temp.c_str());
      return ioError(path, "write", err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  int synced = ::fsync(fd);
  int err = synced != 0 ? errno : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    return ioError(path, "write", err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return ioError(path, "rename a temporary file onto", err);
  }
  return Ok{};
}

}  // namespace qgpu::report
