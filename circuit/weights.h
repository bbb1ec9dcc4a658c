// qgpu/circuit/weights.h — the weights of a circuit checkpoint, as dense fp32 arrays (torch-free).
//
// The circuit compiler computes weights; it never trains them. `CircuitWeights` holds every
// language tensor of a Qwen3.5 config (model::languageTensors, the same table the loader checks),
// zero-initialised, and lets gadgets write single entries by tensor name. A zero weight is exact in
// every dtype, so a gadget touches only the rows and columns it owns and the rest of the layer
// computes exact zeros (silu(0) · 0 = 0, the residual is unchanged).
//
// Contract:
//   - Names are the checkpoint's full names; `layerTensor(i, suffix)` builds them.
//   - `checkBf16Exact` is rule R4 of docs/circuit.md: every weight must survive the cast to bf16
//     unchanged (a gadget that needs more than 8 significant bits splits its constant).
//   - `write` writes a standard Hugging Face checkpoint directory (config.json + safetensors,
//     F32 storage) that model::Decoder loads unchanged.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "circuit/members.h"
#include "common/diag.h"
#include "model/config.h"

namespace qgpu::circuit {

// A named block of consecutive residual dims [offset, offset + dims).
//
// `kinds`: 0 for a field any token may use; else the op kinds (FieldKind bits) for which alone it
// holds a value, every unit that writes it silent unless one of them executes (units.h
// UnitGuard). Two such fields of disjoint kinds may share dims while both are live
// (circuit/layout.h): at most one of them is written at any token.
struct Field {
  std::string name;
  int offset = 0;
  int dims = 0;
  uint32_t kinds = 0;
  int at(int i) const { return offset + i; }  // i < dims
  // Dims [from, from + count) of this field, under its name or as "name.part".
  Field slice(int from, int count) const { return Field{name, offset + from, count, kinds}; }
  Field slice(int from, int count, const std::string& part) const {
    return Field{name + "." + part, offset + from, count, kinds};
  }
};

// Field::kinds bits: the op kinds whose fields the stages keep apart by guards (one numbering for
// every stage, so that any two fields compare).
enum FieldKind : uint32_t {
  kKindAtomAdd = 1u << 0,
  kKindAtomMinMax = 1u << 1,  // atom.min / max, .u and .s
  kKindAtomInc = 1u << 2,
  kKindAtomDec = 1u << 3,
  kKindAtomCas = 1u << 4,
  kKindMemOther = 1u << 5,  // the other memory ops: ld, st, st.b8, st.b16, atom.and/or/xor/exch
  kKindSpill = 1u << 6,     // the spill slot ops ldl, stl
  kKindAluOther = 1u << 7,  // the ALU stage's ops of no group below: mov, the logic, selp, …
  kKindWarp = 1u << 8,      // the warp ops (warp_ops.h warpOps)
  // The ALU stage's op groups whose bus fields are their own (alu_stage.h AluGroup).
  kKindAluAdd = 1u << 9,       // add, sub, neg, abs: the one adder
  kKindAluCompare = 1u << 10,  // set.*, min, max: the compares
  kKindAluShift = 1u << 11,    // the shifts and bfe: the shifter
  kKindAluPopc = 1u << 12,
  kKindAluClz = 1u << 13,
  kKindAluBfind = 1u << 14,
  kKindAluPrmt = 1u << 15,
};
// Every op the memory stage executes (the kinds above are its parts).
inline constexpr uint32_t kKindMemoryStage = kKindAtomAdd | kKindAtomMinMax | kKindAtomInc |
                                             kKindAtomDec | kKindAtomCas | kKindMemOther |
                                             kKindSpill;
// Every op the ALU stage executes (alu_stage.h aluStageOps; the kinds above are its parts).
inline constexpr uint32_t kKindAlu = kKindAluOther | kKindAluAdd | kKindAluCompare | kKindAluShift |
                                     kKindAluPopc | kKindAluClz | kKindAluBfind | kKindAluPrmt;

// Hands out residual dims: in order (one field per value), or by a plan (circuit/layout.h
// planByLiveness: fields whose live ranges do not overlap share dims). Refuses to pass the hidden
// size. Keeps every field it handed out, in order, so that a build can be planned from them.
//
// Planned: the i-th take gets the plan's i-th field, which must have the same name and dims (the
// plan was made from a build that took the same fields in the same order; a build that takes
// others is an Internal diag naming both). The plan's pad restores (layout.h) travel with it:
// the build writes them (pipeline.h buildExecuteModel), since a field that needs the +u pad and
// was placed on another field's dims is wrong without them.
struct PadRestore {
  Field field;    // dims another field held before: they get the +u pad back ...
  int layer = 0;  // ... in this layer's MLP (circuit/logic.h buildPad)
};
class FieldAllocator {
 public:
  explicit FieldAllocator(int hidden) : hidden_(hidden) {}
  FieldAllocator(int hidden, std::vector<Field> plan, std::vector<PadRestore> pads = {})
      : hidden_(hidden), plan_(std::move(plan)), pads_(std::move(pads)) {}
  // `kinds` as Field::kinds (0: any token's).
  Expected<Field> take(const std::string& name, int dims, uint32_t kinds = 0);
  // The highest dim handed out + 1 (in order: the next free dim).
  int used() const { return span_; }
  // Σ dims handed out (in order: used()).
  int takenDims() const { return takenDims_; }
  const std::vector<Field>& taken() const { return taken_; }
  bool planned() const { return !plan_.empty(); }
  const std::vector<PadRestore>& pads() const { return pads_; }

