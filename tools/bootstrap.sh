#!/usr/bin/env bash
# Installs what g5sim needs from Debian packages (only the missing ones: safe to re-run), builds,
# then runs the default simulation, the whole test suite, or its quick tier.
#   bash tools/bootstrap.sh run    # install; build the g5sim program alone, then `g5sim run`
#   bash tools/bootstrap.sh test   # install; format and function-size checks; build with -Werror
#                                  # and run every test (ctest, then pytest on Debian's
#                                  # /usr/bin/python3); then one clang tree with ASan, UBSan and
#                                  # the fuzzers' coverage (build-asan/): the unit tests under the
#                                  # sanitizers and a smoke run of every libFuzzer harness
#   bash tools/bootstrap.sh check  # the quick tier while developing: build, then the tests not
#                                  # labelled slow (ctest -LE slow, pytest -m "not slow")
#   bash tools/bootstrap.sh build  # install and build
# ccache caches every compile (a rebuild after a small change takes seconds).
set -euo pipefail
mode="${1:-run}"
case "$mode" in run|test|check|build) ;; *) echo "usage: $0 run|test|check|build" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build ccache universal-ctags
          libboost-graph-dev libyaml-cpp-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
          libeigen3-dev libbenchmark-dev clang-format clang libclang-rt-14-dev
          python3 python3-dev pybind11-dev python3-pytest python3-pytest-xdist python3-pandas
          python3-matplotlib python3-dask python3-distributed)
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
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
werror=OFF
case "$mode" in test|check) werror=ON ;; esac
if [ "$mode" = test ]; then
  bash tools/check_format.sh
  /usr/bin/python3 tools/check_function_size.py   # no function outside tests over 100 lines
fi
# Unity builds (CMakeLists.txt, G5SIM_UNITY): half the compile time; ccache caches their batches.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DG5SIM_UNITY=ON -DG5SIM_WARNINGS_AS_ERRORS=$werror \
      "${launcher[@]}" >/dev/null

case "$mode" in
  run)
    # The one program first: `g5sim run` does not wait for the tests and benchmarks to compile.
    cmake --build build -j "$jobs" --target g5sim_cli
    ./build/tools/g5sim run
    ;;
  build) cmake --build build -j "$jobs" ;;
  check)
    cmake --build build -j "$jobs"
    ctest --test-dir build --output-on-failure -j "$jobs" -LE slow
    PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -p no:cacheprovider -q -m "not slow" python/tests
    ;;
  test)
    cmake --build build -j "$jobs"
    # Every test once in the Release tree: unit, slow (the MAPE ratchet, the replay baselines),
    # the command line's goldens, the layering probes, installs and outputs.
    ctest --test-dir build --output-on-failure -j "$jobs"
    # The Python module's suite, on Debian's interpreter (another python3 may come first on PATH),
    # one pytest-xdist worker a core: most of its time is the README's commands, one process each.
    PYTHONPATH="$PWD/build/python" /usr/bin/python3 -m pytest -p no:cacheprovider -q -n "$jobs" python/tests
    # One clang tree for both: every target with ASan + UBSan (any report fails) and the fuzzers'
    # coverage; -O1 with line tables keeps its reports readable and its build short.
    CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DG5SIM_FUZZ=ON -DG5SIM_UNITY=ON \
          -DG5SIM_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
    cmake --build build-asan -j "$jobs" --target g5sim_tests fuzz_harnesses
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit
    G5SIM_FUZZ_TREE="$PWD/build-asan" bash tests/fuzz/run_fuzz.sh smoke
    ;;
esac
