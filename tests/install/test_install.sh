#!/usr/bin/env bash
# `cmake --install` into a prefix, the prefix moved, then from the moved tree (the build and the
# source tree out of the picture): the g5sim program with no arguments, a consumer project's
# find_package(g5sim), and the Python module.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/prefix"   # a relocated install must still find its configs
prefix="$work/prefix"
for f in bin/g5sim include/g5sim/g5sim.hpp include/g5sim/config_error.hpp include/g5sim/serve.hpp \
         include/g5sim/knobs.hpp include/g5sim/search.hpp include/g5sim/sensitivity.hpp include/g5sim/solve.hpp \
         include/g5sim/design.hpp lib/cmake/g5sim/g5simConfig.cmake \
         share/g5sim/configs/chips/sg2262.yaml share/g5sim/configs/models/deepseek-v3.yaml; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done
ls "$prefix"/lib/libg5sim.so* >/dev/null

# The program, run from elsewhere with no arguments: the default step on the installed configs,
# the same numbers as the build tree's.
cd "$work"
"$prefix/bin/g5sim" > installed.txt
"$build/tools/g5sim" > built.txt
grep -q "^total_ns " installed.txt
grep -v "^chip\|^model" installed.txt | diff - <(grep -v "^chip\|^model" built.txt)
"$prefix/bin/g5sim" --version | grep -q "^g5sim [0-9]*\.[0-9]*\.[0-9]*$"
"$prefix/bin/g5sim" check | grep -q "$prefix/share/g5sim/configs/chips/sg2262.yaml"

# A consumer project: find_package(g5sim CONFIG REQUIRED) + target_link_libraries(g5sim::g5sim).
cmake -S "$source_dir/tests/install/consumer" -B consumer-build -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build consumer-build >/dev/null
./consumer-build/consumer > consumer.txt
grep -qx "kv_cache_read_bytes 4718592" consumer.txt
grep -qx "matmul_unique_bytes 28672" consumer.txt
grep -qx "error_field hidden_size line 1" consumer.txt
grep -qx "serve_output_tokens 3" consumer.txt
grep -qx "knob_error block_tokens: expected a whole number 1..65536, got '0'" consumer.txt
grep -qx "search_grid 3" consumer.txt
grep -qx "version $("$prefix/bin/g5sim" --version | cut -d' ' -f2)" consumer.txt

# The Python module, when built: imported from the installed tree, finding the installed configs.
if [ -d "$build/python/g5sim" ]; then
  site="$prefix/lib/python3/dist-packages"
  PYTHONPATH="$site" /usr/bin/python3 - "$prefix" <<'PY'
import sys
import g5sim
prefix = sys.argv[1]
assert g5sim.__file__.startswith(prefix), g5sim.__file__
assert g5sim.data_dir() == prefix + "/share/g5sim", g5sim.data_dir()
r = g5sim.simulate(g5sim.shipped_chip_path(), g5sim.shipped_model_path(), scope="block", batch=1, tp=1, ep=1, dp=1)
assert r.op("kv_cache_read").hbm_bytes == 4718592
PY
  PYTHONPATH="$site" /usr/bin/python3 -m g5sim --version | grep -q "^g5sim "
fi
echo "install: ok ($prefix)"
