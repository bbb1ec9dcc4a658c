// qgpu/harness/tests/progress_test.cpp — the progress bar of `qgpu check` (cli/progress.h): quiet
// when stderr is not a terminal, quiet for runs shorter than the delay, drawn and erased on a
// terminal after it. The clock is driven by the test.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "harness/cli/progress.h"

namespace qgpu::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  std::fseek(f, 0, SEEK_END);  // stdio needs a seek between reading and writing
  return s;
}

TEST(Progress, NotWantedWhenStderrIsNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(progressWanted(fileno(f), false));  // a file
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_FALSE(progressWanted(fds[1], false));  // a pipe
  close(fds[0]);
  close(fds[1]);
  int devnull = open("/dev/null", O_WRONLY);
  EXPECT_FALSE(progressWanted(devnull, false));  // a character device that is no terminal
  close(devnull);
  std::fclose(f);
}

TEST(Progress, ADisabledBarWritesNothingHoweverLongTheRun) {
  std::FILE* f = std::tmpfile();
  Clock::time_point t{};
  ProgressBar bar(10, /*enabled=*/false, f, [&] { return t; });
  for (int i = 0; i < 10; ++i) {
    t += 10s;
    bar.tick("k");
  }
  bar.finish();
  EXPECT_EQ(contents(f), "");
  EXPECT_FALSE(bar.drawn());
  std::fclose(f);
}

TEST(Progress, AnEnabledBarWaitsForTheDelayThenDrawsAndErases) {
  std::FILE* f = std::tmpfile();
  Clock::time_point t{};
  ProgressBar bar(4, /*enabled=*/true, f, [&] { return t; });
  t += 1s;
  bar.tick("a");  // before the 2 s delay: nothing
  EXPECT_EQ(contents(f), "");
  t += 2s;
  bar.tick("b");  // 2 of 4 done, at 3 s
  std::string drawn = contents(f);
  EXPECT_EQ(drawn, "\r[###############...............] 2/4 cases  3 s  b\x1b[K");
  bar.finish();
  EXPECT_EQ(contents(f), drawn + "\r\x1b[K");
  std::fclose(f);
}

}  // namespace
}  // namespace qgpu::cli
