// qgpu/harness/subprocess.cpp — a child process with a time limit (subprocess.h).
#include "harness/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/process.h"

namespace qgpu {

Expected<ProcessResult> runProcess(const std::vector<std::string>& argv,
                                   const ProcessOptions& options) {
  if (argv.empty()) return makeDiag(ErrorKind::Usage, "no command to run");
  if (!(options.timeoutSeconds > 0) || options.timeoutSeconds > 1e6)
    return makeDiag(ErrorKind::Usage, "a timeout must be in (0, 1e6] seconds");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0)
    return makeDiag(ErrorKind::Internal, std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls from here on (and setenv, which is fine single-threaded).
    ::setpgid(0, 0);
    int in = ::open("/dev/null", O_RDONLY);
    if (in < 0) ::_exit(126);
    ::dup2(in, 0);
    if (!options.logPath.empty()) {
      int log = ::open(options.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (log < 0) ::_exit(126);
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    if (!options.workDir.empty() && ::chdir(options.workDir.c_str()) != 0) ::_exit(126);
    for (const auto& [k, v] : options.env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // from the parent too: the group exists before any kill below
  ProcessResult result;
  QGPU_TRY(exit, waitForChild(pid, std::chrono::milliseconds(
                                      static_cast<int64_t>(options.timeoutSeconds * 1000))));
  ::kill(-pid, SIGKILL);  // whatever it left running in its group
  result.timedOut = exit.timedOut;
  result.exitCode = exit.exitCode;
  result.signal = exit.signal;
  return result;
}

std::string logTail(const std::string& path, int lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size <= 0) return "";
  std::streamoff from = std::max<std::streamoff>(0, size - 64 * 1024);
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t at = text.size();
  for (int i = 0; i < lines && at != std::string::npos && at > 0; ++i)
    at = text.rfind('\n', at - 1);
  std::string t = at == std::string::npos ? text : text.substr(at + 1);
  if (t.size() > 2000) t = t.substr(t.size() - 2000);
  return t;
}

}  // namespace qgpu
