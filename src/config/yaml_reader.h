// Typed, position-aware reading of config maps over yaml-cpp (which also reads JSON).
// Every error names file:line:col; yaml-cpp's silent gaps (duplicate keys, null marks) are closed here.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace tally {

// Parses `raw` (YAML or JSON, UTF-8 or UTF-16/32 with a byte order mark) into a node; syntax errors
// become InputError at their position.
YAML::Node ParseYaml(const std::string& file, const std::string& raw);

SourceLoc LocOf(const YAML::Node& node, const std::string& file);

// "a list", "a map", "'12.5'", the string "12": how a value is named in error messages.
std::string Describe(const YAML::Node& node);

// A plain (unquoted) scalar that reads as a whole number in [1, 2^63); `what` names it in errors.
uint64_t ReadPositiveInt(const YAML::Node& node, const std::string& file, const std::string& what);

// What a ConfigMap does with keys outside its list: tally's own configs reject them; Hugging Face
// config.json files carry dozens tally has no use for, and a null there means "unset".
enum class UnknownKeys { kReject, kIgnore };

// A config map whose keys have been checked: no duplicates, only `allowed` keys (or any, ignored).
// NOLINTNEXTLINE(bugprone-exception-escape): the implicit move assignment copies YAML::Node, which may throw.
class ConfigMap {
 public:
  ConfigMap(const YAML::Node& node, std::string file, std::string context, std::vector<std::string> allowed,
            UnknownKeys unknown = UnknownKeys::kReject);

  bool Has(const std::string& key) const;
  const YAML::Node& Get(const std::string& key) const;  // throws "missing required key"
  SourceLoc Loc(const std::string& key) const;          // the value's position
  SourceLoc MapLoc() const { return LocOf(node_, file_); }
  const std::string& file() const { return file_; }

  uint64_t PositiveInt(const std::string& key) const;
  uint64_t PositiveInt(const std::string& key, uint64_t fallback) const;
  uint64_t NonNegativeInt(const std::string& key, uint64_t fallback) const;
  bool Bool(const std::string& key, bool fallback) const;
  std::string String(const std::string& key, const std::string& fallback) const;
  // The index of the value in `options`; unknown values get a suggestion.
  size_t Choice(const std::string& key, const std::vector<std::string>& options, size_t fallback) const;
  // A number in [0, 1).
  double Probability(const std::string& key, double fallback) const;
  // A number in (0, 1].
  double Fraction(const std::string& key, double fallback) const;
  // An integer or a [height, width] pair, each >= `min`.
  std::pair<uint64_t, uint64_t> IntPair(const std::string& key, uint64_t fallback, uint64_t min) const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string context_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;  // key text and value, in file order
};

}  // namespace tally
