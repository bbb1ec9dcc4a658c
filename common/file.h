// qgpu/common/file.h — the one way qgpu reads a file the user named, and the one way it writes a
// file that someone else may be reading.
//
// Contract: `readInputFile` never reads more than `maxBytes` + 1 bytes and never blocks on or
// drains a device. It stats the path first and refuses, with ErrorKind::Io and the path as the
// location, anything that is not a regular file (a directory, a FIFO, a socket, a character or
// block device such as /dev/zero) and a regular file whose size is over `maxBytes` (a sparse
// 3 GB file is refused from its size, unread). The read itself is bounded too: a file that grows
// past the cap between the stat and the read is refused, not read to its end. An empty file and
// a file of exactly `maxBytes` bytes are read. `what` names the input in messages ("kernel
// file", "PTX file").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/diag.h"

namespace qgpu {

Expected<std::string> readInputFile(const std::string& path, size_t maxBytes,
                                    std::string_view what);

// The stat half of readInputFile, for a file that is mapped rather than read (checkpoint
// weights): its size, or the same refusals (not a regular file; over `maxBytes`) with the same
// wording. The caller still checks what it opens with fstat.
Expected<uint64_t> regularFileSize(const std::string& path, uint64_t maxBytes,
                                   std::string_view what);

// Writes `text` to a new temporary file in the directory of `path` (`.<name>.tmp.<pid>.<n>`,
// created exclusively), flushes it to disk and renames it over `path`: a reader sees the old file
// or the new one, never a torn one, and a run killed while writing leaves at most the temporary
// file, which is removed on every error path it can see. Errors: ErrorKind::Io naming the path
// and the system's reason (no such directory, a directory at `path`, no space, no permission).
Status writeFileAtomic(const std::string& path, std::string_view text);

}  // namespace qgpu
