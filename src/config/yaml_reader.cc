#include "config/yaml_reader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "config/syntax_scan.h"
#include "util/parse.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// Plain scalars carry yaml-cpp's "?" tag; quoted ones "!", and explicit tags (!!str) their own.
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

// YAML's core tags as written (!!int); yaml-cpp hands them over expanded.
std::string ShortTag(const std::string& tag) {
  const std::string core = "tag:yaml.org,2002:";
  return tag.rfind(core, 0) == 0 ? "!!" + tag.substr(core.size()) : tag;
}

std::string PosText(const SourceLoc& loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.column); }

uint64_t ReadUint(const YAML::Node& node, const std::string& file, const std::string& what, uint64_t min) {
  std::string bound = min == 0 ? "a whole number >= 0" : "a positive whole number";
  // `!!int 64` is the integer 64 by YAML's core schema.
  const bool integer = IsPlainScalar(node) || (node.IsScalar() && ShortTag(node.Tag()) == "!!int");
  std::string text = integer ? node.Scalar() : "";
  const std::optional<uint64_t> whole = ReadWhole(text);
  const bool digits_only = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  const uint64_t value = whole.value_or(0);
  if (digits_only && (!whole || value >= (1ULL << 63))) {
    throw InputError(LocOf(node, file), "'" + what + "' is too large: " + text + " (at most 2^63 - 1)");
  }
  if (!whole || value < min) {
    throw InputError(LocOf(node, file), "'" + what + "' must be " + bound + ", got " + Describe(node));
  }
  return value;
}

// The position of each document's first node, and of the collections open now, from yaml-cpp's
// parser events.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> nodes;
  std::vector<YAML::Mark> open;
  std::vector<YAML::Mark> quoted;  // where each quoted scalar starts

  void OnDocumentStart(const YAML::Mark&) override { open_ = true; }
  void OnDocumentEnd() override { open_ = false; }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string&) override {
    Node(mark);
    if (tag == "!") quoted.push_back(mark);  // yaml-cpp tags quoted scalars "!", plain ones "?"
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
    open.push_back(mark);
  }
  void OnSequenceEnd() override { open.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
    open.push_back(mark);
  }
  void OnMapEnd() override { open.pop_back(); }

 private:
  void Node(const YAML::Mark& mark) {
    if (open_) nodes.push_back(mark);
    open_ = false;
  }
  bool open_ = false;
};

// The length of the UTF-8 sequence at `i`, or 0 when it is not one (overlong forms, surrogates and
// code points past U+10FFFF included).
size_t Utf8Length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned b0 = byte(i);
  const auto cont = [&](size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned b1 = byte(i + 1);
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F)) return 0;
    return cont(i + 1) && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned b1 = byte(i + 1);
    if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 > 0x8F)) return 0;
    return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A UTF-16 or UTF-32 file (it starts with a byte order mark) as UTF-8, so that it passes the same
// text checks as any other; a UTF-8 file as it is.
std::string ToUtf8(const std::string& file, const std::string& text, std::string& encoding) {
  using namespace std::string_view_literals;  // the UTF-32 marks hold NUL bytes: sv keeps their length
  const auto starts = [&](std::string_view bom) { return std::string_view(text).starts_with(bom); };
  size_t width = 0;
  bool big = false;
  if (starts("\xFF\xFE\0\0"sv))
    width = 4;
  else if (starts("\0\0\xFE\xFF"sv))
    width = 4, big = true;
  else if (starts("\xFF\xFE"sv))
    width = 2;
  else if (starts("\xFE\xFF"sv))
    width = 2, big = true;
  if (width == 0) return text;
  const char* name = width == 2 ? "UTF-16" : "UTF-32";
  encoding = name;
  const auto unit = [&](size_t i) {
    uint32_t v = 0;
    for (size_t k = 0; k < width; ++k) {
      const auto b = static_cast<unsigned char>(text[i + (big ? k : width - 1 - k)]);
      v = (v << 8) | b;
    }
    return v;
  };
  const std::string not_text = std::string("the file is not ") + name + " text";
  if (text.size() % width != 0) throw InputError({file, 0, 0}, not_text + " (it ends mid-character)");
  std::string out;
  for (size_t i = width; i < text.size(); i += width) {
    uint32_t cp = unit(i);
    if (width == 2 && cp >= 0xD800 && cp <= 0xDBFF && i + 2 < text.size() && unit(i + 2) >= 0xDC00 &&
        unit(i + 2) <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (unit(i + 2) - 0xDC00);
      i += 2;
    } else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      throw InputError({file, 0, 0}, not_text + " (an unpaired surrogate or a code point past U+10FFFF)");
    }
    AppendUtf8(cp, out);
  }
  return out;
}

