// Reading a config file: a FIFO, a symbolic link loop and a directory are refused at once (issue 20).
#include "config/load_config.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "unit/test_util.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::SecondsSince;

}  // namespace

TEST_CASE("load config: a FIFO, a symbolic link loop and a directory are refused at once") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tally-fifo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(
      LoadModelFile(fifo),
      (fifo + ": error: is not a regular file (a FIFO, a device or a socket); configs are read from files").c_str(),
      InputError);
  CHECK(SecondsSince(start) < 5.0);
  std::filesystem::create_symlink("b.yaml", dir / "a.yaml");
  std::filesystem::create_symlink("a.yaml", dir / "b.yaml");
  const std::string loop = (dir / "a.yaml").string();
  CHECK_THROWS_WITH_AS(LoadModelFile(loop), (loop + ": error: too many symbolic links (is there a link loop?)").c_str(),
                       InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace tally
