// qgpu/circuit/tests/record_streams.h — token sequences in the trace grammar for the tests of the
// state written from the token stream (circuit/predfile.h, circuit/datamem.h): hand-made records
// with random values, masks and word indices, and real runs of random machine programs
// (gen/program_gen.h run by the interpreter, prompt + run as oracle/trace.h encodes them).
// The expectations are the tests' own array models of docs/trace.md, never the gadget.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

#include "gen/program_gen.h"
#include "oracle/interpreter.h"
#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit::streams {

using trace::Family;
using trace::Token;

inline uint32_t randomValue(std::mt19937& rng) {
  static const uint32_t kEdge[] = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 15u, 16u,
                                   0xfffffff0u, 0xaaaaaaaau, 0x55555555u};
  if (rng() % 4 == 0) return kEdge[rng() % std::size(kEdge)];
  const int bits = static_cast<int>(rng() % 32) + 1;  // every value length 1..7
  uint32_t v = static_cast<uint32_t>(rng()) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
  return rng() % 2 ? ~v : v;
}

// A word index of the records: mostly a few hot words (so that words are rewritten and read
// back), the ends 0 and 125, else any.
inline uint32_t randomWord(std::mt19937& rng) {
  const uint32_t k = rng() % 8;
  if (k < 4) return rng() % 6;
  if (k == 4) return rng() % 2 ? 0u : machine::kGlobalWords - 1;
  return rng() % machine::kGlobalWords;
}

// Random records in the trace grammar: `gmem` GMEM / GW pairs first (values outside any record),
// then steps of random warps and masks (every mask 1..15) with WR / WU / WP / MG / MS / NOP
// records, CTA starts (one early, then at random).
inline std::vector<Token> handMade(uint32_t seed, int steps, int gmem = 4) {
  std::mt19937 rng(seed);
  std::vector<Token> t;
  auto value = [&](uint32_t v) { trace::appendValue(t, v); };
  for (int i = 0; i < gmem; ++i) {
    t.push_back(trace::single(Family::Gmem));
    value(randomWord(rng));
    t.push_back(trace::single(Family::Gw));
    value(randomValue(rng));
  }
  t.push_back(trace::single(Family::Run));
  for (int s = 0; s < steps; ++s) {
    if (s == 2 || (s > 0 && rng() % 12 == 0)) t.push_back(trace::single(Family::Cta));
    const int w = static_cast<int>(rng() % 4), m = static_cast<int>(rng() % 15) + 1;
    t.push_back(trace::ex(static_cast<int>(rng() % 32)));
    t.push_back(trace::wm(w, m));
    const int records = 1 + static_cast<int>(rng() % 4);
    for (int r = 0; r < records; ++r) {
      const uint32_t kind = rng() % 100;
      const int reg = 1 + static_cast<int>(rng() % 15);
      if (kind < 20) {
        t.push_back(trace::wr(reg));
        for (int l = 0; l < std::popcount(static_cast<unsigned>(m)); ++l) value(randomValue(rng));
      } else if (kind < 30) {
        t.push_back(trace::wu(reg));
        value(randomValue(rng));
      } else if (kind < 55) {
        t.push_back(trace::wp(static_cast<int>(rng() % machine::kPreds)));
        value(static_cast<uint32_t>(rng() % 16) & static_cast<uint32_t>(m));
      } else if (kind < 95) {
        int e = static_cast<int>(rng() % 16) & m;
        if (e == 0) e = m;
        t.push_back(kind < 78 ? trace::mg(e) : trace::ms(e));
        for (int l = 0; l < std::popcount(static_cast<unsigned>(e)); ++l) {
          value(randomWord(rng));
          value(randomValue(rng));
        }
      } else {
        t.push_back(trace::single(Family::Nop));
      }
    }
  }
  t.push_back(trace::single(Family::End));
  return t;
}

// The run of a random program (4 warps, divergence, 1–3 CTAs), cut after `maxTokens`; with
// `prompt`, its prompt first (GMEM / GW pairs and the ROM's values).
inline std::vector<Token> realRun(uint64_t seed, size_t maxTokens, bool prompt) {
  gen::Policy p;
  p.minBlockX = 9;  // at least 3 warps
  p.maxBlockX = 16;
  p.maxGrid = 3;
  p.maxRegions = 4;
  p.divergentBarrierProb = 0;
  p.outOfRangeProb = 0;
  auto c = gen::generateProgram(p, seed);
  EXPECT_TRUE(c.ok()) << c.error().message;
  if (!c.ok()) return {};
  oracle::RunOptions o;
  o.maxSteps = c->stepBound;
  auto r = oracle::run(c->program, c->launch, o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return {};
  std::vector<Token> t;
  if (prompt) t = trace::encodePrompt(c->program, c->launch);
  t.insert(t.end(), r->trace.begin(), r->trace.end());
  if (t.size() > maxTokens) t.resize(maxTokens);
  while (!t.empty() && trace::familyOf(t.back()) == Family::C) t.pop_back();  // no cut value
  return t;
}

// The value decoder of docs/trace.md "Values" (the first chunk signed, then v = 32·v + chunk),
// fed token by token: returns true at a T with the value in `out`.
struct ValueReader {
  int64_t acc = 0;
  bool inValue = false;
  bool step(Token t, uint32_t& out) {
    const Family f = trace::familyOf(t);
    if (f != Family::C && f != Family::T) {  // a value interrupted (a cut run): no value
      inValue = false;
      return false;
    }
    const int d = trace::indexOf(t) & 31;
    acc = inValue ? acc * 32 + d : (d >= 16 ? d - 32 : d);
    inValue = f == Family::C;
    if (f == Family::C) return false;
    out = static_cast<uint32_t>(acc);
    return true;
  }
};

}  // namespace qgpu::circuit::streams
