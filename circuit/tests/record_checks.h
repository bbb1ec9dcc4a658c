// qgpu/circuit/tests/record_checks.h — the record checks shared by the tests whose model writes
// trace records (record_emit_test, result_stage_test, pipeline_test): a record at its executing
// position p with its length k, checked teacher-forced (the argmax of the logits at p .. p+k is
// the trace's token after each: the record, then the next token) or by greedy decoding from the
// prefix ending at p. The expected tokens are always the trace's (the interpreter's encoder),
// never the model's; the tests keep what they tally beyond this (kinds, margins) themselves.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/decoder.h"
#include "oracle/trace.h"

namespace qgpu::circuit::records {

// A record of a token sequence: p the position before its tag, k its tokens (p+1 .. p+k).
struct Span {
  size_t p = 0, k = 0;
};

// Over the trace vocabulary's logits only (a test's probe logits may follow them in the row).
inline int64_t argmax(const std::vector<float>& row) {
  const auto end = row.begin() + std::min<std::ptrdiff_t>(trace::kVocabSize, static_cast<std::ptrdiff_t>(row.size()));
  return std::max_element(row.begin(), end) - row.begin();
}
// The winner's lead over the runner-up, over the same logits.
inline double gap(const std::vector<float>& row) {
  std::vector<float> v(row.begin(), row.begin() + std::min<std::ptrdiff_t>(trace::kVocabSize, static_cast<std::ptrdiff_t>(row.size())));
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return static_cast<double>(v[0]) - v[1];
}

struct Forced {
  int records = 0, positions = 0, wrong = 0;
  double minGap = 1e30;
  std::string first;  // the first wrong token, for the message
};

// Teacher-forced: `rows` are the logits of the sequence's positions; a record that does not end
// (with its next token) inside them is skipped and false returned. `what` names the record.
inline bool checkForced(Forced& t, const std::vector<std::vector<float>>& rows,
                        const std::vector<trace::Token>& trace, Span r, const std::string& what) {
  if (r.p + r.k + 1 >= rows.size()) return false;
  ++t.records;
  for (size_t q = r.p; q <= r.p + r.k; ++q) {
    ++t.positions;
    const int64_t got = argmax(rows[q]);
    t.minGap = std::min(t.minGap, gap(rows[q]));
    if (got == trace[q + 1]) continue;
    ++t.wrong;
    if (t.first.empty())
      t.first = "position " + std::to_string(q) + " (record at " + std::to_string(r.p) + ", " + what +
                "): expected " + trace::tokenName(trace[q + 1]) + ", got " +
                trace::tokenName(static_cast<trace::Token>(got));
  }
  return true;
}

struct Greedy {
  int records = 0, tokens = 0, wrong = 0;
  std::string first;
};

// Greedy decoding: the prompt is `ids` up to p, then k + 1 tokens are generated (the record and
// the next token), each compared with the trace's.
inline void checkGreedy(Greedy& t, model::Decoder& dec, const std::vector<int64_t>& ids,
                        const std::vector<trace::Token>& trace, Span r, const std::string& what) {
  dec.reset();
  const std::vector<int64_t> prompt(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(r.p + 1));
  auto out = dec.generateGreedy(prompt, static_cast<int64_t>(r.k + 1));
  EXPECT_TRUE(out.ok()) << out.error().message;
  if (!out.ok()) return;
  ++t.records;
  for (size_t q = 0; q <= r.k; ++q) {
    ++t.tokens;
    const trace::Token want = trace[r.p + 1 + q];
    const bool ok = q < out.value().size() && out.value()[q] == want;
    if (!ok && t.first.empty())
      t.first = what + " record at " + std::to_string(r.p) + " token " + std::to_string(q) +
                ": expected " + trace::tokenName(want) + ", got " +
                (q < out.value().size() ? trace::tokenName(static_cast<trace::Token>(out.value()[q])) : "nothing");
    t.wrong += ok ? 0 : 1;
  }
}

}  // namespace qgpu::circuit::records
