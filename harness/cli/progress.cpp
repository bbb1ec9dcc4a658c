// qgpu/harness/cli/progress.cpp — see progress.h.
#include "harness/cli/progress.h"

#include <unistd.h>

#include <algorithm>

namespace qgpu::cli {

bool progressWanted(int fd, bool json) {
  return !json && ::isatty(fd) == 1;
}

ProgressBar::ProgressBar(size_t total, bool enabled, std::FILE* out, Clock clock,
                         std::chrono::milliseconds delay, std::chrono::milliseconds interval)
    : total_(total),
      enabled_(enabled),
      out_(out),
      clock_(std::move(clock)),
      delay_(delay),
      interval_(interval) {
  start_ = now();
}

std::chrono::steady_clock::time_point ProgressBar::now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void ProgressBar::tick(const std::string& label) {
  ++done_;
  if (!enabled_) return;
  auto t = now();
  if (t - start_ < delay_) return;
  if (drawn_ && t - last_ < interval_ && done_ < total_) return;
  last_ = t;
  constexpr int kWidth = 30;
  size_t total = std::max<size_t>(total_, 1);
  int filled = static_cast<int>(std::min(done_, total) * kWidth / total);
  double seconds = std::chrono::duration<double>(t - start_).count();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(out_, "\r[%s] %zu/%zu cases  %.0f s  %.40s\x1b[K", bar.c_str(), done_, total_,
               seconds, label.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  std::fprintf(out_, "\r\x1b[K");
  std::fflush(out_);
}

}  // namespace qgpu::cli
