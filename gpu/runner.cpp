// qgpu/gpu/runner.cpp — the CUDA driver API backend (see runner.h for the contract).
#include "gpu/runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "common/text.h"
#include "gpu/cuda_api.h"

#if defined(QGPU_HAVE_CUDA_H)
#include <cuda.h>
// Our declarations must be ABI-identical to the real ones (cuda_api.h).
static_assert(qgpu::gpu::cu::kSuccess == CUDA_SUCCESS);
static_assert(qgpu::gpu::cu::kErrorStubLibrary == CUDA_ERROR_STUB_LIBRARY);
static_assert(qgpu::gpu::cu::kErrorSystemDriverMismatch == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
static_assert(qgpu::gpu::cu::kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(qgpu::gpu::cu::kJitInfoLogBuffer == CU_JIT_INFO_LOG_BUFFER);
static_assert(qgpu::gpu::cu::kJitInfoLogBufferSizeBytes == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
static_assert(qgpu::gpu::cu::kJitErrorLogBuffer == CU_JIT_ERROR_LOG_BUFFER);
static_assert(qgpu::gpu::cu::kJitErrorLogBufferSizeBytes == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
static_assert(qgpu::gpu::cu::kJitLogVerbose == CU_JIT_LOG_VERBOSE);
static_assert(qgpu::gpu::cu::kAttrCcMajor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(qgpu::gpu::cu::kAttrCcMinor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(sizeof(qgpu::gpu::cu::Result) == sizeof(CUresult));
static_assert(sizeof(qgpu::gpu::cu::Device) == sizeof(CUdevice));
static_assert(sizeof(qgpu::gpu::cu::DevicePtr) == sizeof(CUdeviceptr));
static_assert(sizeof(qgpu::gpu::cu::JitOption) == sizeof(CUjit_option));
static_assert(sizeof(qgpu::gpu::cu::DeviceAttribute) == sizeof(CUdevice_attribute));
#endif

namespace qgpu::gpu {

namespace {

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
}

}  // namespace

std::optional<size_t> firstDifference(const std::vector<uint32_t>& a,
                                      const std::vector<uint32_t>& b,
                                      const std::vector<WordRange>& unordered) {
  const size_t n = std::min(a.size(), b.size());
  std::vector<bool> inRange(n, false);
  std::optional<size_t> first;
  for (const WordRange& r : unordered) {
    size_t end = std::min<size_t>(n, size_t{r.first} + r.count);
    if (r.first >= end) continue;
    std::vector<uint32_t> x(a.begin() + r.first, a.begin() + end);
    std::vector<uint32_t> y(b.begin() + r.first, b.begin() + end);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    for (size_t k = r.first; k < end; ++k) inRange[k] = true;
    if (x != y && (!first || r.first < *first)) first = r.first;
  }
  for (size_t k = 0; k < n && (!first || k < *first); ++k) {
    if (!inRange[k] && a[k] != b[k]) {
      first = k;
      break;
    }
  }
  if (!first && a.size() != b.size()) first = n;
  return first;
}

Expected<std::vector<uint32_t>> entryParamSizes(const std::string& ptx, const std::string& entry) {
  // Find ".entry <entry>" followed by optional whitespace and "(": a whole-word match, so that
  // "dot" does not match ".entry dot2(".
  size_t pos = 0;
  size_t open = std::string::npos;
  while ((pos = ptx.find(".entry", pos)) != std::string::npos) {
    size_t p = pos + 6;
    while (p < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[p]))) ++p;
    if (ptx.compare(p, entry.size(), entry) == 0 &&
        (p + entry.size() == ptx.size() || !isIdentChar(ptx[p + entry.size()]))) {
      size_t q = p + entry.size();
      while (q < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[q]))) ++q;
      if (q < ptx.size() && ptx[q] == '(') {
        open = q;
        break;
      }
    }
    pos = p;
  }
  if (open == std::string::npos) {
    return makeDiag(ErrorKind::Usage, "PTX has no .entry named '" + entry + "'");
  }
  size_t close = ptx.find(')', open);
  if (close == std::string::npos) {
    return makeDiag(ErrorKind::Usage, "PTX .entry '" + entry + "' has no closing ')'");
  }
  std::vector<uint32_t> sizes;
  std::string list = ptx.substr(open + 1, close - open - 1);
  size_t at = 0;
  while ((at = list.find(".param", at)) != std::string::npos) {
    at += 6;
    while (at < list.size() && std::isspace(static_cast<unsigned char>(list[at]))) ++at;
    size_t end = at;
    while (end < list.size() && isIdentChar(list[end])) ++end;
    std::string type = list.substr(at, end - at);
    if (type == ".u64" || type == ".b64" || type == ".s64") {
      sizes.push_back(8);
    } else if (type == ".u32" || type == ".b32" || type == ".s32") {
      sizes.push_back(4);
    } else {
      return makeDiag(ErrorKind::Usage, "PTX .entry '" + entry + "' parameter " +
                                            std::to_string(sizes.size()) + " has type '" + type +
                                            "'; only 32- and 64-bit integer parameters are supported");
    }
    at = end;
  }
  return sizes;
}

// The resolved driver entry points and the state of one opened device.
struct Runner::Impl {
  void* lib = nullptr;
  DeviceInfo info;
  cu::Device dev = 0;
  cu::Context ctx = nullptr;

  cu::InitFn init = nullptr;
  cu::DriverGetVersionFn driverGetVersion = nullptr;
  cu::DeviceGetCountFn deviceGetCount = nullptr;
  cu::DeviceGetFn deviceGet = nullptr;
  cu::DeviceGetNameFn deviceGetName = nullptr;
  cu::DeviceGetAttributeFn deviceGetAttribute = nullptr;
  cu::PrimaryCtxRetainFn primaryCtxRetain = nullptr;
  cu::PrimaryCtxReleaseFn primaryCtxRelease = nullptr;
  cu::PrimaryCtxReleaseFn primaryCtxReset = nullptr;  // same signature as release
  cu::CtxSetCurrentFn ctxSetCurrent = nullptr;
  cu::CtxSynchronizeFn ctxSynchronize = nullptr;
  cu::ModuleLoadDataExFn moduleLoadDataEx = nullptr;
  cu::ModuleGetFunctionFn moduleGetFunction = nullptr;
  cu::ModuleUnloadFn moduleUnload = nullptr;
  cu::MemAllocFn memAlloc = nullptr;
  cu::MemFreeFn memFree = nullptr;
  cu::MemcpyHtoDFn memcpyHtoD = nullptr;
  cu::MemcpyDtoHFn memcpyDtoH = nullptr;
  cu::MemsetD32Fn memsetD32 = nullptr;
  cu::LaunchKernelFn launchKernel = nullptr;
  cu::GetErrorNameFn getErrorName = nullptr;

  ~Impl() {
    if (ctx != nullptr && primaryCtxRelease != nullptr) primaryCtxRelease(dev);
    if (lib != nullptr) dlclose(lib);
  }

  std::string errorName(cu::Result r) const {
    const char* name = nullptr;
    if (getErrorName != nullptr && getErrorName(r, &name) == cu::kSuccess && name != nullptr) {
      return name;
    }
    return "CUresult " + std::to_string(r);
  }

  Diag fail(const char* call, cu::Result r, const std::string& extra = "") const {
    std::string msg = std::string(call) + " failed: " + errorName(r);
    if (!extra.empty()) msg += "\n" + extra;
    return makeDiag(ErrorKind::Device, msg);
  }

  // A launch that faulted leaves the primary context unusable ("sticky" errors); resetting it lets
  // the next kernel of a recording run. Errors here are ignored: the next call reports them.
  void recover() {
    if (primaryCtxReset == nullptr || ctx == nullptr) return;
    primaryCtxRelease(dev);
    ctx = nullptr;
    primaryCtxReset(dev);
    if (primaryCtxRetain(&ctx, dev) != cu::kSuccess) {
      ctx = nullptr;
      return;
    }
    ctxSetCurrent(ctx);
  }

  Expected<std::vector<uint32_t>> runOnce(cu::Function fn, const GpuLaunch& launch, cu::DevicePtr buf,
                                          size_t totalWords);
};

namespace {

template <typename Fn>
bool resolve(void* lib, const char* symbol, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (out == nullptr) {
    missing += missing.empty() ? symbol : std::string(", ") + symbol;
    return false;
  }
  return true;
}

}  // namespace

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::Runner(Runner&&) noexcept = default;
Runner& Runner::operator=(Runner&&) noexcept = default;
Runner::~Runner() = default;

const DeviceInfo& Runner::device() const { return impl_->info; }

Expected<Runner> Runner::open() {
  const char* override = std::getenv("QGPU_LIBCUDA");
  std::string path = (override != nullptr && *override != '\0') ? override : "libcuda.so.1";
  auto impl = std::make_unique<Impl>();
  impl->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (impl->lib == nullptr) {
    const char* why = dlerror();
    return makeDiag(ErrorKind::NoDevice, "no CUDA driver: cannot load " + path + " (" +
                                             (why != nullptr ? why : "unknown reason") + ")");
  }
  impl->info.libraryPath = path;

  // Symbol names are the versioned ones that cuda.h's macros select (cuda_api.h).
  std::string missing;
  Impl& d = *impl;
  resolve(d.lib, "cuInit", d.init, missing);
  resolve(d.lib, "cuDriverGetVersion", d.driverGetVersion, missing);
  resolve(d.lib, "cuDeviceGetCount", d.deviceGetCount, missing);
  resolve(d.lib, "cuDeviceGet", d.deviceGet, missing);
  resolve(d.lib, "cuDeviceGetName", d.deviceGetName, missing);
  resolve(d.lib, "cuDeviceGetAttribute", d.deviceGetAttribute, missing);
  resolve(d.lib, "cuDevicePrimaryCtxRetain", d.primaryCtxRetain, missing);
  resolve(d.lib, "cuDevicePrimaryCtxRelease_v2", d.primaryCtxRelease, missing);
  resolve(d.lib, "cuCtxSetCurrent", d.ctxSetCurrent, missing);
  resolve(d.lib, "cuCtxSynchronize", d.ctxSynchronize, missing);
  resolve(d.lib, "cuModuleLoadDataEx", d.moduleLoadDataEx, missing);
  resolve(d.lib, "cuModuleGetFunction", d.moduleGetFunction, missing);
  resolve(d.lib, "cuModuleUnload", d.moduleUnload, missing);
  resolve(d.lib, "cuMemAlloc_v2", d.memAlloc, missing);
  resolve(d.lib, "cuMemFree_v2", d.memFree, missing);
  resolve(d.lib, "cuMemcpyHtoD_v2", d.memcpyHtoD, missing);
  resolve(d.lib, "cuMemcpyDtoH_v2", d.memcpyDtoH, missing);
  resolve(d.lib, "cuMemsetD32_v2", d.memsetD32, missing);
  resolve(d.lib, "cuLaunchKernel", d.launchKernel, missing);
  resolve(d.lib, "cuGetErrorName", d.getErrorName, missing);
  std::string optional;  // a driver without reset only loses recovery after a faulting kernel
  resolve(d.lib, "cuDevicePrimaryCtxReset_v2", d.primaryCtxReset, optional);
  if (!missing.empty()) {
    return makeDiag(ErrorKind::NoDevice,
                    "CUDA driver " + path + " lacks entry points: " + missing);
  }

  cu::Result r = d.init(0);
  if (r == cu::kErrorNoDevice || r == cu::kErrorStubLibrary || r == cu::kErrorSystemDriverMismatch) {
    return makeDiag(ErrorKind::NoDevice, "no usable GPU: cuInit returned " + d.errorName(r) +
                                             " (driver library " + path + ")");
  }
  if (r != cu::kSuccess) return d.fail("cuInit", r);
  if ((r = d.driverGetVersion(&d.info.driverVersion)) != cu::kSuccess) {
    return d.fail("cuDriverGetVersion", r);
  }
  int count = 0;
  if ((r = d.deviceGetCount(&count)) != cu::kSuccess) return d.fail("cuDeviceGetCount", r);
  if (count == 0) return makeDiag(ErrorKind::NoDevice, "the CUDA driver reports no device");
  if ((r = d.deviceGet(&d.dev, 0)) != cu::kSuccess) return d.fail("cuDeviceGet", r);
  char name[256] = {};
  if ((r = d.deviceGetName(name, sizeof name - 1, d.dev)) != cu::kSuccess) {
    return d.fail("cuDeviceGetName", r);
  }
  d.info.name = name;
  if ((r = d.deviceGetAttribute(&d.info.ccMajor, cu::kAttrCcMajor, d.dev)) != cu::kSuccess) {
    return d.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r);
  }
  if ((r = d.deviceGetAttribute(&d.info.ccMinor, cu::kAttrCcMinor, d.dev)) != cu::kSuccess) {
    return d.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r);
  }
  if ((r = d.primaryCtxRetain(&d.ctx, d.dev)) != cu::kSuccess) {
    d.ctx = nullptr;
    return d.fail("cuDevicePrimaryCtxRetain", r);
  }
  if ((r = d.ctxSetCurrent(d.ctx)) != cu::kSuccess) return d.fail("cuCtxSetCurrent", r);
  return Runner(std::move(impl));
}

