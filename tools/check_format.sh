#!/usr/bin/env bash
# Fails when a C++ file of the repository is off the style of .clang-format (Debian's
# clang-format 14). Fix with: clang-format -i $(git ls-files '*.cpp' '*.hpp')
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
  echo "check_format: clang-format is not installed (apt-get install clang-format)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find hw sim ops models tools tests -name '*.[ch]pp')
"$format" --dry-run -Werror "${files[@]}"
echo "check_format: ${#files[@]} files follow .clang-format"
