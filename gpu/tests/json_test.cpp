// qgpu/gpu/tests/json_test.cpp — the strict JSON reader that validates GPU recordings.
#include "gpu/json.h"

#include <gtest/gtest.h>

namespace qgpu::gpu::json {
namespace {

TEST(GpuJson, ParsesNestedValues) {
  auto v = parseJson(R"({"a": [1, -2, 3.5e2, true, null], "b": {"c": "x\ty\u00e9\ud83d\ude00"}})", "t");
  ASSERT_TRUE(v.ok()) << v.error().str();
  const Value* a = v->get("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_EQ(a->items[0].asU32(), 1u);
  EXPECT_EQ(a->items[1].asInt(), -2);
  EXPECT_FALSE(a->items[1].asU32().has_value());
  EXPECT_FALSE(a->items[2].asInt().has_value());  // not an integer
  EXPECT_EQ(a->items[3].kind, Value::Kind::Bool);
  EXPECT_EQ(a->items[4].kind, Value::Kind::Null);
  EXPECT_EQ(v->get("b")->get("c")->text, "x\ty\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(GpuJson, RejectsWhatStrictJsonForbids) {
  for (const char* bad : {"{\"a\": 1,}", "[1, 2,]", "{\"a\": 1} x", "{\"a\": 1, \"a\": 2}",
                          "\"tab\there\"", "[01]", "[1.]", "{'a': 1}", "// c\n{}", "[\"\\ud800\"]",
                          "", "{\"a\" 1}", "[1 2]", "nul"}) {
    auto v = parseJson(bad, "t");
    EXPECT_FALSE(v.ok()) << "accepted: " << bad;
    if (!v.ok()) {
      EXPECT_EQ(v.error().kind, ErrorKind::Io);
    }
  }
}

TEST(GpuJson, LimitsNesting) {
  EXPECT_TRUE(parseJson(std::string(60, '[') + std::string(60, ']'), "t").ok());
  auto deep = parseJson(std::string(100000, '['), "t");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nesting"), std::string::npos);
}

TEST(GpuJson, NamesLineAndColumnOfAnError) {
  auto v = parseJson("{\n  \"a\": [1,\n  }", "f.json");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().loc.file, "f.json");
  EXPECT_EQ(v.error().loc.line, 3u);
  EXPECT_EQ(v.error().loc.column, 3u);
}

TEST(GpuJson, QuoteRoundTrips) {
  std::string s = "a\"b\\c\nd\x01";
  auto v = parseJson(quote(s), "t");
  ASSERT_TRUE(v.ok()) << v.error().str();
  EXPECT_EQ(v->text, s);
}

}  // namespace
}  // namespace qgpu::gpu::json
