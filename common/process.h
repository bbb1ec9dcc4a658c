// qgpu/common/process.h — waiting for a child process with a time limit, shared by the compiler
// driver (host/cuda/compile.cpp) and the reducer's and bisect's subprocesses (harness/subprocess.h).
#pragma once

#include <sys/types.h>

#include <chrono>

#include "common/diag.h"

namespace qgpu {

struct ChildExit {
  bool timedOut = false;  // the limit passed: the child's whole process group was killed
  int exitCode = -1;      // when it exited
  int signal = 0;         // when a signal ended it (not ours)
};

// Waits for `pid`, the leader of its own process group, polling (1 ms, doubling to 20 ms). When
// `limit` passes first, SIGKILLs the group and reaps the child. Internal if waitpid fails.
Expected<ChildExit> waitForChild(pid_t pid, std::chrono::milliseconds limit);

}  // namespace qgpu
