// Small text helpers: ASCII lower case, a count's digits, and text bound for a terminal (control
// characters made visible, so that a name from a config or a path cannot move the cursor, clear
// the screen or recolour what follows).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tally {

// `text` with ASCII A-Z lowered (names, aliases and dtypes compare in any case); other bytes as is.
std::string Lower(std::string_view text);

// The decimal digits of `n`, short for the numbers spelled out in formulas and messages.
inline std::string N(uint64_t n) { return std::to_string(n); }

// `text` with C0 controls, DEL and C1 controls (U+0080..U+009F, which some terminals obey like ESC)
// written as escapes: \n, \r, \t, \x1B, \u009B; a byte that is not part of valid UTF-8 becomes \xHH,
// so the result is valid UTF-8. Everything else, backslashes included, is unchanged.
// With `keep_breaks`, tab, line feed and carriage return stay (CSV quotes them, per RFC 4180).
std::string EscapeControl(std::string_view text, bool keep_breaks = false);

}  // namespace tally
