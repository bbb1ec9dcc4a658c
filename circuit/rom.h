// qgpu/circuit/rom.h — gadget: the program ROM as banked DeltaNet memories, written at the
// prompt's ROM words and read at a fetch position by a (block, op) query (docs/circuit.md §9,
// "Built: the ROM").
//
// Layout (trace v3, docs/trace.md "Prompt"): an op is up to trace::kRomSlots 32-bit words, one
// per ROM slot (head, sources, immediates, offset), and a block's terminator is one more word.
// The ROM holds one bank group per op slot, rows keyed by (block, op) — 2^(opBits + blockBits)
// = 32 × 16 = 512 rows over 512 / 128 = 4 heads — and one terminator bank keyed by block (32
// rows, one head): 4 · 6 + 1 = 25 value heads for the machine's limits. Every slot's memory is
// the memory gadget (circuit/memory.h) with banks, NoWrite::ZeroKey and V = 32 dual-rail bits
// (2V = 128 = dv, dv/V = 4: out_proj exact, R4), so a read of slot s's row (b, j) lands the word
// as ±outUnit per bit in out[32s .. 32s + 31], or exactly 0 where no word was written (an absent
// prompt word, which the machine reads as 0: the re-quantiser maps empty to 0).
//
// Inputs (each ±1 unit in x, exactly ±λ after the pre-norm; ballast.dims[0] +1 on every token):
//   slotEnable  kRomSlots + 1 sign bits: bit s = +1 iff this token writes slot s's bank (at most
//               one; the last bit is the terminator word). In the circuit: layer 0's decode of
//               the latched tag (OP(s) / TERM) AND "this token is the value's terminal T".
//   writeKey    opBits + blockBits sign bits, op index low, block high: the latched (block, op)
//               of the word (block from the latched BLK value, op from the op's head word, whose
//               low bits are the op index; the terminator bank reads the block bits only)
//   word        32 sign bits: the word (the assembler's value at its T)
//   readKey     opBits + blockBits: the (block, op) to fetch (the latched EXEC block, op counter)
// Output: out, one field of 32 dims per slot and the terminator's last (kRomSlots + 1 fields, each
// its own, so that a layout by liveness frees each where its readers end).
//
// Maths: that of circuit/memory.h per bank (keys and queries one-hot over all address bits,
// beta 1, decay 1, z on); the op banks of slot s are value heads firstHead + s·B .. + B − 1
// (B = 512 / keyHeadDim), the terminator bank head firstHead + kRomSlots·B. A token that writes
// slot s has every other slot's write-enable at −1, so their keys are exactly 0 (ZeroKey) and no
// other row changes; every slot's query reads the same (block, op), so one fetch position
// returns all of an op's words and its block's terminator at once.
#pragma once

#include <vector>

#include "circuit/memory.h"
#include "circuit/weights.h"
#include "common/diag.h"

namespace qgpu::circuit {

// The ROM's shape, derived from the machine's limits, the prompt's ROM slots and the config.
struct RomShape {
  int opBits = 0;        // op index bits: kMaxOpsPerBlock = 2^opBits
  int blockBits = 0;     // block index bits: kMaxBlocks = 2^blockBits
  int opSlots = 0;       // trace::kRomSlots
  int banksPerSlot = 0;  // 2^(opBits + blockBits) / key head dim
  int heads = 0;         // opSlots · banksPerSlot + 1 (the terminator bank)
  int wordBits = 32;
};
RomShape romShape(const model::Qwen35Config& config);

struct RomSpec {
  int layer = 0;
  int firstHead = 0;   // value heads firstHead .. firstHead + romShape().heads − 1
  Field ballast;       // dims[0]: +1 unit on every token
  Field slotEnable;    // kRomSlots + 1 dims
  Field writeKey;      // opBits + blockBits dims
  Field word;          // 32 dims
  Field readKey;       // opBits + blockBits dims
  std::vector<Field> out;  // kRomSlots + 1 fields of 32 dims: slot s's word, the terminator's
  double lambda = 2;
  float gain = 64;
  float outUnit = 16;
  // false: only the head, sources and terminator banks (2·banksPerSlot + 1 heads, the first
  // stages' fetch, circuit/frontend.h); the payload slots' slotEnable and out dims are untouched.
  bool payloadSlots = true;
  // How a read lands in out (circuit/memory.h): Signed (±outUnit, empty 0) or PadInverted (out
  // holds a +outUnit pad: −outUnit for a set bit, +outUnit for a clear bit or an empty row).
  MemoryReadout readout = MemoryReadout::Signed;
  // The banks' read (circuit/memory.h "Key head dim"): one row per cell and, at a key head dim
  // whose one-row read is no power of two (`2b`'s 128), the norm rail; Nominal: the twin.
  ReadHeight read = ReadHeight::NormRail;
  // Failing-twin knobs, passed to every bank (circuit/memory.h): beta ½, decay ½ per token.
  WriteStrength write = WriteStrength::Full;
  Decay decay = Decay::Off;
};

struct RomMargins {
  RomShape shape;
  int headsUsed = 0;   // shape.heads, or 2·banksPerSlot + 1 without the payload slots
  MemoryMargins bank;  // every bank is built with the same margins
};

// Writes every bank. Usage diag for fields of the wrong width or heads the config lacks; the
// memory gadget's own refusals otherwise.
Expected<RomMargins> buildRom(CircuitWeights& weights, const RomSpec& spec);

}  // namespace qgpu::circuit
