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
#include <string>
#include <vector>

#include "common/diag.h"
#include "model/config.h"

namespace qgpu::circuit {

// A named block of consecutive residual dims [offset, offset + dims).
struct Field {
  std::string name;
  int offset = 0;
  int dims = 0;
  int at(int i) const { return offset + i; }  // i < dims
  // Dims [from, from + count) of this field, under its name or as "name.part".
  Field slice(int from, int count) const { return Field{name, offset + from, count}; }
  Field slice(int from, int count, const std::string& part) const {
    return Field{name + "." + part, offset + from, count};
  }
};

// Hands out residual dims in order; refuses to pass the hidden size.
class FieldAllocator {
 public:
  explicit FieldAllocator(int hidden) : hidden_(hidden) {}
  Expected<Field> take(const std::string& name, int dims);
  int used() const { return next_; }

 private:
  int hidden_;
  int next_ = 0;
};

// Dense: every tensor's array. CountOnly: shapes only (circuit/plan.h counts a stage's heads,
// units and dims without its weights): set() checks the index and discards the value, get()
// reads 0, write() is refused.
enum class WeightStorage : uint8_t { Dense, CountOnly };

class CircuitWeights {
 public:
  // All tensors of `config`, zero. F32 throughout; A_log and norm weights zero like the rest.
  explicit CircuitWeights(model::Qwen35Config config,
                          WeightStorage storage = WeightStorage::Dense);
  bool countOnly() const { return storage_ == WeightStorage::CountOnly; }

  const model::Qwen35Config& config() const { return config_; }

  // Full name of a layer tensor: "model.layers.<i>.<suffix>".
  std::string layerTensor(int layer, const std::string& suffix) const;
  std::string globalTensor(const std::string& suffix) const;  // "model.<suffix>"

  // Element (row, col) of a 2-D tensor [rows, cols]; of a 1-D tensor with col = 0; of conv1d
  // [C, 1, K] with (channel, tap). Bad names or indices are a Usage diag.
  Status set(const std::string& name, int64_t row, int64_t col, float value);
  Expected<float> get(const std::string& name, int64_t row, int64_t col) const;
  // Sets every element of a tensor.
  Status fill(const std::string& name, float value);

  // Rule R4: the first weight that a bf16 cast would change, as an Internal diag.
  Status checkBf16Exact() const;

  // DIR/config.json + DIR/model.safetensors (F32).
  Status write(const std::string& dir) const;

 private:
  struct Tensor {
    std::vector<int64_t> shape;
    std::vector<float> data;
  };
  Expected<float*> element(const std::string& name, int64_t row, int64_t col);
  model::Qwen35Config config_;
  WeightStorage storage_ = WeightStorage::Dense;
  float scratch_ = 0;  // CountOnly: what element() points at
  std::vector<std::string> order_;  // languageTensors order, kept for writing
  std::map<std::string, Tensor> tensors_;
};

}  // namespace qgpu::circuit
