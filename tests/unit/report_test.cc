// The report tree: a non-finite number is refused as tally's own bug (issue 20).
#include "report/report.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tally {

TEST_CASE("report: a non-finite number is refused as tally's own bug") {
  Report r;
  CHECK_THROWS_AS(r.Set("x", "x", std::numeric_limits<double>::infinity(), Unit::kRatio), std::logic_error);
  CHECK_THROWS_AS(r.Set("y", "y", std::nan(""), Unit::kRatio), std::logic_error);
  r.Group("g");
  CHECK_THROWS_AS(r.Set("g.z", "z", -std::numeric_limits<double>::infinity(), Unit::kRatio), std::logic_error);
  CHECK_NOTHROW(r.Set("finite", "finite", 1e308, Unit::kRatio));
}

}  // namespace tally
