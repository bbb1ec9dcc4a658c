// qgpu/model/tokenizer.cpp — see tokenizer.h.
#include "model/tokenizer.h"
#include "model/checkpoint_error.h"

#include "model/json_text.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <filesystem>

#include "model/safetensors.h"

namespace qgpu::model {
namespace {

std::vector<UChar32> toCodePoints(std::string_view s) {
  std::vector<UChar32> out;
  int32_t i = 0, n = static_cast<int32_t>(s.size());
  while (i < n) {
    UChar32 c;
    U8_NEXT(s.data(), i, n, c);
    out.push_back(c < 0 ? 0xFFFD : c);
  }
  return out;
}

std::string fromCodePoints(const std::vector<UChar32>& cps, size_t b, size_t e) {
  std::string out;
  for (size_t i = b; i < e; ++i) {
    char buf[4];
    int32_t len = 0;
    UBool err = false;
    U8_APPEND(buf, len, 4, cps[i], err);
    if (err) continue;  // not a valid code point: dropped
    out.append(buf, static_cast<size_t>(len));
  }
  return out;
}

bool isL(UChar32 c) { return (U_GET_GC_MASK(c) & U_GC_L_MASK) != 0; }
bool isN(UChar32 c) { return (U_GET_GC_MASK(c) & U_GC_N_MASK) != 0; }
bool isM(UChar32 c) { return (U_GET_GC_MASK(c) & U_GC_M_MASK) != 0; }
bool isS(UChar32 c) { return u_isUWhiteSpace(c); }
bool isCrLf(UChar32 c) { return c == '\r' || c == '\n'; }
UChar32 lower(UChar32 c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// Length of the regex match at i (always >= 1), trying the alternatives in order.
size_t matchAt(const std::vector<UChar32>& cp, size_t i) {
  const size_t n = cp.size();
  auto at = [&](size_t k) -> UChar32 { return k < n ? cp[k] : -1; };
  // 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (cp[i] == '\'') {
    UChar32 a = lower(at(i + 1)), b = lower(at(i + 2));
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  // 2. [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
  auto lmRun = [&](size_t k) {
    size_t e = k;
    while (e < n && (isL(cp[e]) || isM(cp[e]))) ++e;
    return e;
  };
  if (!isCrLf(cp[i]) && !isL(cp[i]) && !isN(cp[i]) && i + 1 < n && (isL(cp[i + 1]) || isM(cp[i + 1])))
    return lmRun(i + 1) - i;
  if (isL(cp[i]) || isM(cp[i])) return lmRun(i) - i;
  // 3. \p{N}
  if (isN(cp[i])) return 1;
  // 4. ' ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*'
  auto other = [&](UChar32 c) { return c >= 0 && !isS(c) && !isL(c) && !isM(c) && !isN(c); };
  {
    size_t j = i;
    if (cp[j] == ' ' && other(at(j + 1))) ++j;
    if (other(at(j))) {
      while (j < n && other(cp[j])) ++j;
      while (j < n && isCrLf(cp[j])) ++j;
      return j - i;
    }
  }
  // 5-7 start with whitespace.
  size_t e = i;
  while (e < n && isS(cp[e])) ++e;
  if (e > i) {
    // 5. \s*[\r\n]+ : backtracks to the last CR/LF inside the whitespace run.
    for (size_t k = e; k-- > i;)
      if (isCrLf(cp[k])) return k + 1 - i;
    // 6. \s+(?!\S) : the whole run at the end of the text, else all but its last character.
    if (e == n) return e - i;
    if (e - i >= 2) return e - 1 - i;
    // 7. \s+
    return e - i;
  }
  return 1;  // unreachable for valid code points: every character is in some class
}

// GPT-2's reversible byte → printable code point map.
const std::vector<UChar32>& byteToUnicode() {
  static const std::vector<UChar32> table = [] {
    std::vector<UChar32> t(256);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[static_cast<size_t>(b)] = keep ? b : 256 + next++;
    }
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> BpeTokenizer::preTokenize(std::string_view text) {
  std::vector<std::string> out;
  auto cp = toCodePoints(text);
  for (size_t i = 0; i < cp.size();) {
    size_t len = matchAt(cp, i);
    out.push_back(fromCodePoints(cp, i, i + len));
    i += len;
  }
  return out;
}

Expected<BpeTokenizer> BpeTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / "tokenizer.json").string();
  QGPU_TRY(text, readTextFile(path));
  std::string config;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "tokenizer_config.json", ec)) {
    QGPU_TRY(c, readTextFile((fs::path(dir) / "tokenizer_config.json").string()));
    config = std::move(c);
  }
  return fromJson(text, config, path);
}

