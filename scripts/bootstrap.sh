# Sourced by scripts/tally and scripts/test: installs missing Debian packages, then configures and
# builds into $TALLY_BUILD (build/ for scripts/tally, build-test/ for scripts/test) when sources
# changed. Everything it prints goes to stderr, so stdout stays the tool's own. Root is needed only
# to install packages: when every package is present, nothing here writes outside the checkout.

TALLY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TALLY_BUILD="${TALLY_BUILD:-$TALLY_ROOT/build}"
TALLY_PACKAGES=(cmake g++ libcli11-dev nlohmann-json3-dev libyaml-cpp-dev doctest-dev libopenblas-dev)

tally_missing_packages() {
  # One dpkg-query for all packages; anything not "install ok installed" is missing.
  local installed
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${TALLY_PACKAGES[@]}" 2>/dev/null |
    awk '$NF == "installed" { sub(/:.*/, "", $1); print $1 }')
  local p
  for p in "${TALLY_PACKAGES[@]}"; do
    grep -qx "$p" <<<"$installed" || echo "$p"
  done
}

tally_install_deps() {
  if ! command -v dpkg-query >/dev/null; then
    echo "tally: warning: not a Debian system; assuming ${TALLY_PACKAGES[*]} are installed" >&2
    return 0
  fi
  local missing
  missing=$(tally_missing_packages | tr '\n' ' ')
  missing=${missing% }
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    # Not root: name the packages and the one command that installs them, and stop.
    local install="apt-get update && apt-get install -y $missing"
    if command -v sudo >/dev/null; then
      echo "tally: error: missing Debian packages: $missing; install them with:" >&2
      echo "  sudo sh -c '$install'" >&2
    else
      echo "tally: error: missing Debian packages: $missing; as root (sudo is not installed), run:" >&2
      echo "  $install" >&2
    fi
    exit 2
  fi
  echo "tally: installing $missing" >&2
  # shellcheck disable=SC2086  # one word per package
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >&2; then
    echo "tally: error: apt-get could not install: $missing" >&2
    exit 2
  fi
}

# tally_build TARGET [CMAKE_ARGS...]: configure once, then build TARGET ("all" for everything).
tally_build() {
  local target=$1
  shift
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if [ ! -f "$TALLY_BUILD/CMakeCache.txt" ]; then
    cmake -S "$TALLY_ROOT" -B "$TALLY_BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >&2 || exit 2
  elif [ $# -gt 0 ]; then
    cmake "$TALLY_BUILD" "$@" >/dev/null || exit 2
  fi
  # Fast path: nothing changed since the binary was built, so skip even the build tool's check.
  if [ "$target" = tally ] && [ -x "$TALLY_BUILD/tally" ] && [ -z "$(find "$TALLY_ROOT/src" \
      "$TALLY_ROOT/configs" "$TALLY_ROOT/cmake" "$TALLY_ROOT/CMakeLists.txt" -newer "$TALLY_BUILD/tally" \
      -print -quit)" ]; then
    return 0
  fi
  cmake --build "$TALLY_BUILD" --target "$target" -j "$(nproc)" >&2 || exit 2
}
