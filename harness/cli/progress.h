// qgpu/harness/cli/progress.h — the progress bar of long runs (`qgpu check`), on stderr.
//
// Contract: the bar is drawn only when it is enabled — stderr is a terminal (progressWanted) —
// and only once the run has lasted `delay` (2 s: short runs print nothing), at most every
// `interval` (0.1 s), as one line rewritten in place ("\r... \x1b[K"); `finish` erases it. A
// disabled bar writes nothing at all, so logs, pipes and CI output never see it. The clock is a
// parameter so that tests drive it.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

namespace qgpu::cli {

// Whether a run should show a bar: stderr (`fd`) is a terminal and --json is not set.
bool progressWanted(int fd, bool json);

class ProgressBar {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  ProgressBar(size_t total, bool enabled, std::FILE* out = stderr, Clock clock = {},
              std::chrono::milliseconds delay = std::chrono::milliseconds(2000),
              std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  // One more item done; `label` names it (a kernel).
  void tick(const std::string& label);
  // Erases the bar if one was drawn.
  void finish();
  bool drawn() const { return drawn_; }

 private:
  std::chrono::steady_clock::time_point now() const;
  size_t total_, done_ = 0;
  bool enabled_, drawn_ = false;
  std::FILE* out_;
  Clock clock_;
  std::chrono::milliseconds delay_, interval_;
  std::chrono::steady_clock::time_point start_, last_{};
};

}  // namespace qgpu::cli
