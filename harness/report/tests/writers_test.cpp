// The JUnit XML and HTML writers and their escaping (junit.h, html.h, markup.h), on a report with
// one case of every verdict. What a CI system keys on is pinned by the literal text expected.
#include <gtest/gtest.h>

#include <regex>

#include "harness/report/html.h"
#include "harness/report/junit.h"
#include "harness/report/markup.h"
#include "harness/report/tests/report_fixture.h"

namespace qgpu::report {
namespace {

using testing::fakeReport;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(EscapeMarkup, EntitiesForTheFiveSpecialCharacters) {
  EXPECT_EQ(escapeMarkup("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(EscapeMarkup, LineBreaksAreReferencesOnlyInAttributes) {
  EXPECT_EQ(escapeMarkup("a\nb\tc", MarkupContext::Attribute), "a&#10;b&#9;c");
  EXPECT_EQ(escapeMarkup("a\nb\tc", MarkupContext::Content), "a\nb\tc");
}

TEST(EscapeMarkup, KeepsValidUtf8AndShowsEveryOtherByte) {
  EXPECT_EQ(escapeMarkup("\xE2\x80\xA6 \xC3\xA9"), "\xE2\x80\xA6 \xC3\xA9");  // … é
  EXPECT_EQ(escapeMarkup(std::string("\x01\x1b[31m\x7f", 7)), "\\x01\\x1B[31m\\x7F");
  EXPECT_EQ(escapeMarkup(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escapeMarkup("\xC0\xAF"), "\\xC0\\xAF");          // overlong '/'
  EXPECT_EQ(escapeMarkup("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(escapeMarkup("\xEF\xBF\xBF"), "\\xEF\\xBF\\xBF");  // U+FFFF
  EXPECT_EQ(escapeMarkup("\xE2\x80"), "\\xE2\\x80");          // truncated
}

TEST(JunitXml, CountsEveryVerdictAsCiSystemsDo) {
  std::string xml = junitXml(fakeReport({0, 1, 2, 3}));
  // 8 cases: interp alpha/delta match, beta mismatch, gamma harness error; 4 gpu inconclusive.
  EXPECT_NE(xml.find("<testsuites name=\"qgpu check\" tests=\"8\" failures=\"1\" errors=\"1\" "
                     "skipped=\"4\" time=\"2.000\""),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"interp.clang\" tests=\"4\" failures=\"1\" errors=\"1\" "
                     "skipped=\"0\""),
            std::string::npos);
  EXPECT_NE(xml.find("<testsuite name=\"gpu.clang\" tests=\"4\" failures=\"0\" errors=\"0\" "
                     "skipped=\"4\""),
            std::string::npos);
  EXPECT_EQ(count(xml, "<testcase "), 8u);
}

TEST(JunitXml, AMismatchIsAFailureWithItsFirstDifference) {
  std::string xml = junitXml(fakeReport({0, 1, 2, 3}));
  EXPECT_NE(xml.find("<testcase classname=\"qgpu.interp.clang\" name=\"beta\" time=\"0.250\">\n"
                     "      <failure type=\"mismatch\" message=\"out[3]: got 7, expected 9\">"),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("reproduce with: qgpu check --kernel beta --compiler clang --no-gpu"),
            std::string::npos);
  EXPECT_EQ(count(xml, "<failure "), 1u);
}

TEST(JunitXml, AnInconclusiveCaseIsSkippedWithItsReason) {
  std::string xml = junitXml(fakeReport({0}));
  EXPECT_NE(xml.find("<testcase classname=\"qgpu.gpu.clang\" name=\"alpha\" time=\"0.250\">\n"
                     "      <skipped message=\"no device: no CUDA driver\"/>"),
            std::string::npos) << xml;
  EXPECT_EQ(count(xml, "<failure"), 0u);
}

TEST(JunitXml, AHarnessErrorIsAnErrorWithEscapedText) {
  std::string xml = junitXml(fakeReport({2}));
  EXPECT_NE(xml.find("<error type=\"harness-error\" message=\"block 2 &lt;bad&gt;\">"
                     "block 2 &lt;bad&gt;\nerror kind: ProgramInvalid"),
            std::string::npos) << xml;
  EXPECT_EQ(xml.find("<bad>"), std::string::npos);
}

TEST(JunitXml, APartialReportSaysSo) {
  RunReport r = fakeReport({0});
  EXPECT_NE(junitXml(r).find("<property name=\"partial\" value=\"false\"/>"), std::string::npos);
  r.partial = true;
  EXPECT_NE(junitXml(r).find("<property name=\"partial\" value=\"true\"/>"), std::string::npos);
}

TEST(HtmlReport, CountCellsCarryTheCounts) {
  std::string html = htmlReport(fakeReport({0, 1, 2, 3}));
  EXPECT_NE(html.find("data-leg=\"interp\" data-compiler=\"clang\" data-verdict=\"match\">2<"),
            std::string::npos);
  EXPECT_NE(html.find("data-leg=\"interp\" data-compiler=\"clang\" data-verdict=\"mismatch\">1<"),
            std::string::npos);
  EXPECT_NE(html.find("data-leg=\"gpu\" data-compiler=\"clang\" data-verdict=\"inconclusive\">4<"),
            std::string::npos);
  EXPECT_NE(html.find("data-total=\"match\">2<"), std::string::npos);
  EXPECT_NE(html.find("data-total=\"inconclusive\">4<"), std::string::npos);
  EXPECT_NE(html.find("data-total=\"harness-error\">1<"), std::string::npos);
}

TEST(HtmlReport, ShowsEveryKernelAndEveryDivergence) {
  std::string html = htmlReport(fakeReport({0, 1, 2, 3}));
  for (const char* k : {"alpha", "beta", "gamma", "delta"})
    EXPECT_NE(html.find("<tr><td class=\"k\">" + std::string(k) + "</td>"), std::string::npos) << k;
  EXPECT_NE(html.find("<pre>out[3]: got 7, expected 9</pre>"), std::string::npos);
  EXPECT_NE(html.find("<pre>block 2 &lt;bad&gt;</pre>"), std::string::npos);
  EXPECT_EQ(count(html, "<svg "), 3u);  // verdict counts, tokens, time
}

TEST(HtmlReport, IsSelfContained) {
  std::string html = htmlReport(fakeReport({0, 1, 2, 3}));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  // The only URL is the SVG namespace, which is a name, never fetched.
  std::string stripped = std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(stripped.find("http"), std::string::npos);
}

TEST(HtmlReport, APartialReportHasABanner) {
  RunReport r = fakeReport({0});
  EXPECT_EQ(htmlReport(r).find("id=\"partial\""), std::string::npos);
  r.partial = true;
  EXPECT_NE(htmlReport(r).find("id=\"partial\""), std::string::npos);
}

}  // namespace
}  // namespace qgpu::report