Expected<std::vector<uint32_t>> Runner::Impl::runOnce(cu::Function fn, const GpuLaunch& launch,
                                                      cu::DevicePtr buf, size_t totalWords) {
  cu::Result r = memsetD32(buf, kGuardPattern, totalWords);
  if (r != cu::kSuccess) return fail("cuMemsetD32", r);
  const cu::DevicePtr image = buf + kGuardWords * sizeof(uint32_t);
  if (!launch.global.empty()) {
    r = memcpyHtoD(image, launch.global.data(), launch.global.size() * sizeof(uint32_t));
    if (r != cu::kSuccess) return fail("cuMemcpyHtoD", r);
  }
  // Parameter storage must outlive the launch call; cuLaunchKernel copies the values.
  std::vector<uint64_t> storage(launch.params.size());
  std::vector<void*> args(launch.params.size());
  for (size_t i = 0; i < launch.params.size(); ++i) {
    if (launch.paramIsPointer[i]) {
      storage[i] = image + launch.params[i];
    } else {
      // A 4-byte parameter is read from the first 4 bytes of its slot (little-endian host).
      uint32_t v = launch.params[i];
      std::memcpy(&storage[i], &v, sizeof v);
    }
    args[i] = &storage[i];
  }
  r = launchKernel(fn, launch.gridX, 1, 1, launch.blockX, 1, 1, launch.dynamicSharedBytes, nullptr,
                   args.empty() ? nullptr : args.data(), nullptr);
  if (r != cu::kSuccess) return fail("cuLaunchKernel", r);
  r = ctxSynchronize();
  if (r != cu::kSuccess) return fail("cuCtxSynchronize", r);
  std::vector<uint32_t> out(totalWords);
  r = memcpyDtoH(out.data(), buf, totalWords * sizeof(uint32_t));
  if (r != cu::kSuccess) return fail("cuMemcpyDtoH", r);
  return out;
}