Expected<BpeTokenizer> BpeTokenizer::fromJson(std::string_view tokenizerJson, std::string_view configJson,
                                              const std::string& file) {
  using nlohmann::json;
  QGPU_TRY(doc, parseJsonText(tokenizerJson, file, ErrorKind::Checkpoint));
  if (!doc.is_object()) return checkpointError(file, "tokenizer.json is not a JSON object");
  json& model = doc["model"];  // non-const: a missing key reads as null, never asserts
  if (!model.is_object() || model["type"] != "BPE")
    return checkpointError(file, "tokenizer model is not BPE");
  if (!model["vocab"].is_object() || !model["merges"].is_array())
    return checkpointError(file, "BPE model lacks vocab or merges");
  BpeTokenizer tok;
  auto setToken = [&](int64_t id, const std::string& s) -> Status {
    if (id < 0 || id > (1 << 24))
      return checkpointError(file, "token id " + std::to_string(id) + " out of range");
    if (static_cast<size_t>(id) >= tok.idToToken_.size()) {
      tok.idToToken_.resize(static_cast<size_t>(id) + 1);
      tok.addedById_.resize(static_cast<size_t>(id) + 1);
    }
    tok.idToToken_[static_cast<size_t>(id)] = s;
    return Ok{};
  };
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    if (!it.value().is_number_integer())
      return checkpointError(file, "vocab entry '" + it.key() + "' has no integer id");
    tok.vocab_[it.key()] = it.value().get<int64_t>();
    QGPU_CHECK(setToken(it.value().get<int64_t>(), it.key()));
  }
  int64_t rank = 0;
  for (const auto& m : model["merges"]) {
    std::string key;
    if (m.is_string()) key = m.get<std::string>();  // "a b"
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      key = m[0].get<std::string>() + " " + m[1].get<std::string>();
    else
      return checkpointError(file,
                             "merge #" + std::to_string(rank) + " is neither \"a b\" nor [a, b]");
    tok.mergeRank_.emplace(key, rank++);
  }
  auto addToken = [&](int64_t id, const std::string& content) -> Status {
    QGPU_CHECK(setToken(id, content));
    tok.added_[content] = id;
    tok.addedById_[static_cast<size_t>(id)] = true;
    return Ok{};
  };
  if (doc.contains("added_tokens") && doc["added_tokens"].is_array())
    for (auto& a : doc["added_tokens"])
      if (a.is_object() && a["id"].is_number_integer() && a["content"].is_string())
        QGPU_CHECK(addToken(a["id"].get<int64_t>(), a["content"].get<std::string>()));
  if (!configJson.empty()) {
    // The file name is derived: fromJson is handed the texts, load() names tokenizer.json.
    const std::string configFile =
        (std::filesystem::path(file).parent_path() / "tokenizer_config.json").string();
    QGPU_TRY(cfg, parseJsonText(configJson, configFile, ErrorKind::Checkpoint));
    if (cfg.is_object() && cfg.contains("added_tokens_decoder") && cfg["added_tokens_decoder"].is_object())
      for (auto it = cfg["added_tokens_decoder"].begin(); it != cfg["added_tokens_decoder"].end(); ++it) {
        int64_t id = 0;
        try {
          id = std::stoll(it.key());
        } catch (const std::exception&) {
          return checkpointError(
              file, "tokenizer_config added token id '" + it.key() + "' is not a number");
        }
        if (it.value().is_object() && it.value()["content"].is_string())
          QGPU_CHECK(addToken(id, it.value()["content"].get<std::string>()));
      }
  }
  return tok;
}

std::vector<int64_t> BpeTokenizer::encodeWord(const std::string& word) const {
  if (auto it = vocab_.find(word); it != vocab_.end()) return {it->second};
  // Symbols start as single code points (of the byte-level string), then merge by rank.
  auto cps = toCodePoints(word);
  std::vector<std::string> sym;
  for (size_t i = 0; i < cps.size(); ++i) sym.push_back(fromCodePoints(cps, i, i + 1));
  while (sym.size() > 1) {
    int64_t best = INT64_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = mergeRank_.find(sym[i] + " " + sym[i + 1]);
      if (it != mergeRank_.end() && it->second < best) best = it->second, at = i;
    }
    if (best == INT64_MAX) break;
    sym[at] += sym[at + 1];
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  std::vector<int64_t> ids;
  for (const auto& s : sym)
    if (auto it = vocab_.find(s); it != vocab_.end()) ids.push_back(it->second);
  return ids;  // byte-level BPE: every single byte symbol is in the vocabulary
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  const auto& b2u = byteToUnicode();
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  auto encodePlain = [&](std::string_view piece) {
    if (piece.empty()) return;
    std::string normal;
    if (U_SUCCESS(status)) {
      UErrorCode st = U_ZERO_ERROR;
      icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(piece.data(), static_cast<int32_t>(piece.size())));
      icu::UnicodeString n = nfc->normalize(u, st);
      n.toUTF8String(normal);
    } else {
      normal = std::string(piece);
    }
    for (const std::string& word : preTokenize(normal)) {
      std::string bl;
      for (unsigned char byte : word) bl += fromCodePoints({b2u[byte]}, 0, 1);
      auto ids = encodeWord(bl);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  };
  // Added tokens split the text first: at each position the longest added token that starts there.
  size_t start = 0, i = 0;
  while (i < text.size()) {
    size_t bestLen = 0;
    int64_t bestId = -1;
    for (auto it = added_.lower_bound(std::string(1, text[i])); it != added_.end() && it->first[0] == text[i]; ++it)
      if (it->first.size() > bestLen && text.substr(i, it->first.size()) == it->first)
        bestLen = it->first.size(), bestId = it->second;
    if (bestId < 0) {
      ++i;
      continue;
    }
    encodePlain(text.substr(start, i - start));
    out.push_back(bestId);
    i += bestLen;
    start = i;
  }
  encodePlain(text.substr(start));
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  static const std::unordered_map<UChar32, uint8_t> u2b = [] {
    std::unordered_map<UChar32, uint8_t> m;
    for (int b = 0; b < 256; ++b) m[byteToUnicode()[static_cast<size_t>(b)]] = static_cast<uint8_t>(b);
    return m;
  }();
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= idToToken_.size()) continue;
    const std::string& tokenText = idToToken_[static_cast<size_t>(id)];
    if (addedById_[static_cast<size_t>(id)]) {
      out += tokenText;
      continue;
    }
    for (UChar32 c : toCodePoints(tokenText))
      if (auto it = u2b.find(c); it != u2b.end()) out.push_back(static_cast<char>(it->second));
  }
  return out;
}

