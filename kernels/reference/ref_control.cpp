// qgpu/kernels/reference/ref_control.cpp — references: branches, loops, calls, sorting.
#include <algorithm>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void gcd(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t x = a[t], y = b[t];
    while (y != 0) {
      int32_t rem = x % y;
      x = y;
      y = rem;
    }
    out[t] = x;
  }
}


void divergentBranch(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t v = in[t];
    v = (v % 2 != 0) ? v * 3 + 1 : v / 2;  // v & 1 == odd, also for negatives
    out[t] = v + 1;
  }
}

void nestedDivergence(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t v = in[t];
    if (t < 4) {
      out[t] = v > 0 ? v + 100 : -v;
    } else if (v % 3 == 0) {
      out[t] = v > 10 ? 1 : 2;
    } else {
      out[t] = v * v;
    }
  }
}

void collatz(RefArgs& r) {
  auto &in = r.a("in"), &steps = r.a("steps");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int64_t v = in[t];
    int n = 0;
    for (; v != 1; ++n) v = (v % 2 != 0) ? 3 * v + 1 : v / 2;
    steps[t] = n;
  }
}

// floor(sqrt(v)) by exact integer search (independent of the kernel's bisection).
void isqrt(RefArgs& r) {
  auto &x = r.a("x"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint64_t v = static_cast<uint32_t>(x[t]);
    uint64_t root = 0;
    while ((root + 1) * (root + 1) <= v) ++root;
    out[t] = static_cast<int32_t>(root);
  }
}

void binarySearch(RefArgs& r) {
  auto &sorted = r.a("sorted"), &keys = r.a("keys"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    auto it = std::find(sorted.begin(), sorted.end(), keys[t]);
    out[t] = it == sorted.end() ? -1 : static_cast<int32_t>(it - sorted.begin());
  }
}

void modpow(RefArgs& r) {
  auto &base = r.a("base"), &exp = r.a("exp"), &mod = r.a("mod"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint64_t m = static_cast<uint32_t>(mod[t]);
    uint64_t result = 1 % m;
    for (uint32_t e = 0; e < static_cast<uint32_t>(exp[t]); ++e) {
      result = result * (static_cast<uint32_t>(base[t]) % m) % m;
    }
    out[t] = static_cast<int32_t>(result);
  }
}

void earlyReturn(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (int t = 0; t < r.s("n") && t < static_cast<int>(r.blockX); ++t) {
    out[t] = in[t] < 0 ? -1 : in[t] * 2 + 1;
  }
}

void oddevenSort(RefArgs& r) {
  auto& data = r.a("data");
  std::sort(data.begin(), data.end());
}

int32_t poly(int32_t x, int32_t y) { return wrapAdd(wrapSub(wrapMul(x, x), wrapMul(3, y)), 7); }

void noinlineCall(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    out[t] = wrapAdd(poly(a[t], b[t]), wrapMul(2, poly(b[t], a[t])));
  }
}

void fibonacci(RefArgs& r) {
  auto &n = r.a("n"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    // F(k) by the closed recurrence over 64-bit values, independent of the kernel's loop shape.
    std::vector<int64_t> fib = {0, 1};
    while (static_cast<int>(fib.size()) <= n[t]) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
    out[t] = static_cast<int32_t>(fib[n[t]]);
  }
}

void factorial(RefArgs& r) {
  auto &n = r.a("n"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int64_t f = 1;
    for (int i = 2; i <= n[t]; ++i) f *= i;
    out[t] = static_cast<int32_t>(f);
  }
}

void horner(RefArgs& r) {
  auto &coeffs = r.a("coeffs"), &x = r.a("x"), &out = r.a("out");
  const int count = r.s("count");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    // Sum of c_k x^(count-1-k), computed by powers rather than by Horner's rule.
    int64_t sum = 0;
    for (int k = 0; k < count; ++k) {
      int64_t power = 1;
      for (int e = 0; e < count - 1 - k; ++e) power *= x[t];
      sum += coeffs[k] * power;
    }
    out[t] = static_cast<int32_t>(sum);
  }
}

void triSum(RefArgs& r) {
  auto &n = r.a("n"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int64_t k = n[t] > 0 ? n[t] : 0;
    out[t] = static_cast<int32_t>(k * (k - 1) / 2);
  }
}
}  // namespace

void addControlKernels(Table& t) {
  t["gcd"] = gcd;
  t["divergent_branch"] = divergentBranch;
  t["nested_divergence"] = nestedDivergence;
  t["collatz"] = collatz;
  t["isqrt"] = isqrt;
  t["binary_search"] = binarySearch;
  t["modpow"] = modpow;
  t["early_return"] = earlyReturn;
  t["oddeven_sort"] = oddevenSort;
  t["noinline_call"] = noinlineCall;
  t["fibonacci"] = fibonacci;
  t["factorial"] = factorial;
  t["horner"] = horner;
  t["tri_sum"] = triSum;
}

}  // namespace qgpu::kernels::ref
