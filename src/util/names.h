// Enum ↔ name tables: each enum has one `{value, "name"}` table (EnumNames<E>::kTable, beside the
// enum or in config/names.h), which drives parsing with suggestions, Name(), help and completion.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/spellcheck.h"

namespace tally {

template <typename E>
struct NameEntry {
  E value;
  std::string_view name;
};

// Specialize with `static constexpr NameEntry<E> kTable[]` (canonical names, in the order help
// lists them) and optionally `kAliases[]` (other accepted spellings; never printed).
template <typename E>
struct EnumNames;

template <typename E>
concept HasAliases = requires {
  EnumNames<E>::kAliases;
};

template <typename E>
constexpr std::span<const NameEntry<E>> NameTable() {
  return EnumNames<E>::kTable;
}

// The canonical name of `value`.
template <typename E>
constexpr const char* Name(E value) {
  for (const NameEntry<E>& e : NameTable<E>()) {
    if (e.value == value) return e.name.data();  // the tables hold string literals: NUL-terminated
  }
  return "?";
}

// The canonical names, in table order.
template <typename E>
std::vector<std::string> NameList() {
  std::vector<std::string> names;
  for (const NameEntry<E>& e : NameTable<E>()) names.emplace_back(e.name);
  return names;
}

// "a, b, c" (or with another separator, such as " | " for help and " " for completion).
template <typename E>
std::string JoinNames(std::string_view separator = ", ") {
  std::string out;
  for (const NameEntry<E>& e : NameTable<E>()) {
    if (!out.empty()) out += separator;
    out += e.name;
  }
  return out;
}

// The value named `text` (a canonical name or an alias), if any.
template <typename E>
std::optional<E> FindName(std::string_view text) {
  for (const NameEntry<E>& e : NameTable<E>()) {
    if (e.name == text) return e.value;
  }
  if constexpr (HasAliases<E>) {
    for (const NameEntry<E>& e : EnumNames<E>::kAliases) {
      if (e.name == text) return e.value;
    }
  }
  return std::nullopt;
}

// The value named `text`, restricted to `allowed` when it is not empty. Otherwise an InputError:
// "FLAG: unknown NOUN 'text' (did you mean 'x'?); use one of a, b, c".
template <typename E>
E ParseName(std::string_view text, std::string_view flag, const std::vector<E>& allowed = {},
            std::string_view noun = "value") {
  auto is_allowed = [&allowed](E value) {
    bool ok = allowed.empty();
    for (E a : allowed) ok = ok || a == value;
    return ok;
  };
  // Found first, the list of names only for the error: a sweep parses names at every point.
  if (std::optional<E> found = FindName<E>(text); found && is_allowed(*found)) return *found;
  std::vector<std::string> names;
  for (const NameEntry<E>& e : NameTable<E>()) {
    if (is_allowed(e.value)) names.emplace_back(e.name);
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError(std::string(flag) + ": unknown " + std::string(noun) + " '" + std::string(text) + "'" +
                   DidYouMean(text, names) + "; use one of " + list);
}

}  // namespace tally
