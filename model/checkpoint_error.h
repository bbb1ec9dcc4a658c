// qgpu/model/checkpoint_error.h — the one way model/ reports a bad checkpoint file.
//
// Every reader of a checkpoint (config.json, the safetensors header and data, the load plan, the
// tokenizer) reports a problem as an ErrorKind::Checkpoint Diag located at the file. One
// definition here instead of one file-local copy per reader (which collided in a unity build).
#pragma once

#include <string>

#include "common/diag.h"

namespace qgpu::model {

inline Diag checkpointError(const std::string& file, const std::string& message) {
  return makeDiag(ErrorKind::Checkpoint, message, SourceLoc{file});
}

}  // namespace qgpu::model
