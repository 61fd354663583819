// Names of choices read without regard to case ("BF16" is bf16, "AdamW" adamw): every enum's name
// table is lower case (names_test checks it), so lowering the text finds the one name it can mean.
// Apart from util/names.h, so that the parsers that read a person's text include it, not the
// hundreds of files that include the tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/names.h"
#include "util/text.h"

namespace tally {

// ParseName, ignoring case; the error quotes the text as written.
template <typename E>
E ParseNameAnyCase(std::string_view text, std::string_view flag, const std::vector<E>& allowed = {},
                   std::string_view noun = "value") {
  if (!FindName<E>(text)) {
    const std::string lower = Lower(text);
    if (FindName<E>(lower)) return ParseName<E>(lower, flag, allowed, noun);
  }
  return ParseName<E>(text, flag, allowed, noun);
}

// FindName, ignoring case.
template <typename E>
std::optional<E> FindNameAnyCase(std::string_view text) {
  if (std::optional<E> found = FindName<E>(text)) return found;
  return FindName<E>(Lower(text));
}

}  // namespace tally
