// Tests of model/tokenizer.h against the reference `tokenizers` library: the small tokenizer and the
// expected ids in tests/data/tokenizer_small were written by ci/hf_reference.py (make_tokenizer).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "model/tokenizer.h"

namespace qgpu::model {
namespace {

const std::string kDir = std::string(QGPU_SOURCE_DIR) + "/model/tests/data/tokenizer_small";

TEST(BpeTokenizer, EncodesLikeHuggingFaceTokenizers) {
  auto tok = BpeTokenizer::load(kDir);
  ASSERT_TRUE(tok.ok()) << tok.error().str();
  auto text = readTextFile(kDir + "/cases.json");
  ASSERT_TRUE(text.ok());
  auto doc = nlohmann::json::parse(*text);
  ASSERT_EQ(doc["qgpu_fixture"], "hf-tokenizer");
  ASSERT_EQ(doc["version"], 1);
  size_t n = 0;
  for (const auto& c : doc["cases"]) {
    const std::string s = c["text"].get<std::string>();
    EXPECT_EQ(tok->encode(s), c["ids"].get<std::vector<int64_t>>()) << "text: " << s;
    ++n;
  }
  EXPECT_GE(n, 10u);
}

TEST(BpeTokenizer, DecodeInvertsEncodeUpToNfc) {
  auto tok = BpeTokenizer::load(kDir);
  ASSERT_TRUE(tok.ok());
  for (std::string s : {"It's 2026; we'll see.\n\n  x", "Zażółć gęślą jaźń 🙂", "<|im_start|>user\nhi<|im_end|>"})
    EXPECT_EQ(tok->decode(tok->encode(s)), s);
  // NFC: a decomposed é comes back composed.
  EXPECT_EQ(tok->decode(tok->encode("Cafe\u0301")), "Caf\u00e9");
}

TEST(BpeTokenizer, ReadsConfigOnlyAddedTokens) {
  auto tok = BpeTokenizer::load(kDir);
  ASSERT_TRUE(tok.ok());
  auto ids = tok->encode("a<tts_pad>b");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], 567);  // declared only in tokenizer_config.json's added_tokens_decoder
  EXPECT_EQ(tok->decode({567}), "<tts_pad>");
}

