// qgpu/host/ptx/lexer.cpp — PTX tokenizer (see lexer.h for the contract).
#include "host/ptx/lexer.h"

#include <cstdio>

namespace qgpu::ptx {
namespace {

bool isWordStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%' ||
         c == '.';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isWordChar(char c) { return isWordStart(c) || isDigit(c); }
bool isPunct(char c) {
  switch (c) {
    case '{': case '}': case '(': case ')': case '[': case ']': case ',': case ';': case ':':
    case '+': case '-': case '<': case '>': case '|': case '@': case '!': case '=':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string describe(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

Expected<std::vector<Token>> lex(std::string_view text, const std::string& file) {
  std::vector<Token> tokens;
  uint32_t line = 1;
  size_t lineStart = 0;
  size_t i = 0;
  const size_t n = text.size();
  auto column = [&](size_t pos) { return static_cast<uint32_t>(pos - lineStart + 1); };
  auto error = [&](size_t pos, uint32_t atLine, uint32_t atColumn, std::string message) {
    (void)pos;
    return makeDiag(ErrorKind::PtxSyntax, std::move(message), SourceLoc{file, atLine, atColumn});
  };
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      uint32_t startLine = line, startColumn = column(i);
      i += 2;
      bool closed = false;
      while (i < n) {
        if (text[i] == '*' && i + 1 < n && text[i + 1] == '/') {
          i += 2;
          closed = true;
          break;
        }
        if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
        ++i;
      }
      if (!closed) return error(i, startLine, startColumn, "unterminated '/*' comment");
      continue;
    }
    Token tok;
    tok.line = line;
    tok.column = column(i);
    size_t start = i;
    if (isWordStart(c)) {
      while (i < n && isWordChar(text[i])) ++i;
      tok.kind = Tok::Word;
    } else if (isDigit(c)) {
      while (i < n && (isWordChar(text[i]) && text[i] != '%' && text[i] != '$')) ++i;
      tok.kind = Tok::Number;
    } else if (c == '"') {
      ++i;
      while (i < n && text[i] != '"' && text[i] != '\n') ++i;
      if (i >= n || text[i] != '"') return error(start, tok.line, tok.column, "unterminated string");
      ++i;
      tok.kind = Tok::String;
    } else if (isPunct(c)) {
      ++i;
      tok.kind = Tok::Punct;
    } else {
      return error(start, tok.line, tok.column,
                   "unexpected character '" + describe(text.substr(i, 1)) + "'");
    }
    tok.text = text.substr(start, i - start);
    tokens.push_back(tok);
  }
  Token end;
  end.kind = Tok::End;
  end.line = line;
  end.column = column(i);
  tokens.push_back(end);
  return tokens;
}

}  // namespace qgpu::ptx
