// qgpu_make_tiny — writes a seeded random Qwen3.5 checkpoint (model/tiny.h) for a given config.
//
//   qgpu_make_tiny CONFIG_JSON OUT_DIR SEED [f32|bf16|f16]
//
// CONFIG_JSON is a Hugging Face config.json (qwen3_5_text or qwen3_5). ci/hf_reference.py uses this
// tool so that transformers and the C++ tests see byte-identical weights. Exit codes: 0 written,
// 2 bad arguments or config, 3 I/O error.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/safetensors.h"
#include "model/tiny.h"

int main(int argc, char** argv) {
  using namespace qgpu::model;
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s CONFIG_JSON OUT_DIR SEED [f32|bf16|f16]\n", argv[0]);
    return 2;
  }
  auto text = readTextFile(argv[1]);
  if (!text) {
    std::fprintf(stderr, "%s\n", text.error().str().c_str());
    return 3;
  }
  auto config = parseConfigJson(*text, argv[1]);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().str().c_str());
    return 2;
  }
  std::string storage = argc == 5 ? argv[4] : "f32";
  if (storage != "f32" && storage != "bf16" && storage != "f16") {
    std::fprintf(stderr, "storage must be f32, bf16 or f16, not '%s'\n", storage.c_str());
    return 2;
  }
  TinySpec spec{*config, std::strtoull(argv[3], nullptr, 10), storage == "bf16" ? StDtype::BF16 : storage == "f16" ? StDtype::F16 : StDtype::F32};
  auto status = generateTinyCheckpoint(argv[2], spec);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.error().str().c_str());
    return 3;
  }
  return 0;
}