// Configs are UTF-8 text (as JSON requires), without control characters other than tab and line
// ends (as YAML requires); anything else would reach names, messages and JSON output as broken
// text. Reported at the first bad byte, columns counted in characters.
void CheckUtf8(const std::string& file, const std::string& text, const std::string& encoding) {
  int line = 1;
  int column = 1;
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      static const char kHex[] = "0123456789ABCDEF";
      const std::string hex = {kHex[c >> 4], kHex[c & 0xf]};
      std::string what = "the file is not " + encoding + " text (";
      what.append(encoding == "UTF-8" ? "byte 0x" : "character U+00").append(hex).append(")");
      throw InputError({file, line, column}, what);
    }
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += n;
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The \uXXXX escape at `i` of `s`, or -1.
long UEscape(const std::string& s, size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  long v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const int h = HexValue(s[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

// yaml-cpp rejects a surrogate escape even when a pair spells one character ("\ud83d\ude00", how
// Python's json.dumps writes any emoji). In JSON each pair becomes its \U00XXXXXX escape, and the
// two characters saved go after the string's closing quote, where JSON ignores whitespace: every
// position outside the string stays where it was.
std::string JoinSurrogatePairs(const std::string& text) {
  if (text.find("\\u") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  size_t saved = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      out += c;
    } else if (c == '\\') {
      const long hi = UEscape(text, i), lo = UEscape(text, i + 6);
      if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) {
        char buf[11];
        std::snprintf(buf, sizeof buf, "\\U%08lX", 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
        out += buf;
        saved += 2;
        i += 11;
      } else if (i + 1 < text.size()) {
        out += text.substr(i, 2);
        ++i;
      }
    } else {
      out += c;
      if (c == '"') {
        in_string = false;
        out.append(saved, ' ');
        saved = 0;
      }
    }
  }
  return out;
}

// One document through `starts`; yaml-cpp's depth guard ("bad file") becomes a message that says
// what is wrong, at the value that holds the deep nesting (the outermost collection in the root).
bool HandleNextDocument(const std::string& file, YAML::Parser& parser, DocumentStarts& starts) {
  try {
    return parser.HandleNextDocument(starts);
  } catch (const YAML::DeepRecursion& e) {
    const YAML::Mark at = starts.open.size() > 1 ? starts.open[1] : e.mark;
    throw InputError({file, at.line + 1, at.column + 1}, "syntax error: values are nested too deeply");
  }
}

}  // namespace

YAML::Node ParseYaml(const std::string& file, const std::string& raw) {
  std::string encoding = "UTF-8";
  const std::string decoded = ToUtf8(file, raw, encoding);
  CheckUtf8(file, decoded, encoding);
  // yaml-cpp reads JSON as YAML flow style, which allows trailing commas, and names the line after
  // a missing comma or bracket; the scans name the mistake's own place.
  const bool json = file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0;
  if (json) CheckJsonSyntax(file, decoded);
  const std::string& text = json ? JoinSurrogatePairs(decoded) : decoded;
  try {
    // The documents are walked first: yaml-cpp 0.7's LoadAll never returns on a stray ',' after
    // (or instead of) a document (jbeder/yaml-cpp#1040), as its parser keeps yielding empty
    // documents without consuming it. A document whose node starts where the previous one did is that.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    while (HandleNextDocument(file, parser, starts)) {
      const std::vector<YAML::Mark>& m = starts.nodes;
      if (m.size() >= 2 && m[m.size() - 1].pos == m[m.size() - 2].pos) {
        const YAML::Mark& at = m.back();
        const size_t pos = static_cast<size_t>(at.pos);
        const bool printable = pos < text.size() && text[pos] > ' ' && text[pos] < 0x7f;
        throw InputError({file, at.line + 1, at.column + 1},
                         "syntax error: unexpected " + (printable ? "'" + text.substr(pos, 1) + "'" : "content"));
      }
    }
    if (starts.nodes.size() > 1) {
      const YAML::Mark& second = starts.nodes[1];
      throw InputError({file, second.line + 1, second.column + 1},
                       "a config holds one document, but a second one starts here");
    }
    // yaml-cpp ends a quoted scalar left open at the end of the file there, without complaint.
    for (const YAML::Mark& mark : starts.quoted) {
      const size_t node = static_cast<size_t>(mark.pos);
      const size_t quote = OpeningQuote(text, node);
      if (quote == std::string::npos || QuoteCloses(text, quote)) continue;
      const int column = mark.column + 1 + static_cast<int>(quote - node);  // anchors and tags share its line
      throw InputError({file, mark.line + 1, column},
                       "syntax error: " + std::string(text[quote] == '"' ? "'\"'" : "\"'\"") + " is never closed");
    }
    return starts.nodes.empty() ? YAML::Node() : YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // yaml-cpp notices an unclosed bracket or quote a line late: name its opening where a scan
    // finds one.
    if (!json) CheckYamlClosed(file, text);
    throw InputError({file, e.mark.line + 1, e.mark.column + 1}, "syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError({file, e.mark.line + 1, e.mark.column + 1}, "cannot read: " + e.msg);
  }
}

SourceLoc LocOf(const YAML::Node& node, const std::string& file) {
  YAML::Mark m = node.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string Describe(const YAML::Node& node) {
  if (node.IsSequence()) return node.size() == 0 ? "an empty list" : "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "nothing (null)";
  const std::string quoted = QuoteInput(node.Scalar());
  if (node.Tag() != "!" && !IsPlainScalar(node)) return "'" + quoted + "' tagged " + ShortTag(node.Tag());
  if (!IsPlainScalar(node)) return "the string \"" + quoted + "\"";
  return "'" + quoted + "'";
}

uint64_t ReadPositiveInt(const YAML::Node& node, const std::string& file, const std::string& what) {
  return ReadUint(node, file, what, 1);
}

ConfigMap::ConfigMap(const YAML::Node& node, std::string file, std::string context, std::vector<std::string> allowed,
                     UnknownKeys unknown)
    : node_(node), file_(std::move(file)), context_(std::move(context)) {
  if (!node.IsMap()) {
    throw InputError(LocOf(node, file_), "'" + context_ + "' must be a map of keys to values, got " + Describe(node));
  }
  // Every key, kept or not, for duplicates: hashed, so a map of n keys costs O(n), not O(n^2).
  std::unordered_map<std::string, YAML::Node> seen;
  seen.reserve(node.size());
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: the iterator's pair is a temporary proxy, so a reference into it would dangle.
    const YAML::Node key = it->first;
    if (!key.IsScalar()) throw InputError(LocOf(key, file_), "keys must be plain names");
    const std::string& name = key.Scalar();
    const auto [earlier, inserted] = seen.emplace(name, key);
    if (!inserted) {
      throw InputError(LocOf(key, file_),
                       "duplicate key '" + name + "' (first at " + PosText(LocOf(earlier->second, file_)) + ")");
    }
    bool known = std::find(allowed.begin(), allowed.end(), name) != allowed.end();
    if (unknown == UnknownKeys::kIgnore && (!known || it->second.IsNull())) continue;
    if (!known) {
      throw InputError(LocOf(key, file_),
                       "unknown key '" + QuoteInput(name) + "' in '" + context_ + "'" + DidYouMean(name, allowed));
    }
    entries_.emplace_back(name, it->second);
  }
}

bool ConfigMap::Has(const std::string& key) const {
  for (const auto& e : entries_) {
    if (e.first == key) return true;
  }
  return false;
}

const YAML::Node& ConfigMap::Get(const std::string& key) const {
  for (const auto& e : entries_) {
    if (e.first == key) return e.second;
  }
  throw InputError(MapLoc(), "missing required key '" + key + "' in '" + context_ + "'");
}

SourceLoc ConfigMap::Loc(const std::string& key) const { return LocOf(Get(key), file_); }

uint64_t ConfigMap::PositiveInt(const std::string& key) const { return ReadUint(Get(key), file_, key, 1); }

uint64_t ConfigMap::PositiveInt(const std::string& key, uint64_t fallback) const {
  return Has(key) ? PositiveInt(key) : fallback;
}

uint64_t ConfigMap::NonNegativeInt(const std::string& key, uint64_t fallback) const {
  return Has(key) ? ReadUint(Get(key), file_, key, 0) : fallback;
}

bool ConfigMap::Bool(const std::string& key, bool fallback) const {
  if (!Has(key)) return fallback;
  const YAML::Node& v = Get(key);
  if (IsPlainScalar(v) && v.Scalar() == "true") return true;
  if (IsPlainScalar(v) && v.Scalar() == "false") return false;
  throw InputError(LocOf(v, file_), "'" + key + "' must be true or false, got " + Describe(v));
}

std::string ConfigMap::String(const std::string& key, const std::string& fallback) const {
  if (!Has(key)) return fallback;
  const YAML::Node& v = Get(key);
  if (!v.IsScalar()) {
    throw InputError(LocOf(v, file_), "'" + key + "' must be a string, got " + Describe(v));
  }
  return v.Scalar();
}

size_t ConfigMap::Choice(const std::string& key, const std::vector<std::string>& options, size_t fallback) const {
  if (!Has(key)) return fallback;
  const YAML::Node& v = Get(key);
  std::string list;
  for (const std::string& o : options) list += (list.empty() ? "" : ", ") + o;
  if (v.IsScalar()) {
    for (size_t i = 0; i < options.size(); ++i) {
      if (options[i] == v.Scalar()) return i;
    }
  }
  std::string hint = v.IsScalar() ? DidYouMean(v.Scalar(), options) : "";
  throw InputError(LocOf(v, file_), "'" + key + "' must be one of " + list + ", got " + Describe(v) + hint);
}

double ConfigMap::Probability(const std::string& key, double fallback) const {
  if (!Has(key)) return fallback;
  const YAML::Node& v = Get(key);
  const double p = ReadDouble(IsPlainScalar(v) ? v.Scalar() : "").value_or(-1);
  if (p < 0 || p >= 1) {
    throw InputError(LocOf(v, file_), "'" + key + "' must be a probability in [0, 1), got " + Describe(v));
  }
  return p;
}

double ConfigMap::Fraction(const std::string& key, double fallback) const {
  if (!Has(key)) return fallback;
  const YAML::Node& v = Get(key);
  const double x = ReadDouble(IsPlainScalar(v) ? v.Scalar() : "").value_or(-1);
  if (x <= 0 || x > 1) {
    throw InputError(LocOf(v, file_), "'" + key + "' must be a fraction in (0, 1], got " + Describe(v));
  }
  return x;
}

std::pair<uint64_t, uint64_t> ConfigMap::IntPair(const std::string& key, uint64_t fallback, uint64_t min) const {
  if (!Has(key)) return {fallback, fallback};
  const YAML::Node& v = Get(key);
  if (v.IsSequence()) {
    if (v.size() != 2) {
      throw InputError(LocOf(v, file_),
                       "'" + key + "' must be a number or [height, width], got a list of " + std::to_string(v.size()));
    }
    return {ReadUint(v[0], file_, key, min), ReadUint(v[1], file_, key, min)};
  }
  uint64_t n = ReadUint(v, file_, key, min);
  return {n, n};
}

}  // namespace tally
