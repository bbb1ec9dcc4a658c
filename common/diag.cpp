// qgpu/common/diag.cpp — names and formatting for Diag.
#include "common/diag.h"

namespace qgpu {

const char* kindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return "Io";
    case ErrorKind::Usage: return "Usage";
    case ErrorKind::CompileFailed: return "CompileFailed";
    case ErrorKind::ToolMissing: return "ToolMissing";
    case ErrorKind::PtxSyntax: return "PtxSyntax";
    case ErrorKind::PtxUnsupported: return "PtxUnsupported";
    case ErrorKind::PtxInvalid: return "PtxInvalid";
    case ErrorKind::OverLimit: return "OverLimit";
    case ErrorKind::ProgramInvalid: return "ProgramInvalid";
    case ErrorKind::MachineFault: return "MachineFault";
    case ErrorKind::StepLimit: return "StepLimit";
    case ErrorKind::KernelFile: return "KernelFile";
    case ErrorKind::TraceInvalid: return "TraceInvalid";
    case ErrorKind::Checkpoint: return "Checkpoint";
    case ErrorKind::Device: return "Device";
    case ErrorKind::NoDevice: return "NoDevice";
    case ErrorKind::ReportInvalid: return "ReportInvalid";
    case ErrorKind::Internal: return "Internal";
  }
  return "Unknown";
}

std::string SourceLoc::str() const {
  std::string out = file;
  if (line != 0) {
    out += (out.empty() ? "" : ":") + std::to_string(line);
    if (column != 0) out += ":" + std::to_string(column);
  }
  return out;
}

std::string Diag::str() const {
  std::string where = loc.str();
  return (where.empty() ? "" : where + ": ") + "error[" + kindName(kind) + "]: " + message;
}

}  // namespace qgpu
