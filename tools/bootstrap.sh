#!/usr/bin/env bash
# Installs what g5sim needs from Debian packages (only the missing ones: safe to re-run), builds,
# then either runs the default simulation or the test suite.
#   bash tools/bootstrap.sh run    # install, build, `g5sim run`
#   bash tools/bootstrap.sh test   # install; format check; build with -Werror and run every test;
#                                  # then the whole suite again under ASan + UBSan (build-asan/);
#                                  # then the Python suite (pytest, Debian's /usr/bin/python3);
#                                  # then a fuzz smoke run of every libFuzzer harness (build-fuzz/)
set -euo pipefail
mode="${1:-run}"
case "$mode" in run|test|build) ;; *) echo "usage: $0 run|test|build" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build
          libboost-graph-dev libyaml-cpp-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
          libeigen3-dev libbenchmark-dev clang-format clang libclang-rt-14-dev
          python3 python3-dev pybind11-dev python3-pytest python3-pandas python3-matplotlib
          python3-dask python3-distributed)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "bootstrap: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs="$(nproc)"
if [ "$mode" = test ]; then
  bash tools/check_format.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DG5SIM_WARNINGS_AS_ERRORS=ON >/dev/null
else
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j "$jobs"

case "$mode" in
  run) ./build/tools/g5sim run ;;
  test)
    ctest --test-dir build --output-on-failure -j "$jobs"
    # The Python module's suite, on Debian's interpreter (another python3 may come first on PATH).
    PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -p no:cacheprovider python/tests
    # The same suite with AddressSanitizer and UndefinedBehaviorSanitizer: any report fails it.
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG5SIM_SANITIZE=ON \
          -DG5SIM_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build build-asan -j "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j "$jobs"
    # The libFuzzer harnesses (clang), each for a fixed number of executions on the seed corpora.
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG5SIM_FUZZ=ON \
          -DG5SIM_BUILD_TESTS=OFF -DG5SIM_BUILD_BENCHMARKS=OFF >/dev/null
    cmake --build build-fuzz -j "$jobs" --target fuzz_harnesses
    bash tests/fuzz/run_fuzz.sh smoke
    ;;
  build) ;;
esac
