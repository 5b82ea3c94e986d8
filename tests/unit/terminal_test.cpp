// Lines fitted to the terminal: cut with an ellipsis, never split inside a
// character or a colour, untouched when there is no width.
#include "gpuctl/util/terminal.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace gpuctl {
namespace {

TEST(Terminal, ALongLineIsCutToTheWidthWithAnEllipsis) {
  EXPECT_EQ(FitLine("worker1  os.time  will change: chrony is not installed", 20),
            "worker1  os.time  w\xe2\x80\xa6");
  EXPECT_EQ(FitLine("short", 20), "short");
  EXPECT_EQ(FitLine("exactly10!", 10), "exactly10!");
  EXPECT_EQ(FitLine("eleven char", 10), "eleven ch\xe2\x80\xa6");
}

TEST(Terminal, NoWidthMeansNoCut) {
  const std::string line(500, 'x');
  EXPECT_EQ(FitLine(line, 0), line);
  EXPECT_EQ(FitLines(line + "\n" + line + "\n", 0), line + "\n" + line + "\n");
}

TEST(Terminal, ColoursTakeNoColumnAndACutLineEndsItsColour) {
  const std::string green = "\x1b[32m+\x1b[0m applied";
  EXPECT_EQ(FitLine(green, 9), green);  // 9 visible columns
  EXPECT_EQ(FitLine("\x1b[1mworker01 and more\x1b[0m", 6), "\x1b[1mworke\xe2\x80\xa6\x1b[0m");
}

TEST(Terminal, AUtf8CharacterIsOneColumnAndNeverSplit) {
  // "é" is two bytes: 6 columns fit "caféé" whole.
  EXPECT_EQ(FitLine("caf\xc3\xa9\xc3\xa9!", 6), "caf\xc3\xa9\xc3\xa9!");
  EXPECT_EQ(FitLine("caf\xc3\xa9\xc3\xa9!!", 6), "caf\xc3\xa9\xc3\xa9\xe2\x80\xa6");
}

TEST(Terminal, EveryLineIsFittedAndNewlinesKept) {
  EXPECT_EQ(FitLines("abcdef\nab\n\nabcdefgh", 4), "abc\xe2\x80\xa6\nab\n\nabc\xe2\x80\xa6");
}

TEST(Terminal, AStreamThatIsNotATerminalHasNoWidth) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  setenv("COLUMNS", "40", 1);
  EXPECT_EQ(TerminalWidth(fds[1]), 0U) << "a pipe is never cut, whatever COLUMNS says";
  unsetenv("COLUMNS");
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace gpuctl
