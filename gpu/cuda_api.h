// qgpu/gpu/cuda_api.h — the few CUDA driver API types, constants and entry points the runner uses,
// declared here so that qgpu builds on machines without cuda.h and never links libcuda.
//
// Contract: the declarations below are ABI-identical to cuda.h (CUDA 11..13). Where cuda.h is found
// at configure time (QGPU_HAVE_CUDA_H), it is included and every constant and type size is checked
// against it with static_assert, so a mismatch breaks the build instead of a run. Where it is not,
// these declarations are the only ones (the GPU machine in docs/gpu.md always has it).
//
// The runner resolves the entry points by name with dlsym. cuda.h maps several API names to
// versioned symbols with macros (cuMemAlloc -> cuMemAlloc_v2); the symbol names used for dlsym are
// the versioned ones, spelled out in runner.cpp, and the members below are named so that no cuda.h
// macro can rename them. Private to gpu/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qgpu::gpu::cu {

using Result = int;                  // CUresult
using Device = int;                  // CUdevice
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit on every platform we build for)
struct CtxSt;
struct ModSt;
struct FuncSt;
struct StreamSt;
using Context = CtxSt*;              // CUcontext
using Module = ModSt*;               // CUmodule
using Function = FuncSt*;            // CUfunction
using Stream = StreamSt*;            // CUstream
using JitOption = int;               // CUjit_option
using DeviceAttribute = int;         // CUdevice_attribute

// Result codes the runner treats specially (cuda.h: enum cudaError_enum).
inline constexpr Result kSuccess = 0;             // CUDA_SUCCESS
inline constexpr Result kErrorStubLibrary = 34;   // CUDA_ERROR_STUB_LIBRARY: the toolkit's stub
inline constexpr Result kErrorSystemDriverMismatch = 803;  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
inline constexpr Result kErrorNoDevice = 100;     // CUDA_ERROR_NO_DEVICE

// JIT options passed to cuModuleLoadDataEx (cuda.h: enum CUjit_option_enum).
inline constexpr JitOption kJitInfoLogBuffer = 3;           // CU_JIT_INFO_LOG_BUFFER
inline constexpr JitOption kJitInfoLogBufferSizeBytes = 4;  // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
inline constexpr JitOption kJitErrorLogBuffer = 5;          // CU_JIT_ERROR_LOG_BUFFER
inline constexpr JitOption kJitErrorLogBufferSizeBytes = 6; // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
inline constexpr JitOption kJitLogVerbose = 12;             // CU_JIT_LOG_VERBOSE

// Device attributes (cuda.h: enum CUdevice_attribute_enum).
inline constexpr DeviceAttribute kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
inline constexpr DeviceAttribute kAttrCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

// The entry points, as function pointer types (all are __stdcall-free on Linux).
using InitFn = Result (*)(unsigned int flags);
using DriverGetVersionFn = Result (*)(int* version);
using DeviceGetCountFn = Result (*)(int* count);
using DeviceGetFn = Result (*)(Device* device, int ordinal);
using DeviceGetNameFn = Result (*)(char* name, int len, Device device);
using DeviceGetAttributeFn = Result (*)(int* value, DeviceAttribute attr, Device device);
using PrimaryCtxRetainFn = Result (*)(Context* ctx, Device device);
using PrimaryCtxReleaseFn = Result (*)(Device device);
using CtxSetCurrentFn = Result (*)(Context ctx);
using CtxSynchronizeFn = Result (*)();
using ModuleLoadDataExFn = Result (*)(Module* module, const void* image, unsigned int numOptions,
                                      JitOption* options, void** optionValues);
using ModuleGetFunctionFn = Result (*)(Function* fn, Module module, const char* name);
using ModuleUnloadFn = Result (*)(Module module);
using MemAllocFn = Result (*)(DevicePtr* ptr, size_t bytes);
using MemFreeFn = Result (*)(DevicePtr ptr);
using MemcpyHtoDFn = Result (*)(DevicePtr dst, const void* src, size_t bytes);
using MemcpyDtoHFn = Result (*)(void* dst, DevicePtr src, size_t bytes);
using MemsetD32Fn = Result (*)(DevicePtr dst, unsigned int value, size_t count);
using LaunchKernelFn = Result (*)(Function fn, unsigned int gridX, unsigned int gridY,
                                  unsigned int gridZ, unsigned int blockX, unsigned int blockY,
                                  unsigned int blockZ, unsigned int sharedBytes, Stream stream,
                                  void** kernelParams, void** extra);
using GetErrorNameFn = Result (*)(Result error, const char** name);

}  // namespace qgpu::gpu::cu
