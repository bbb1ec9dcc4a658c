// qgpu/gpu/tests/fake_cuda.cpp — a fake libcuda for the runner's tests, loaded through
// QGPU_LIBCUDA. It exports the driver entry points the runner resolves, with C linkage and the
// versioned names, and implements them on host memory (a "device pointer" is a host address).
//
// Behaviour is chosen by the environment variable QGPU_FAKE_CUDA, read at cuInit:
//   (unset)        one device "Fake GPU", compute capability 9.0, driver API 12040
//   no-device      cuInit returns CUDA_ERROR_NO_DEVICE
//   zero-devices   cuInit succeeds, cuDeviceGetCount reports 0
//   init-fails     cuInit returns CUDA_ERROR_UNKNOWN
//   alloc-fails    cuMemAlloc returns CUDA_ERROR_OUT_OF_MEMORY
// A module whose PTX contains "FAKE_JIT_ERROR" fails to load with CUDA_ERROR_INVALID_PTX and a JIT
// error log. Kernels are chosen by entry name (parameters: a pointer, then a 32-bit scalar):
//   store_scalar  p[0] = scalar; p[1] = gridX * blockX (checks pointer, scalar and launch shape)
//   write_before  p[-1] = 7            (an out-of-bounds write just before the pointer)
//   write_at      p[scalar] = 9        (scalar is a word index; past the image hits the guard)
//   nondet        p[0] = launch count  (differs between the runner's two runs)
//   swap          p[0], p[1] = 1, 2 on odd launches and 2, 1 on even ones (same multiset)
//   store_shared  p[0] = sharedMemBytes of the launch (checks the dynamic shared memory size)
//   launch_fails  cuLaunchKernel returns CUDA_ERROR_LAUNCH_FAILED
//   sync_fails    cuCtxSynchronize then returns CUDA_ERROR_ILLEGAL_ADDRESS
// `fake_cuda_stats` lets a test check that every allocation and module was released.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoDevice = 100,
  kInvalidPtx = 218,
  kNotFound = 500,
  kIllegalAddress = 700,
  kLaunchFailed = 719,
  kUnknown = 999,
};

struct FakeFunction {
  std::string name;
};

struct Stats {
  long allocs = 0, frees = 0, loads = 0, unloads = 0, launches = 0, resets = 0, retains = 0,
       releases = 0;
};

Stats g_stats;
std::string g_mode;
bool g_syncFails = false;
FakeFunction g_functions[] = {{"store_scalar"}, {"write_before"}, {"write_at"},
                              {"nondet"},       {"launch_fails"}, {"sync_fails"}, {"swap"},
                              {"store_shared"}};
int g_contextToken = 0;

uint32_t* ptrParam(void** params, int i) {
  uint64_t v;
  std::memcpy(&v, params[i], sizeof v);
  return reinterpret_cast<uint32_t*>(static_cast<uintptr_t>(v));
}

uint32_t u32Param(void** params, int i) {
  uint32_t v;
  std::memcpy(&v, params[i], sizeof v);
  return v;
}

}  // namespace

extern "C" {

struct FakeCudaStats {
  long allocs, frees, loads, unloads, launches, resets, retains, releases;
};

FakeCudaStats fake_cuda_stats() {
  return {g_stats.allocs, g_stats.frees,  g_stats.loads,  g_stats.unloads,
          g_stats.launches, g_stats.resets, g_stats.retains, g_stats.releases};
}

int cuInit(unsigned int) {
  const char* m = std::getenv("QGPU_FAKE_CUDA");
  g_mode = m != nullptr ? m : "";
  if (g_mode == "no-device") return kNoDevice;
  if (g_mode == "init-fails") return kUnknown;
  return kSuccess;
}

int cuDriverGetVersion(int* v) {
  *v = 12040;
  return kSuccess;
}

int cuDeviceGetCount(int* n) {
  *n = g_mode == "zero-devices" ? 0 : 1;
  return kSuccess;
}

int cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *d = 0;
  return kSuccess;
}

int cuDeviceGetName(char* name, int len, int) {
  std::strncpy(name, "Fake GPU", static_cast<size_t>(len));
  return kSuccess;
}

int cuDeviceGetAttribute(int* v, int attr, int) {
  if (attr == 75) *v = 9;
  else if (attr == 76) *v = 0;
  else return kInvalidValue;
  return kSuccess;
}

