// qgpu/harness/subprocess.h — runs a command as a child process with a time limit, for the
// reducer's predicate and `qgpu bisect-run` (harness/reduce.h, harness/bisect.h).
//
// Contract: the child gets stdin /dev/null, stdout and stderr into `logPath` (or inherited when
// it is empty), runs in `workDir` (or ours), with `env` added to our environment, and leads its
// own process group: past `timeoutSeconds` the whole group is killed (SIGKILL) and the result
// says timedOut; what it left running in the group is killed when it ends, too. Never throws;
// errors are values: Internal (fork/wait failed). A command that cannot be executed is exit 127,
// as a shell reports it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/diag.h"

namespace qgpu {

struct ProcessOptions {
  std::string workDir;                                   // empty: the current directory
  std::string logPath;                                   // empty: inherit stdout/stderr
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  double timeoutSeconds = 60;  // (0, 1e6]; the caller validates user input against that
};

struct ProcessResult {
  bool timedOut = false;
  int exitCode = -1;  // when it exited
  int signal = 0;     // when a signal ended it (not ours)
  bool exitedWith(int code) const { return !timedOut && signal == 0 && exitCode == code; }
};

Expected<ProcessResult> runProcess(const std::vector<std::string>& argv, const ProcessOptions& options);

// The last `lines` lines of a file, at most 2,000 characters (for messages quoting a log).
std::string logTail(const std::string& path, int lines = 5);

}  // namespace qgpu
