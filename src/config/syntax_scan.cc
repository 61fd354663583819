#include "config/syntax_scan.h"

#include <vector>

#include "util/error.h"

namespace tally {
namespace {

struct Pos {
  int line = 1, column = 1;
};

// Walks a text byte by byte, keeping the 1-based line and column (in bytes, as yaml-cpp counts).
class Cursor {
 public:
  explicit Cursor(const std::string& text, size_t start = 0) : text_(text), i_(start) {}
  bool End() const { return i_ >= text_.size(); }
  char Peek() const { return text_[i_]; }
  Pos At() const { return pos_; }
  void Next() {
    if (text_[i_] == '\n') {
      ++pos_.line;
      pos_.column = 1;
    } else {
      ++pos_.column;
    }
    ++i_;
  }

 private:
  const std::string& text_;
  size_t i_ = 0;
  Pos pos_;
};

struct Open {
  char bracket;
  Pos at;
};

[[noreturn]] void Fail(const std::string& file, Pos at, const std::string& what) {
  throw InputError({file, at.line, at.column}, "syntax error: " + what);
}

std::string Quoted(char c) {
  if (c == '\'') return "\"'\"";
  const bool printable = c > ' ' && c < 0x7f;
  return printable ? "'" + std::string(1, c) + "'" : "a control or non-ASCII byte";
}

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Letters, digits and the signs of numbers: true, false, null, NaN, -1.5e3. Their spelling is the
// typed readers' business.
bool LiteralByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

char Closer(char open) { return open == '{' ? '}' : ']'; }

}  // namespace

void CheckJsonSyntax(const std::string& file, const std::string& text) {
  // UTF-16 and UTF-32 (a zero byte among the first four, RFC 8259 §8.1's detection) are left to
  // yaml-cpp, which decodes them; a UTF-8 byte order mark is skipped.
  for (size_t i = 0; i < 4 && i < text.size(); ++i) {
    if (text[i] == '\0') return;
  }
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0) return;
  const size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  // What may come next, where the last value ended (for a missing ','), and the last ',' (for a
  // trailing one).
  enum class Want { kValue, kValueOrClose, kKey, kKeyOrClose, kColon, kCommaOrClose };
  Want want = Want::kValue;
  std::vector<Open> open;
  Pos value_end, comma;
  Cursor c(text, start);
  auto end_value = [&] {
    value_end = c.At();
    want = Want::kCommaOrClose;
  };
  auto read_string = [&] {
    const Pos quote = c.At();
    c.Next();
    while (true) {
      if (c.End() || c.Peek() == '\n') Fail(file, quote, "'\"' is never closed (a JSON string ends on its line)");
      const char ch = c.Peek();
      c.Next();
      if (ch == '"') return;
      if (ch == '\\' && !c.End()) c.Next();
    }
  };
  while (!c.End()) {
    const char ch = c.Peek();
    if (Blank(ch)) {
      c.Next();
      continue;
    }
    const Pos at = c.At();
    if (want == Want::kCommaOrClose && open.empty()) return;  // after the document: ParseYaml's to report
    switch (want) {
      case Want::kCommaOrClose: {
        const Open& inner = open.back();
        if (ch == ',') {
          comma = at;
          want = inner.bracket == '{' ? Want::kKey : Want::kValue;
        } else if (ch == Closer(inner.bracket)) {
          open.pop_back();
        } else if (ch == '}' || ch == ']') {
          Fail(file, at,
               Quoted(ch) + " does not close the '" + std::string(1, inner.bracket) + "' at " +
                   std::to_string(inner.at.line) + ":" + std::to_string(inner.at.column));
        } else {
          Fail(file, value_end, "expected ',' or '" + std::string(1, Closer(inner.bracket)) + "'");
        }
        c.Next();
        if (ch != ',') end_value();
        continue;
      }
      case Want::kColon:
        if (ch != ':') Fail(file, value_end, "expected ':' after the key");
        c.Next();
        want = Want::kValue;
        continue;
      case Want::kKeyOrClose:
      case Want::kKey:
        if (ch == '}' && want == Want::kKeyOrClose) {
          open.pop_back();
          c.Next();
          end_value();
        } else if (ch == '}') {
          Fail(file, comma, "a trailing ',' is not allowed in JSON");
        } else if (ch == '"') {
          read_string();
          value_end = c.At();
          want = Want::kColon;
        } else {
          Fail(file, at, "expected a quoted key, got " + Quoted(ch));
        }
        continue;
      case Want::kValueOrClose:
      case Want::kValue:
        if (ch == ']' && want == Want::kValueOrClose) {
          open.pop_back();
          c.Next();
          end_value();
        } else if (ch == ']' && !open.empty() && open.back().bracket == '[') {
          Fail(file, comma, "a trailing ',' is not allowed in JSON");
        } else if (ch == '{' || ch == '[') {
          open.push_back({ch, at});
          c.Next();
          want = ch == '{' ? Want::kKeyOrClose : Want::kValueOrClose;
        } else if (ch == '"') {
          read_string();
          end_value();
        } else if (LiteralByte(ch)) {
          while (!c.End() && LiteralByte(c.Peek())) c.Next();
          end_value();
        } else {
          Fail(file, at, "expected a value, got " + Quoted(ch));
        }
        continue;
    }
  }
  if (!open.empty()) Fail(file, open.back().at, "'" + std::string(1, open.back().bracket) + "' is never closed");
}

