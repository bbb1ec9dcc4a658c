// qgpu/harness/report/atomic_file.h — writing a report so that no reader ever sees half of it.
//
// Contract: `writeFileAtomic(path, text)` writes `text` to a new temporary file in the directory
// of `path` (`.<name>.tmp.<pid>.<n>`, created exclusively), flushes it to disk and renames it
// over `path`: a reader sees the old file or the new one, never a torn one, and a run killed while
// writing leaves at most the temporary file, which is removed on every error path it can see.
// Errors: ErrorKind::Io naming the path and the system's reason (no such directory, a directory
// at `path`, no space, no permission).
#pragma once

#include <string>
#include <string_view>

#include "common/diag.h"

namespace qgpu::report {

Status writeFileAtomic(const std::string& path, std::string_view text);

}  // namespace qgpu::report
