// qgpu/model/tokenizer.h — tokenizers for Qwen3.5 checkpoints (torch-free).
//
// `BpeTokenizer` implements the Hugging Face `tokenizer.json` that Qwen3.5 ships (qwen35-spec.md
// §8): added tokens split off first (leftmost, longest), NFC normalisation (ICU), the Split
// pre-tokeniser with the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// hand-compiled to a matcher over code points (same leftmost-first, greedy-with-backtracking
// result), the GPT-2 byte-to-unicode map, and rank-ordered BPE merges. Added tokens are read from
// tokenizer.json and from tokenizer_config.json's `added_tokens_decoder`. Limits: the case-
// insensitive contractions fold ASCII only.
//
// `ByteTokenizer` is the tiny models' tokenizer: one token per UTF-8 byte (ids 0..255).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/diag.h"

namespace qgpu::model {

class BpeTokenizer {
 public:
  // Reads DIR/tokenizer.json and, if present, DIR/tokenizer_config.json.
  static Expected<BpeTokenizer> load(const std::string& dir);
  static Expected<BpeTokenizer> fromJson(std::string_view tokenizerJson, std::string_view configJson,
                                         const std::string& fileName);

  std::vector<int64_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  size_t size() const { return idToToken_.size(); }  // highest id + 1

  // The pre-tokeniser alone (exposed for tests): the pieces the regex splits `text` into.
  static std::vector<std::string> preTokenize(std::string_view text);

 private:
  std::vector<int64_t> encodeWord(const std::string& byteLevel) const;
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<std::string, int64_t> mergeRank_;  // "a b" → rank
  std::vector<std::string> idToToken_;
  std::map<std::string, int64_t> added_;  // content → id
  std::vector<bool> addedById_;
};

// `WordLevelTokenizer`: Hugging Face's WordLevel model with the WhitespaceSplit pre-tokeniser —
// each whitespace-separated word is one vocabulary entry (a compiled circuit's checkpoint names
// its trace tokens so: "EX(0)", "WM(w0,0111)", "T(-3)"). decode joins the words with single
// spaces, as transformers does; encode refuses a word outside the vocabulary (Usage, naming it)
// unless the model's unk_token is a vocabulary word.
class WordLevelTokenizer {
 public:
  static Expected<WordLevelTokenizer> fromJson(std::string_view tokenizerJson, const std::string& fileName);
  Expected<std::vector<int64_t>> encode(std::string_view text) const;
  std::string decode(const std::vector<int64_t>& ids) const;  // an id outside the vocabulary: <id>
  size_t size() const { return idToToken_.size(); }

 private:
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> idToToken_;
  int64_t unk_ = -1;
};

// The model type a tokenizer.json names ("BPE", "WordLevel", ...), "" when it names none.
Expected<std::string> tokenizerModelType(std::string_view tokenizerJson, const std::string& fileName);

struct ByteTokenizer {
  static std::vector<int64_t> encode(std::string_view text);
  static std::string decode(const std::vector<int64_t>& ids);  // ids >= 256 print as <id>
};

}  // namespace qgpu::model