int cuDevicePrimaryCtxRetain(void** ctx, int) {
  ++g_stats.retains;
  *ctx = &g_contextToken;
  return kSuccess;
}

int cuDevicePrimaryCtxRelease_v2(int) {
  ++g_stats.releases;
  return kSuccess;
}

int cuDevicePrimaryCtxReset_v2(int) {
  ++g_stats.resets;
  g_syncFails = false;
  return kSuccess;
}

int cuCtxSetCurrent(void*) { return kSuccess; }

int cuCtxSynchronize() {
  if (g_syncFails) return kIllegalAddress;
  return kSuccess;
}

int cuModuleLoadDataEx(void** module, const void* image, unsigned int n, int* options,
                       void** values) {
  const char* ptx = static_cast<const char*>(image);
  if (std::strstr(ptx, "FAKE_JIT_ERROR") != nullptr) {
    char* log = nullptr;
    size_t size = 0;
    for (unsigned int i = 0; i < n; ++i) {
      if (options[i] == 5) log = static_cast<char*>(values[i]);
      if (options[i] == 6) size = reinterpret_cast<uintptr_t>(values[i]);
    }
    if (log != nullptr && size > 0) {
      std::strncpy(log, "ptxas application ptx input, line 3; error   : fake syntax error", size);
      log[size - 1] = '\0';
    }
    return kInvalidPtx;
  }
  ++g_stats.loads;
  *module = new int(0);
  return kSuccess;
}

int cuModuleGetFunction(void** fn, void*, const char* name) {
  for (FakeFunction& f : g_functions) {
    if (f.name == name) {
      *fn = &f;
      return kSuccess;
    }
  }
  return kNotFound;
}

int cuModuleUnload(void* module) {
  ++g_stats.unloads;
  delete static_cast<int*>(module);
  return kSuccess;
}

int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  if (g_mode == "alloc-fails") return kOutOfMemory;
  ++g_stats.allocs;
  *ptr = reinterpret_cast<uintptr_t>(std::malloc(bytes));
  return kSuccess;
}

int cuMemFree_v2(unsigned long long ptr) {
  ++g_stats.frees;
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)));
  return kSuccess;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, bytes);
  return kSuccess;
}

int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
  return kSuccess;
}

int cuMemsetD32_v2(unsigned long long dst, unsigned int value, size_t count) {
  uint32_t* p = reinterpret_cast<uint32_t*>(static_cast<uintptr_t>(dst));
  for (size_t i = 0; i < count; ++i) p[i] = value;
  return kSuccess;
}

int cuLaunchKernel(void* fn, unsigned int gx, unsigned int, unsigned int, unsigned int bx,
                   unsigned int, unsigned int, unsigned int sharedBytes, void*, void** params, void**) {
  ++g_stats.launches;
  const std::string& name = static_cast<FakeFunction*>(fn)->name;
  if (name == "launch_fails") return kLaunchFailed;
  if (name == "sync_fails") {
    g_syncFails = true;
    return kSuccess;
  }
  uint32_t* p = ptrParam(params, 0);
  if (name == "store_scalar") {
    p[0] = u32Param(params, 1);
    p[1] = gx * bx;
  } else if (name == "write_before") {
    p[-1] = 7;
  } else if (name == "write_at") {
    p[u32Param(params, 1)] = 9;
  } else if (name == "store_shared") {
    p[0] = sharedBytes;
  } else if (name == "nondet") {
    p[0] = static_cast<uint32_t>(g_stats.launches);
  } else if (name == "swap") {
    bool odd = g_stats.launches % 2 == 1;
    p[0] = odd ? 1 : 2;
    p[1] = odd ? 2 : 1;
  }
  return kSuccess;
}

int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return kSuccess;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
    case kInvalidPtx: *name = "CUDA_ERROR_INVALID_PTX"; return kSuccess;
    case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; return kSuccess;
    case kIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; return kSuccess;
    case kLaunchFailed: *name = "CUDA_ERROR_LAUNCH_FAILED"; return kSuccess;
    case kUnknown: *name = "CUDA_ERROR_UNKNOWN"; return kSuccess;
    default: *name = nullptr; return kInvalidValue;
  }
}

}  // extern "C"