Expected<GpuResult> Runner::run(const GpuLaunch& launch) {
  Impl& d = *impl_;
  if (d.ctx == nullptr) {
    return makeDiag(ErrorKind::Device, "the CUDA context was lost after an earlier fault and "
                                       "could not be re-created");
  }
  if (launch.params.size() != launch.paramIsPointer.size()) {
    return makeDiag(ErrorKind::Usage, "launch has " + std::to_string(launch.params.size()) +
                                          " parameters but " +
                                          std::to_string(launch.paramIsPointer.size()) +
                                          " pointer flags");
  }
  if (launch.ptx.find('\0') != std::string::npos) {
    return makeDiag(ErrorKind::Usage, "PTX text contains a NUL byte");
  }
  QGPU_TRY(sizes, entryParamSizes(launch.ptx, launch.entry));
  if (sizes.size() != launch.params.size()) {
    return makeDiag(ErrorKind::Usage, "PTX .entry '" + launch.entry + "' declares " +
                                          std::to_string(sizes.size()) + " parameters, launch gives " +
                                          std::to_string(launch.params.size()));
  }
  const uint64_t imageBytes = launch.global.size() * sizeof(uint32_t);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (launch.paramIsPointer[i] && sizes[i] != 8) {
      return makeDiag(ErrorKind::Usage, "parameter " + std::to_string(i) + " of '" + launch.entry +
                                            "' is a pointer but the PTX declares it 32-bit");
    }
    if (launch.paramIsPointer[i] && launch.params[i] > imageBytes) {
      return makeDiag(ErrorKind::Usage, "pointer parameter " + std::to_string(i) + " = byte " +
                                            std::to_string(launch.params[i]) +
                                            " lies outside the " + std::to_string(imageBytes) +
                                            "-byte image");
    }
  }

  for (const WordRange& w : launch.unordered) {
    if (w.count == 0 || uint64_t{w.first} + w.count > launch.global.size()) {
      return makeDiag(ErrorKind::Usage, "unordered range " + std::to_string(w.first) + "+" +
                                            std::to_string(w.count) + " lies outside the " +
                                            std::to_string(launch.global.size()) + "-word image");
    }
  }

  // The JIT writes its diagnostics into these buffers; they are reported with a failed load.
  char errorLog[8192] = {};
  char infoLog[8192] = {};
  cu::JitOption options[] = {cu::kJitErrorLogBuffer, cu::kJitErrorLogBufferSizeBytes,
                             cu::kJitInfoLogBuffer, cu::kJitInfoLogBufferSizeBytes,
                             cu::kJitLogVerbose};
  void* values[] = {errorLog, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof errorLog - 1)),
                    infoLog, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof infoLog - 1)),
                    reinterpret_cast<void*>(static_cast<uintptr_t>(0))};
  cu::Module module = nullptr;
  cu::Result r = d.moduleLoadDataEx(&module, launch.ptx.c_str(), 5, options, values);
  if (r != cu::kSuccess) {
    std::string log = errorLog[0] != '\0' ? std::string("JIT error log:\n") + errorLog
                                          : std::string("JIT error log: (empty)");
    return d.fail("cuModuleLoadDataEx", r, log);
  }
  cu::Function fn = nullptr;
  r = d.moduleGetFunction(&fn, module, launch.entry.c_str());
  if (r != cu::kSuccess) {
    d.moduleUnload(module);
    return d.fail("cuModuleGetFunction", r, "entry '" + launch.entry + "'");
  }
  const size_t totalWords = launch.global.size() + 2 * kGuardWords;
  cu::DevicePtr buf = 0;
  r = d.memAlloc(&buf, totalWords * sizeof(uint32_t));
  if (r != cu::kSuccess) {
    d.moduleUnload(module);
    return d.fail("cuMemAlloc", r);
  }

  auto first = d.runOnce(fn, launch, buf, totalWords);
  Expected<std::vector<uint32_t>> second = first.ok()
                                               ? d.runOnce(fn, launch, buf, totalWords)
                                               : Expected<std::vector<uint32_t>>(first.error());
  if (!second.ok()) {
    d.memFree(buf);
    d.moduleUnload(module);
    d.recover();
    return second.error();
  }
  r = d.memFree(buf);
  cu::Result ru = d.moduleUnload(module);
  if (r != cu::kSuccess) return d.fail("cuMemFree", r);
  if (ru != cu::kSuccess) return d.fail("cuModuleUnload", ru);

  const std::vector<uint32_t>& a = *first;
  const std::vector<uint32_t>& b = *second;
  // The buffer starts with the guard words, so the unordered ranges shift by kGuardWords.
  std::vector<WordRange> shifted = launch.unordered;
  for (WordRange& w : shifted) w.first += kGuardWords;
  GpuResult result;
  if (auto k = firstDifference(a, b, shifted)) {
    long offset = static_cast<long>(*k) - static_cast<long>(kGuardWords);
    result.deterministic = false;
    result.nondeterminismReport = "word " + std::to_string(offset) + " differs (" + hexWord(a[*k]) +
                                  " vs " + hexWord(b[*k]) + ") between two runs of '" +
                                  launch.entry + "'";
  }

  result.global.assign(a.begin() + kGuardWords, a.begin() + kGuardWords + launch.global.size());
  for (size_t k = 0; k < totalWords; ++k) {
    bool guard = k < kGuardWords || k >= kGuardWords + launch.global.size();
    if (!guard || a[k] == kGuardPattern) continue;
    long offset = static_cast<long>(k) - static_cast<long>(kGuardWords);
    if (!result.guardReport.empty()) result.guardReport += "; ";
    result.guardReport += "guard word at image offset " + std::to_string(offset) + " (byte " +
                          std::to_string(offset * 4) + ") changed: " + hexWord(kGuardPattern) +
                          " -> " + hexWord(a[k]);
    result.guardsIntact = false;
  }
  return result;
}

}  // namespace qgpu::gpu
