// qgpu/fuzz/fuzz_tokenizer.cpp — libFuzzer target for the tokenizer.json readers
// (model/tokenizer.cpp: byte-level BPE and WordLevel).
//
// The input's first line is a text to encode, the rest a tokenizer.json. Each reader must accept
// it or refuse it with a Checkpoint Diag; a tokenizer it accepts must encode the text and decode
// the result without crashing, and a WordLevel encode either succeeds or refuses with Usage.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/tokenizer.h"

using namespace qgpu::model;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view text = newline == std::string_view::npos ? std::string_view() : input.substr(0, newline);
  const std::string_view json = newline == std::string_view::npos ? input : input.substr(newline + 1);
  auto type = tokenizerModelType(json, "fuzz/tokenizer.json");
  if (!type && type.error().kind != qgpu::ErrorKind::Checkpoint) __builtin_trap();
  auto bpe = BpeTokenizer::fromJson(json, "", "fuzz/tokenizer.json");
  if (bpe) {
    (void)bpe->decode(bpe->encode(text));
  } else if (bpe.error().kind != qgpu::ErrorKind::Checkpoint) {
    __builtin_trap();
  }
  auto words = WordLevelTokenizer::fromJson(json, "fuzz/tokenizer.json");
  if (words) {
    auto ids = words->encode(text);
    if (ids) (void)words->decode(*ids);
    else if (ids.error().kind != qgpu::ErrorKind::Usage) __builtin_trap();
  } else if (words.error().kind != qgpu::ErrorKind::Checkpoint) {
    __builtin_trap();
  }
  return 0;
}