void CheckYamlClosed(const std::string& file, const std::string& text) {
  std::vector<Open> flow;
  Cursor c(text);
  char prev = '\n';  // the last byte that was not blank on this line, '\n' at its start
  bool blank_before = true;
  bool dash_first = false;  // prev is a '-' where a node could start: a sequence entry
  bool property = false;    // an anchor or tag just ended at a node's start: the node starts after it
  while (!c.End()) {
    const char ch = c.Peek();
    if (ch == '\n' || ch == ' ' || ch == '\t' || ch == '\r') {
      if (ch == '\n') prev = '\n';
      blank_before = true;
      c.Next();
      continue;
    }
    if (ch == '#' && blank_before) {  // a comment, to the end of the line
      while (!c.End() && c.Peek() != '\n') c.Next();
      continue;
    }
    // Where a node can start: at the start of a line's content, after ': ' or a sequence's '- ',
    // after '[', '{' or ',' inside a flow collection (or ':' there, as JSON writes it), and after
    // an anchor or tag that itself stood there.
    const bool in_flow = !flow.empty();
    const bool starts = property || prev == '\n' || (prev == ':' && (blank_before || in_flow)) ||
                        (prev == '-' && dash_first && blank_before) ||
                        (in_flow && (prev == '[' || prev == '{' || prev == ','));
    property = false;
    if (starts && (ch == '&' || ch == '!')) {  // an anchor or tag: skip it, the node follows
      while (!c.End() && !Blank(c.Peek())) c.Next();
      property = true;
      continue;
    }
    const Pos at = c.At();
    if (starts && (ch == '"' || ch == '\'')) {
      c.Next();
      while (true) {
        if (c.End()) Fail(file, at, Quoted(ch) + " is never closed");
        const char q = c.Peek();
        c.Next();
        if (ch == '"' && q == '\\' && !c.End()) {
          c.Next();
        } else if (q == ch) {
          if (ch == '\'' && !c.End() && c.Peek() == '\'') {  // '' is a quote inside single quotes
            c.Next();
            continue;
          }
          break;
        }
      }
      prev = ch;
      blank_before = false;
      continue;
    }
    if (starts && flow.empty() && (ch == '|' || ch == '>')) return;  // a block scalar: its text is literal
    if ((ch == '[' || ch == '{') && (starts || in_flow)) {
      flow.push_back({ch, at});
    } else if ((ch == ']' || ch == '}') && in_flow) {
      if (ch != Closer(flow.back().bracket)) return;  // mismatched: yaml-cpp reports it
      flow.pop_back();
    }
    dash_first = ch == '-' && starts;
    prev = ch;
    blank_before = false;
    c.Next();
  }
  if (!flow.empty()) Fail(file, flow.back().at, "'" + std::string(1, flow.back().bracket) + "' is never closed");
}

size_t OpeningQuote(const std::string& text, size_t pos) {
  while (pos < text.size() && (text[pos] == '&' || text[pos] == '!')) {
    while (pos < text.size() && !Blank(text[pos])) ++pos;
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  }
  return pos < text.size() && (text[pos] == '"' || text[pos] == '\'') ? pos : std::string::npos;
}

bool QuoteCloses(const std::string& text, size_t pos) {
  const char quote = text[pos];
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escape: the next byte is never the closing quote
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' is a quote inside single quotes
        continue;
      }
      return true;
    }
  }
  return false;
}

}  // namespace tally