 private:
  int hidden_;
  std::vector<Field> plan_;
  std::vector<PadRestore> pads_;
  std::vector<Field> taken_;
  int span_ = 0;
  int takenDims_ = 0;
};

// Dense: every tensor's array. CountOnly: shapes only (circuit/plan.h counts a stage's heads,
// units and dims without its weights): set() checks the index and discards the value, get()
// reads 0, write() is refused.
enum class WeightStorage : uint8_t { Dense, CountOnly };

// Which residual dims each block of a build touched (CircuitWeights::recordTouches): a dim is
// read by a block whose input projections (DeltaNet's in_proj_qkv / z / b / a, attention's
// q / k / v, the MLP's gate and up) have a nonzero weight in its column, written by one whose
// output projection (out_proj, o_proj, down_proj) has a nonzero weight in its row; the
// embedding writes it where a row holds anything but the pad, lm_head reads it where a row has a
// nonzero weight; a dim the embedding sets to anything but ±pad (a counter's quiet 0 and heavy 2u,
// which keep Σx² as the full layout's) is *off the norm*. Points are circuit/layout.h's keys: −1 the embedding, 2i layer i's
// attention, 2i + 1 its MLP, 2·layers lm_head. (The pre-norms read every dim alike; with every
// dim at ±u they cannot tell one layout from another.)
class ResidualTouches {
 public:
  ResidualTouches() = default;
  ResidualTouches(int hidden, int layers);
  int hidden() const { return hidden_; }
  int lastKey() const { return 2 * layers_; }  // lm_head
  void read(int dim, int key) { mark(reads_, dim, key); }
  void write(int dim, int key) { mark(writes_, dim, key); }
  bool reads(int dim, int key) const { return test(reads_, dim, key); }
  bool writes(int dim, int key) const { return test(writes_, dim, key); }
  void markOffNorm(int dim) { offNorm_[static_cast<size_t>(dim)] = true; }
  bool offNorm(int dim) const { return offNorm_[static_cast<size_t>(dim)]; }

 private:
  void mark(std::vector<uint64_t>& bits, int dim, int key);
  bool test(const std::vector<uint64_t>& bits, int dim, int key) const;
  int hidden_ = 0, layers_ = 0, words_ = 0;  // words_ 64-bit words per dim
  std::vector<uint64_t> reads_, writes_;
  std::vector<bool> offNorm_;
};

class CircuitWeights {
 public:
  // All tensors of `config`, zero. F32 throughout; A_log and norm weights zero like the rest.
  explicit CircuitWeights(model::Qwen35Config config,
                          WeightStorage storage = WeightStorage::Dense);
  // Packed (circuit/members.h, circuit/pack.h): the stages build `virtualConfig` — config()
  // answers it, set() takes its names and indices — and every weight lands where `packing` puts
  // its member in `physical`, the config write() writes. A layer-wide weight (the norms) is set
  // in every physical layer; two virtual layers that want different values there are an Internal
  // diag. The two configs must agree on everything but the layers, the heads per layer and the
  // MLP width (Usage otherwise), and their heads on Hk = Hv.
  static Expected<std::unique_ptr<CircuitWeights>> packed(
      model::Qwen35Config virtualConfig, model::Qwen35Config physical, LayerPacking packing,
      WeightStorage storage = WeightStorage::Dense);
  bool countOnly() const { return storage_ == WeightStorage::CountOnly; }

  // The config the stages build (the virtual one when packed).
  const model::Qwen35Config& config() const { return config_; }
  // The config write() writes (config() unless packed).
  const model::Qwen35Config& writtenConfig() const { return packed_ ? physical_ : config_; }

  // Full name of a layer tensor: "model.layers.<i>.<suffix>".
  std::string layerTensor(int layer, const std::string& suffix) const;
  std::string globalTensor(const std::string& suffix) const;  // "model.<suffix>"

  // Element (row, col) of a 2-D tensor [rows, cols]; of a 1-D tensor with col = 0; of conv1d
  // [C, 1, K] with (channel, tap). Bad names or indices are a Usage diag.
  Status set(const std::string& name, int64_t row, int64_t col, float value);
  Expected<float> get(const std::string& name, int64_t row, int64_t col) const;
  // Sets every element of a tensor.
  Status fill(const std::string& name, float value);
  // Element (row, col) of a tensor write() writes, by its name there (writtenConfig()'s).
  Expected<float> written(const std::string& name, int64_t row, int64_t col) const;