Expected<std::string> tokenizerModelType(std::string_view tokenizerJson, const std::string& file) {
  QGPU_TRY(doc, parseJsonText(tokenizerJson, file, ErrorKind::Checkpoint));
  if (!doc.is_object()) return checkpointError(file, "tokenizer.json is not a JSON object");
  nlohmann::json& model = doc["model"];  // non-const: a missing key reads as null
  return model.is_object() && model["type"].is_string() ? model["type"].get<std::string>() : std::string();
}

Expected<WordLevelTokenizer> WordLevelTokenizer::fromJson(std::string_view tokenizerJson, const std::string& file) {
  QGPU_TRY(doc, parseJsonText(tokenizerJson, file, ErrorKind::Checkpoint));
  if (!doc.is_object()) return checkpointError(file, "tokenizer.json is not a JSON object");
  nlohmann::json& model = doc["model"];  // non-const: a missing key reads as null
  if (!model.is_object() || model["type"] != "WordLevel")
    return checkpointError(file, "tokenizer model is not WordLevel");
  if (!model["vocab"].is_object()) return checkpointError(file, "WordLevel model lacks a vocab");
  WordLevelTokenizer tok;
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    if (!it.value().is_number_integer())
      return checkpointError(file, "vocab entry '" + it.key() + "' has no integer id");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > (1 << 24)) return checkpointError(file, "token id " + std::to_string(id) + " out of range");
    if (it.key().empty() || it.key().find_first_of(" \t\r\n") != std::string::npos)
      return checkpointError(file, "vocab entry '" + it.key() + "' is not one whitespace-free word");
    if (static_cast<size_t>(id) >= tok.idToToken_.size()) tok.idToToken_.resize(static_cast<size_t>(id) + 1);
    if (!tok.idToToken_[static_cast<size_t>(id)].empty())
      return checkpointError(file, "token id " + std::to_string(id) + " is given twice");
    tok.idToToken_[static_cast<size_t>(id)] = it.key();
    tok.vocab_[it.key()] = id;
  }
  // An unk_token outside the vocabulary (tokenizers requires one) maps nothing: an unknown word is
  // then an error at encode time, as in tokenizers.
  if (model["unk_token"].is_string()) {
    auto unk = tok.vocab_.find(model["unk_token"].get<std::string>());
    if (unk != tok.vocab_.end()) tok.unk_ = unk->second;
  }
  return tok;
}

Expected<std::vector<int64_t>> WordLevelTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    size_t end = i;
    while (end < text.size() && !space(text[end])) ++end;
    if (end == i) break;
    const std::string word(text.substr(i, end - i));
    auto it = vocab_.find(word);
    if (it == vocab_.end() && unk_ < 0)
      return makeDiag(ErrorKind::Usage, "'" + word + "' is not a word of the tokenizer's vocabulary");
    out.push_back(it == vocab_.end() ? unk_ : it->second);
    i = end;
  }
  return out;
}

std::string WordLevelTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (!out.empty()) out += ' ';
    const bool known = id >= 0 && static_cast<size_t>(id) < idToToken_.size() && !idToToken_[static_cast<size_t>(id)].empty();
    out += known ? idToToken_[static_cast<size_t>(id)] : "<" + std::to_string(id) + ">";
  }
  return out;
}

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<int64_t> out;
  for (unsigned char c : text) out.push_back(c);
  return out;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids)
    out += id >= 0 && id < 256 ? std::string(1, static_cast<char>(id)) : "<" + std::to_string(id) + ">";
  return out;
}

}  // namespace qgpu::model
