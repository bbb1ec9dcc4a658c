// qgpu/oracle/machine.cpp — the op table.
#include "oracle/machine.h"

namespace qgpu::machine {

const OpInfo& opInfo(Op op) {
  static constexpr OpInfo kTable[] = {
#define QGPU_OP(name, mnemonic, nsrc, cls) {mnemonic, nsrc, OpClass::cls},
#include "oracle/isa.def"
#undef QGPU_OP
  };
  return kTable[static_cast<int>(op)];
}

}  // namespace qgpu::machine
