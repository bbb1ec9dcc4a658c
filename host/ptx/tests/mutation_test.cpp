// qgpu/host/ptx/tests/mutation_test.cpp — property: the parser survives any mutation of a real
// sample. Mutated text (byte flips, deletions, insertions, truncation) never crashes, and either
// parses (then verify() passes and print/parse round-trips) or gives a PtxSyntax/PtxUnsupported/
// PtxInvalid Diag whose line lies within the text. Run under ASan+UBSan by ci/sanitize.sh.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "host/ptx/compare.h"
#include "host/ptx/parser.h"
#include "host/ptx/tests/samples.h"

namespace qgpu::ptx {
namespace {

const std::vector<testing::Sample>& samples() {
  static const auto all = testing::allSamples();
  return all;
}

constexpr char kPunct[] = "{}()[];:,.%@!|-+<>0 \n";

struct Edit {
  int kind;  // 0 flip a byte, 1 delete a byte, 2 insert a byte, 3 truncate
  size_t where;
  uint8_t byte;
};

std::string mutate(std::string text, const std::vector<Edit>& edits) {
  for (const Edit& e : edits) {
    if (text.empty()) break;
    size_t at = e.where % text.size();
    switch (e.kind) {
      case 0: text[at] = static_cast<char>(e.byte); break;
      case 1: text.erase(at, 1); break;
      case 2: text.insert(at, 1, static_cast<char>(e.byte)); break;
      default: text.resize(at); break;
    }
  }
  return text;
}

void checkOutcome(const std::string& text) {
  auto m = parse(text, "mut.ptx");
  if (m.ok()) {
    RC_ASSERT(verify(*m).ok());
    auto again = parse(print(*m), "printed.ptx");
    RC_ASSERT(again.ok());
    RC_ASSERT(!firstDifference(*m, *again).has_value());
    return;
  }
  const Diag& d = m.error();
  RC_ASSERT(d.kind == ErrorKind::PtxSyntax || d.kind == ErrorKind::PtxUnsupported ||
            d.kind == ErrorKind::PtxInvalid);
  uint32_t lines = 1;
  for (char c : text) lines += c == '\n';
  RC_ASSERT(d.loc.line >= 1u);
  RC_ASSERT(d.loc.line <= lines);
  RC_ASSERT(d.loc.file == "mut.ptx");
  RC_ASSERT(!d.message.empty());
}

RC_GTEST_PROP(PtxMutation, MutatedSamplesParseOrGiveLocatedDiag, ()) {
  RC_PRE(!samples().empty());
  size_t which = *rc::gen::inRange<size_t>(0, samples().size());
  auto edits = *rc::gen::container<std::vector<Edit>>(rc::gen::build<Edit>(
      rc::gen::set(&Edit::kind, rc::gen::weightedOneOf<int>({{4, rc::gen::just(0)},
                                                             {4, rc::gen::just(1)},
                                                             {4, rc::gen::just(2)},
                                                             {1, rc::gen::just(3)}})),
      rc::gen::set(&Edit::where, rc::gen::arbitrary<size_t>()),
      rc::gen::set(&Edit::byte, rc::gen::oneOf(rc::gen::arbitrary<uint8_t>(),
                                               rc::gen::elementOf(std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(kPunct), reinterpret_cast<const uint8_t*>(kPunct) + sizeof kPunct - 1))))));
  checkOutcome(mutate(samples()[which].text, edits));
}

// The same check on whole samples spliced together at a random point: exercises truncated bodies
// followed by a second module header.
RC_GTEST_PROP(PtxMutation, SplicedSamplesParseOrGiveLocatedDiag, ()) {
  RC_PRE(!samples().empty());
  const auto& a = samples()[*rc::gen::inRange<size_t>(0, samples().size())].text;
  const auto& b = samples()[*rc::gen::inRange<size_t>(0, samples().size())].text;
  size_t cutA = *rc::gen::inRange<size_t>(0, a.size() + 1);
  size_t cutB = *rc::gen::inRange<size_t>(0, b.size() + 1);
  checkOutcome(a.substr(0, cutA) + b.substr(cutB));
}

// Failing twin of the property's checker: a mutation that must fail does fail, with its line.
TEST(PtxMutation, CheckerSeesAnErrorOnTheMutatedLine) {
  std::string text = samples().at(0).text;
  size_t ret = text.rfind("ret;");
  ASSERT_NE(ret, std::string::npos);
  text[ret + 3] = ' ';  // "ret " -> missing ';' before '}'
  auto m = parse(text, "mut.ptx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::PtxSyntax);
  EXPECT_GT(m.error().loc.line, 1u);
}

}  // namespace
}  // namespace qgpu::ptx