TEST(BpeTokenizer, PreTokenizerSplitsLikeQwen35Regex) {
  // Expected pieces worked out by hand from the regex (qwen35-spec.md §8).
  using V = std::vector<std::string>;
  EXPECT_EQ(BpeTokenizer::preTokenize("it's 123 ab"), (V{"it", "'s", " ", "1", "2", "3", " ab"}));
  EXPECT_EQ(BpeTokenizer::preTokenize("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(BpeTokenizer::preTokenize("x \n\n y"), (V{"x", " \n\n", " y"}));
  EXPECT_EQ(BpeTokenizer::preTokenize("e\u0301!?\n"), (V{"e\u0301", "!?\n"}));
  EXPECT_EQ(BpeTokenizer::preTokenize("end  "), (V{"end", "  "}));
}

TEST(BpeTokenizer, RejectsNonBpeTokenizer) {
  auto tok = BpeTokenizer::fromJson(R"({"model":{"type":"WordPiece","vocab":{}}})", "", "t.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.error().message.find("not BPE"), std::string::npos);
}

// WordLevel (a compiled circuit's tokenizer.json): words by whitespace, decode joined by spaces,
// an unknown word refused unless there is an unk_token; malformed vocabularies refused, naming why.
TEST(WordLevelTokenizer, EncodesWordsAndRefusesWhatItCannot) {
  auto tok = WordLevelTokenizer::fromJson(R"j({"model":{"type":"WordLevel","vocab":{"EX(0)":0,"T(-3)":2,"END":1}}})j",
                                          "t.json");
  ASSERT_TRUE(tok.ok()) << tok.error().str();
  auto ids = tok->encode("  EX(0)\nT(-3)\tEND ");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(tok->decode({0, 2, 1, 7}), "EX(0) T(-3) END <7>");
  auto unknown = tok->encode("EX(0) EX(1)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::Usage);
  auto withUnk = WordLevelTokenizer::fromJson(R"({"model":{"type":"WordLevel","vocab":{"a":0,"?":1},"unk_token":"?"}})", "t.json");
  ASSERT_TRUE(withUnk.ok());
  EXPECT_EQ(*withUnk->encode("a b"), (std::vector<int64_t>{0, 1}));
  for (const auto& [json, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model":{"type":"BPE","vocab":{},"merges":[]}})", "not WordLevel"},
           {R"({"model":{"type":"WordLevel"}})", "lacks a vocab"},
           {R"({"model":{"type":"WordLevel","vocab":{"a b":0}}})", "whitespace-free"},
           {R"({"model":{"type":"WordLevel","vocab":{"a":0,"b":0}}})", "given twice"},
           {R"({"model":{"type":"WordLevel","vocab":{"a":-1}}})", "out of range"}}) {
    auto bad = WordLevelTokenizer::fromJson(json, "t.json");
    ASSERT_FALSE(bad.ok()) << json;
    EXPECT_EQ(bad.error().kind, ErrorKind::Checkpoint);
    EXPECT_NE(bad.error().message.find(why), std::string::npos) << bad.error().message;
  }
  auto outside = WordLevelTokenizer::fromJson(R"({"model":{"type":"WordLevel","vocab":{"a":0},"unk_token":"z"}})", "t.json");
  ASSERT_TRUE(outside.ok());
  EXPECT_FALSE(outside->encode("a b").ok());  // an unk_token outside the vocabulary maps nothing
  auto type = tokenizerModelType(R"({"model":{"type":"WordLevel","vocab":{}}})", "t.json");
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(*type, "WordLevel");
}

// Fields missing where an object is due are refusals (or skipped entries), never a failed assert.
TEST(BpeTokenizer, MissingFieldsAreRefusedNotAsserted) {
  auto noVocab = BpeTokenizer::fromJson(R"({"model":{"type":"BPE"}})", "", "t.json");
  ASSERT_FALSE(noVocab.ok());
  EXPECT_NE(noVocab.error().message.find("lacks vocab or merges"), std::string::npos);
  // Found by fuzz_tokenizer: a model type that is not a string threw out of fromJson.
  for (const char* json : {R"({"model":{"type":0,"vocab":{},"merges":[]}})", R"({"model":{"type":["BPE"]}})"}) {
    auto numberType = BpeTokenizer::fromJson(json, "", "t.json");
    ASSERT_FALSE(numberType.ok()) << json;
    EXPECT_EQ(numberType.error().kind, ErrorKind::Checkpoint);
    EXPECT_FALSE(WordLevelTokenizer::fromJson(json, "t.json").ok());
  }
  auto partial = BpeTokenizer::fromJson(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"content":"x"}]})",
                                        "", "t.json");
  EXPECT_TRUE(partial.ok());
}

// Line 2 is `"model": }`: the '}' where a value was due is its 10th character (worked by hand).
TEST(BpeTokenizer, JsonErrorsNameLineAndColumn) {
  auto tok = BpeTokenizer::fromJson("{\n\"model\": }", "", "d/tokenizer.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().kind, ErrorKind::Checkpoint);
  EXPECT_EQ(tok.error().loc.file, "d/tokenizer.json");
  EXPECT_EQ(tok.error().loc.line, 2u);
  EXPECT_EQ(tok.error().loc.column, 10u);
  // tokenizer_config.json is named after tokenizer.json's directory.
  auto cfg = BpeTokenizer::fromJson(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})", "[1,", "d/tokenizer.json");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.error().loc.file, "d/tokenizer_config.json");
  EXPECT_EQ(cfg.error().loc.line, 1u);
}

TEST(ByteTokenizer, RoundTripsBytes) {
  std::string s = "h\xc3\xa9\n";
  auto ids = ByteTokenizer::encode(s);
  EXPECT_EQ(ids, (std::vector<int64_t>{'h', 0xc3, 0xa9, '\n'}));
  EXPECT_EQ(ByteTokenizer::decode(ids), s);
  EXPECT_EQ(ByteTokenizer::decode({300}), "<300>");
}

}  // namespace
}  // namespace qgpu::model
