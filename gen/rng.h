// qgpu/gen/rng.h — the random generators' PRNG: SplitMix64, small, fast and the same on every
// platform (std distributions are not), so a seed names one case everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace qgpu::gen {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t word() { return static_cast<uint32_t>(next() >> 32); }
  // 0..n-1 (n > 0), by a multiply-shift: the bias is below 2^-32 for the small n used here.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((uint64_t{word()} * n) >> 32); }
  int range(int lo, int hi) {
    return lo + static_cast<int>(below(static_cast<uint32_t>(hi - lo + 1)));
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  // An index drawn with the given weights; -1 if they are all zero.
  int weighted(std::span<const uint32_t> weights) {
    uint64_t total = 0;
    for (uint32_t w : weights) total += w;
    if (total == 0) return -1;
    uint64_t x = next() % total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return static_cast<int>(i);
      x -= weights[i];
    }
    return -1;
  }

 private:
  uint64_t s_;
};

}  // namespace qgpu::gen
