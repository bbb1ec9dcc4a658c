// qgpu/circuit/tokens.cpp — see tokens.h.
#include "circuit/tokens.h"

#include <bit>
#include <cstring>

namespace qgpu::circuit {
namespace {

using trace::Family;

int familyIndex(Family f) {
  return static_cast<int>(f);
}

}  // namespace

int tokenIndexBits() {
  int largest = 1;
  for (const trace::FamilyInfo& f : trace::kFamilies) largest = std::max<int>(largest, f.count);
  return std::max(1, static_cast<int>(std::bit_width(static_cast<unsigned>(largest - 1))));
}

Expected<TokenLayout> planTokenLayout(FieldAllocator& alloc, int hidden, int64_t rowOffset) {
  if (!alloc.taken().empty() || hidden <= 0)
    return makeDiag(ErrorKind::Usage, "token layout: needs a fresh allocator over a positive "
                                      "hidden size, got hidden " + std::to_string(hidden));
  const int fieldDims = trace::kNumFamilies + tokenIndexBits() + trace::kChunkBits + 2;
  const int ballast = kTokenBallastDims;
  if (fieldDims + ballast > hidden)
    return makeDiag(ErrorKind::OverLimit,
                    "token layout: " + std::to_string(fieldDims) + " field dims + " +
                        std::to_string(ballast) + " ballast exceed the hidden size " +
                        std::to_string(hidden));
  TokenLayout t;
  t.rowOffset = rowOffset;
  t.hidden = hidden;
  QGPU_TRY(b, alloc.take("tok.ballast", ballast));
  QGPU_TRY(f, alloc.take("tok.family", trace::kNumFamilies));
  QGPU_TRY(i, alloc.take("tok.index", tokenIndexBits()));
  QGPU_TRY(c, alloc.take("tok.chunk", trace::kChunkBits));
  QGPU_TRY(ic, alloc.take("tok.isChunk", 1));
  QGPU_TRY(it, alloc.take("tok.isTerminal", 1));
  t.ballast = b;
  t.family = f;
  t.index = i;
  t.chunk = c;
  t.isChunk = ic;
  t.isTerminal = it;
  return t;
}

int familySign(trace::Token token, int family) {
  return familyIndex(trace::familyOf(token)) == family ? 1 : -1;
}

int indexBit(trace::Token token, int bit) {
  return (trace::indexOf(token) >> bit) & 1 ? 1 : -1;
}

bool isChunkToken(trace::Token token) {
  const Family f = trace::familyOf(token);
  return f == Family::C || f == Family::T;
}

bool isTerminalToken(trace::Token token) {
  return trace::familyOf(token) == Family::T;
}

int chunkBit(trace::Token token, int bit) {
  return isChunkToken(token) && ((trace::indexOf(token) >> bit) & 1) ? 1 : -1;
}

Status writeTokenEmbeddings(CircuitWeights& w, const TokenLayout& t) {
  const model::Qwen35Config& c = w.config();
  if (t.rowOffset < 0 || t.rowOffset + trace::kVocabSize > c.vocabSize)
    return makeDiag(ErrorKind::Usage, "token layout: rows [" + std::to_string(t.rowOffset) + ", " +
                                          std::to_string(t.rowOffset + trace::kVocabSize) +
                                          ") do not fit the vocabulary of " +
                                          std::to_string(c.vocabSize));
  if (t.hidden != c.hiddenSize)
    return makeDiag(ErrorKind::Usage, "token layout: planned for hidden " +
                                          std::to_string(t.hidden) + ", config has " +
                                          std::to_string(c.hiddenSize));
  const std::string embed = w.globalTensor("embed_tokens.weight");
  for (int id = 0; id < trace::kVocabSize; ++id) {
    const auto tok = static_cast<trace::Token>(id);
    const int64_t row = t.rowOffset + id;
    auto put = [&](int dim, int sign) { return w.set(embed, row, dim, sign * t.unit); };
    for (int d = t.fieldDims(); d < t.hidden; ++d) QGPU_CHECK(put(d, 1));  // the pads
    for (int i = 0; i < t.ballast.dims; ++i) QGPU_CHECK(put(t.ballast.at(i), 1));
    for (int f = 0; f < t.family.dims; ++f) QGPU_CHECK(put(t.family.at(f), familySign(tok, f)));
    for (int i = 0; i < t.index.dims; ++i) QGPU_CHECK(put(t.index.at(i), indexBit(tok, i)));
    for (int i = 0; i < t.chunk.dims; ++i) QGPU_CHECK(put(t.chunk.at(i), chunkBit(tok, i)));
    QGPU_CHECK(put(t.isChunk.at(0), isChunkToken(tok) ? 1 : -1));
    QGPU_CHECK(put(t.isTerminal.at(0), isTerminalToken(tok) ? 1 : -1));
  }
  return Ok{};
}

Expected<trace::PackedField> packedField(trace::PackedWord word, const char* name,
                                         const std::string& gadget) {
  for (const trace::PackedField& f : trace::packedLayout(word))
    if (std::strcmp(f.name, name) == 0) return f;
  return makeDiag(ErrorKind::Usage,
                  gadget + ": the packed word has no field '" + std::string(name) + "'");
}

Expected<Field> packedSlice(const Field& word, trace::PackedWord kind, const char* name, int width,
                            const std::string& gadget) {
  QGPU_TRY(f, packedField(kind, name, gadget));
  if (f.width != width)
    return makeDiag(ErrorKind::Usage, gadget + ": the packed word's " + name + " field is " +
                                          std::to_string(f.width) + " bits, the gadget reads " +
                                          std::to_string(width));
  return word.slice(f.offset, f.width, name);
}

}  // namespace qgpu::circuit