  // From now on every set() and fill() of a nonzero weight marks the residual dims it touches
  // (ResidualTouches above; `pad` is the embedding's pad value, not a write).
  void recordTouches(float pad);
  const ResidualTouches& touches() const { return touches_; }

  // From now on every MLP unit a UnitWriter adds is logged with the dims it writes and its guard
  // (units.h UnitGuard: its dim, −1 for none), so that a test can check that every writer of a
  // field of kinds (Field::kinds) is guarded — in CountOnly storage too.
  struct UnitRecord {
    int layer = 0;
    int guardDim = -1;
    std::vector<int> writes;  // the down terms' dims
    int unit = 0;             // its index in the layer's MLP
    uint32_t guardKinds = 0;  // its guard's UnitGuard::kinds
  };
  void logUnits() { logUnits_ = true; }

  // From now on every nonzero weight of a head's or a unit's own (circuit/members.h) marks that
  // member used and the residual dims it reads or writes; members() gives them per layer
  // (Usage on a packed CircuitWeights or with Hk != Hv).
  Status recordMembers();
  std::vector<LayerMembers> members() const;
  bool loggingUnits() const { return logUnits_; }
  void addUnitRecord(UnitRecord r) { unitLog_.push_back(std::move(r)); }
  const std::vector<UnitRecord>& unitLog() const { return unitLog_; }

  // Rule R4: the first weight that a bf16 cast would change, as an Internal diag.
  Status checkBf16Exact() const;

  // DIR/config.json + DIR/model.safetensors (F32).
  Status write(const std::string& dir) const;

 private:
  // How a tensor touches the residual, at its block's `key`.
  enum class Touch : uint8_t {
    None,          // not at all (conv1d, norms, A_log, dt_bias)
    ReadsColumns,  // an input projection: column d reads dim d
    WritesRows,    // an output projection: row d writes dim d
    Embedding,     // column d writes dim d where the value is not the pad
    LmHead,        // column d reads dim d after the last layer
  };
  // What a layer tensor's entries belong to (circuit/members.h).
  enum class Part : uint8_t {
    None,       // a global tensor, or a full-attention layer's
    Qkv,        // rows: q, k, v channels of the heads
    Conv,       // channels as Qkv's rows
    Z,          // rows: v channels
    PerHead,    // in_proj_b, in_proj_a, dt_bias, A_log: row = head
    Out,        // columns: v channels
    UnitRow,    // gate_proj, up_proj: row = unit
    UnitCol,    // down_proj: column = unit
    LayerWide,  // the norms
  };
  struct Tensor {
    std::vector<int64_t> shape;
    std::vector<float> data;
    Touch touch = Touch::None;
    int key = 0;
    int layer = -1;
    Part part = Part::None;
    std::string suffix;  // a layer tensor's name after "layers.<i>."
    // Packed: the index in physicalTensors_ of the tensor of the same name in each physical
    // layer (a global tensor: its one, at 0), −1 where the physical config has none; made once
    // by packed(), so that set() builds no name.
    std::vector<int> physical;
  };
  // The head or unit entry (row, col) of a Part tensor belongs to.
  int memberOf(const Tensor& t, int64_t row, int64_t col) const;
  Expected<float*> element(const std::string& name, int64_t row, int64_t col);
  // Packed: where entry (row, col) of virtual tensor `t` lives.
  Expected<float*> physicalElement(const Tensor& t, int64_t row, int64_t col);
  Status setLayerWide(const Tensor& t, int64_t row, int64_t col, float value);
  // The tensor write() writes under `name` (a name of physicalOrder_ or order_).
  const Tensor& writtenTensor(const std::string& name) const;
  void classifyTouches();
  void touch(const Tensor& t, int64_t row, int64_t col, float value);
  void noteMember(const Tensor& t, int64_t row, int64_t col);
  model::Qwen35Config config_;
  bool packed_ = false;
  model::Qwen35Config physical_;
  LayerPacking packing_;
  std::vector<Tensor> physicalTensors_;  // packed: the data (tensors_ has none), by physicalOrder_
  std::vector<std::string> physicalOrder_;
  std::map<std::string, int> physicalIndex_;  // name → index in both
  bool recordingMembers_ = false;
  std::vector<LayerMembers> members_;
  WeightStorage storage_ = WeightStorage::Dense;
  float scratch_ = 0;  // CountOnly: what element() points at
  std::vector<std::string> order_;  // languageTensors order, kept for writing
  std::map<std::string, Tensor> tensors_;
  bool recording_ = false;
  float pad_ = 0;
  ResidualTouches touches_;
  bool logUnits_ = false;
  std::vector<UnitRecord> unitLog_;
};

}  // namespace qgpu::circuit
