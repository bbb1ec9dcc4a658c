// qgpu/gpu/runner.h — runs a PTX kernel on a real NVIDIA GPU through the CUDA driver API.
//
// Contract:
// - libcuda is loaded at run time (dlopen of "libcuda.so.1", or the path in the environment
//   variable QGPU_LIBCUDA, which tests use to load a fake driver). Nothing links libcuda or
//   cudart, so every qgpu binary builds and runs on machines without a driver.
// - `Runner::open()` fails with ErrorKind::NoDevice when there is no driver library, the library is
//   the toolkit's stub, or the driver sees no device. NoDevice is an inconclusive verdict: callers
//   show it as skipped, never as passed.
// - Every failing driver call is reported as ErrorKind::Device with the call's name and the
//   driver's error name ("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"), plus the JIT error
//   log for module loads.
// - `run()` lays the memory image out in one device buffer between two runs of kGuardWords guard
//   words (filled with kGuardPattern by cuMemsetD32). After the kernel ran, a changed guard word is
//   an out-of-bounds write: `guardsIntact` is false and `guardReport` names every changed word by
//   its word offset relative to the image (negative before it). That is a finding, not an error.
// - `run()` runs the kernel twice from the same initial memory and compares the two final buffers
//   (guards included). Different results are a finding, not an error: `deterministic` is false
//   and `nondeterminismReport` says "word K differs (x vs y) between two runs of 'E'"; such a
//   result never counts as a pass (its `global` is the first run's).
// - Words inside `GpuLaunch::unordered` ranges are compared as multisets between the two runs: a
//   kernel that appends with atomics (compaction) may legitimately order them differently.
// - Parameter sizes come from the PTX text itself: the `.entry` declaration's `.param .u64/.b64/
//   .s64` (8 bytes) and `.u32/.b32/.s32` (4 bytes). A launch whose parameters disagree with the
//   entry (count, or a pointer parameter that is not 64-bit) is ErrorKind::Usage.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/diag.h"

namespace qgpu::gpu {

inline constexpr uint32_t kGuardWords = 64;           // guard words on each side of the image
inline constexpr uint32_t kGuardPattern = 0xC0DEF00Du;  // what an untouched guard word holds

struct DeviceInfo {
  std::string name;         // cuDeviceGetName
  int ccMajor = 0;          // compute capability, major
  int ccMinor = 0;          // compute capability, minor
  int driverVersion = 0;    // cuDriverGetVersion: 1000*major + 10*minor (e.g. 13000)
  std::string libraryPath;  // the libcuda that was loaded
};

// Words [first, first + count) of the image.
struct WordRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

struct GpuLaunch {
  std::string ptx;                   // the exact PTX text (NUL-free)
  std::string entry;                 // the .entry name
  uint32_t gridX = 1;                // CTAs
  uint32_t blockX = 1;               // threads per CTA
  std::vector<uint32_t> global;      // initial global memory image (the machine's 126 words)
  std::vector<uint32_t> params;      // one per kernel parameter, in order; pointer parameters are
                                     // BYTE offsets into `global`
  std::vector<bool> paramIsPointer;  // which parameters are pointers (same length as params)
  std::vector<WordRange> unordered;  // output arrays whose order is not defined (multisets)
  uint32_t dynamicSharedBytes = 0;   // cuLaunchKernel's sharedMemBytes: the kernel file's
                                     // `shared=W` (4W bytes) for its `extern __shared__` arrays
};

struct GpuResult {
  std::vector<uint32_t> global;  // final memory image, same size as GpuLaunch::global
  bool guardsIntact = true;      // false: the kernel wrote outside the image
  std::string guardReport;       // "guard word at image offset -1 (byte -4) changed: 0xc0def00d -> 0x7"
  bool deterministic = true;     // false: the two runs' final buffers differ
  std::string nondeterminismReport;  // "word 1 differs (0x00000001 vs 0x00000002) between ..."
};

// The first word where `a` and `b` differ, or nullopt when they are equal. Each `unordered` range
// is compared as a multiset and, when its multisets differ, reported as its first word; a size
// difference counts as a difference at the shorter length.
std::optional<size_t> firstDifference(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                                      const std::vector<WordRange>& unordered = {});

// One entry parameter's size in bytes as declared in the PTX, in order. Usage when the entry is not
// found or a parameter has a type other than the 32/64-bit integer types the catalog uses.
Expected<std::vector<uint32_t>> entryParamSizes(const std::string& ptx, const std::string& entry);

class Runner {
 public:
  // Loads libcuda, initialises the driver, selects device 0 and retains its primary context.
  static Expected<Runner> open();

  Runner(Runner&&) noexcept;
  Runner& operator=(Runner&&) noexcept;
  ~Runner();  // releases the context and unloads libcuda

  const DeviceInfo& device() const;

  // Loads the PTX (JIT), runs the entry twice from `launch.global`, returns the final memory.
  Expected<GpuResult> run(const GpuLaunch& launch);

  struct Impl;

 private:
  explicit Runner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgpu::gpu
