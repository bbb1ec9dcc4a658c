// qgpu/common/digest.h — the one content digest qgpu uses: 64-bit FNV-1a, written
// "fnv1a64:<16 lower-case hex digits>". It detects changed content (a stale recording, a changed
// trace); it is not a cryptographic hash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace qgpu {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;  // the FNV-1a 64 offset basis
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;        // the FNV-1a 64 prime

inline uint64_t fnv1a64(std::string_view bytes, uint64_t hash = kFnvOffset) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

inline std::string digestString(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace qgpu
