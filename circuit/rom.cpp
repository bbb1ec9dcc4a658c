// qgpu/circuit/rom.cpp — see rom.h: one banked memory per ROM slot plus the terminator bank.
#include "circuit/rom.h"

#include <bit>

#include "oracle/machine.h"
#include "oracle/trace.h"

namespace qgpu::circuit {
namespace {

Diag romUsage(const std::string& message) {
  return makeDiag(ErrorKind::Usage, "rom gadget: " + message);
}

}  // namespace

RomShape romShape(const model::Qwen35Config& config) {
  static_assert(std::has_single_bit(static_cast<unsigned>(machine::kMaxOpsPerBlock)) &&
                    std::has_single_bit(static_cast<unsigned>(machine::kMaxBlocks)),
                "the ROM's one-hot keys address powers of two");
  RomShape s;
  s.opBits = std::countr_zero(static_cast<unsigned>(machine::kMaxOpsPerBlock));
  s.blockBits = std::countr_zero(static_cast<unsigned>(machine::kMaxBlocks));
  s.opSlots = trace::kRomSlots;
  const int64_t rows = int64_t{1} << (s.opBits + s.blockBits);
  const int64_t dk = config.linearKeyHeadDim > 0 ? config.linearKeyHeadDim : 1;
  s.banksPerSlot = static_cast<int>(rows > dk ? rows / dk : 1);
  s.heads = s.opSlots * s.banksPerSlot + 1;
  return s;
}

Expected<RomMargins> buildRom(CircuitWeights& weights, const RomSpec& spec) {
  const model::Qwen35Config& c = weights.config();
  RomMargins result;
  result.shape = romShape(c);
  const RomShape& r = result.shape;
  const int keyBits = r.opBits + r.blockBits;
  if (spec.slotEnable.dims != r.opSlots + 1)
    return romUsage("slotEnable has " + std::to_string(spec.slotEnable.dims) + " dims, needs " +
                 std::to_string(r.opSlots + 1) + " (one per ROM slot + the terminator)");
  if (spec.writeKey.dims != keyBits || spec.readKey.dims != keyBits)
    return romUsage("writeKey and readKey need " + std::to_string(keyBits) +
                 " dims (op index bits, then block bits)");
  if (spec.word.dims != r.wordBits)
    return romUsage("word needs " + std::to_string(r.wordBits) + " dims");
  if (static_cast<int>(spec.out.size()) != r.opSlots + 1)
    return romUsage("out needs " + std::to_string(r.opSlots + 1) +
                    " fields (one per ROM slot + the terminator)");
  for (const Field& f : spec.out)
    if (f.dims != r.wordBits)
      return romUsage("each out field needs " + std::to_string(r.wordBits) + " dims");
  const int heads = spec.payloadSlots ? r.heads : 2 * r.banksPerSlot + 1;
  if (spec.firstHead < 0 || spec.firstHead + heads > c.linearNumValueHeads)
    return romUsage("needs value heads " + std::to_string(spec.firstHead) + ".." +
                 std::to_string(spec.firstHead + heads - 1) + "; the config has " +
                 std::to_string(c.linearNumValueHeads));
  if (!std::has_single_bit(static_cast<unsigned>(r.banksPerSlot)))
    return romUsage("the key head dim " + std::to_string(c.linearKeyHeadDim) +
                 " does not divide the ROM's rows into a power of two of banks");

  MemorySpec m;
  m.layer = spec.layer;
  m.ballast = spec.ballast;
  m.value = spec.word;
  m.lambda = spec.lambda;
  m.gain = spec.gain;
  m.outUnit = spec.outUnit;
  m.write = spec.write;
  m.decay = spec.decay;
  m.noWrite = NoWrite::ZeroKey;
  m.readout = spec.readout;
  m.read = spec.read;
  result.headsUsed = heads;
  int head = spec.firstHead;  // the banks built so far take the heads before it
  for (int s = 0; s <= r.opSlots; ++s) {
    const bool term = s == r.opSlots;
    if (!spec.payloadSlots && !term && s != static_cast<int>(trace::RomSlot::Head) &&
        s != static_cast<int>(trace::RomSlot::Sources))
      continue;
    m.head = head;
    m.writeEnable = spec.slotEnable.slice(s, 1);
    // The terminator bank is keyed by the block alone: the key's block bits.
    m.writeAddr = term ? spec.writeKey.slice(r.opBits, r.blockBits) : spec.writeKey;
    m.readAddr = term ? spec.readKey.slice(r.opBits, r.blockBits) : spec.readKey;
    m.banks = term ? 1 : r.banksPerSlot;
    head += m.banks;
    m.out = spec.out[static_cast<size_t>(s)];
    QGPU_TRY(margins, buildMemory(weights, m));
    result.bank = margins;
  }
  return result;
}

}  // namespace qgpu::circuit
