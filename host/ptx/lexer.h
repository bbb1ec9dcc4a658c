// qgpu/host/ptx/lexer.h — splits PTX text into tokens for the parser.
//
// Contract: `lex` never reads outside `text` and never fails silently: a byte that cannot start a
// token (control characters, non-ASCII), an unterminated `/* */` comment or string gives a
// PtxSyntax Diag at that byte's line and column. Comments (`//`, `/* */`) are dropped. Tokens
// keep views into `text`, so `text` must outlive them. The last token is always End, located just
// after the last byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diag.h"

namespace qgpu::ptx {

enum class Tok : uint8_t {
  Word,    // identifier, directive or dotted opcode: `.reg`, `ld.global.u32`, `%tid.x`, `$L__BB0_3`
  Number,  // starts with a digit: `42`, `0x1F`, `6.4` (the parser decides what it means)
  String,  // `"nounroll"`, quotes included
  Punct,   // one of { } ( ) [ ] , ; : + - < > | @ ! =
  End,     // end of input
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  uint32_t line = 0;
  uint32_t column = 0;
  bool is(char c) const { return kind == Tok::Punct && text.size() == 1 && text[0] == c; }
};

// Tokenizes all of `text`. `file` is only used for Diag locations.
Expected<std::vector<Token>> lex(std::string_view text, const std::string& file);

// Renders a token for a message: printable text as is, anything else as \xNN escapes.
std::string describe(std::string_view text);

}  // namespace qgpu::ptx
