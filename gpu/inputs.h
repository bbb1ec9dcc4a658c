// qgpu/gpu/inputs.h — the exported GPU inputs: every catalog kernel's PTX, launch and expected
// (interpreter) result, as files a tool built from gpu/ alone can run on a GPU machine.
//
// Why: the GPU machine has CMake, g++ and CUDA but none of our Debian libraries, so it cannot build
// the catalog → compile → parse → lower → interpret pipeline. `qgpu gpu export` runs that pipeline
// here and writes reports/gpu/inputs/: one `<kernel>.<compiler>.ptx` per case (the exact PTX text)
// and `manifest.txt`, a line format (docs/gpu.md §Inputs):
//   qgpu-gpu-inputs 1
//   commit <git commit of the exporting tree, or unknown>
//   case <kernel> <compiler>            starts a case; names are [A-Za-z0-9_.-]+
//   entry <entry>
//   ptx <file name in the same folder>
//   digest fnv1a64:<16 hex>              of the PTX file's exact bytes
//   launch <grid> <block>
//   shared <bytes>                       optional: dynamic shared memory (4W for `shared=W`)
//   params [p:<byte offset> | s:<value>]...   pointer / 32-bit scalar, in parameter order
//   unordered [<first word>:<count>]...  output ranges compared as multisets (may be empty)
//   global <w0> ... <wN-1>               initial image, hex words
//   expect <w0> ... <wN-1>               the interpreter's final image at export time, or
//   expect-error <Kind> <message>        the host's error at export time (Kind: diag.h's name)
//   end
// Lines starting with '#' and blank lines are ignored. The reader checks every line and that each
// PTX file still has its digest (so a hand-edited PTX is caught); errors are ErrorKind::Io with
// manifest file:line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/diag.h"
#include "gpu/runner.h"

namespace qgpu::gpu {

inline constexpr const char* kInputsMagic = "qgpu-gpu-inputs";
inline constexpr int kInputsVersion = 1;

struct GpuCase {
  std::string kernel;    // catalog kernel name
  std::string compiler;  // "clang" or "nvcc"
  std::string ptxFile;   // file name inside the inputs folder
  std::string digest;    // ptxDigest(launch.ptx)
  GpuLaunch launch;      // launch.ptx holds the PTX text
  std::optional<std::vector<uint32_t>> expected;  // interpreter final image at export time

  // `expected`, or `expectedError` as an error (the shape compareCase takes).
  Expected<std::vector<uint32_t>> expectation() const;
  std::optional<Diag> expectedError;              // set when the host failed instead
};

struct Inputs {
  std::string commit = "unknown";
  std::vector<GpuCase> cases;
};

std::optional<ErrorKind> parseKindName(const std::string& name);  // inverse of kindName()

std::string writeManifest(const Inputs& inputs);
// Writes the manifest and every case's PTX file into `dir` (created if missing).
Status writeInputs(const Inputs& inputs, const std::string& dir);
// `manifestText` is parsed as if read from `manifestPath`; PTX files are read via `readFile`.
Expected<Inputs> parseManifest(const std::string& manifestText, const std::string& manifestPath,
                               const std::string& dir);
Expected<Inputs> readInputs(const std::string& dir);

}  // namespace qgpu::gpu
