#!/usr/bin/env bash
# Formats the C++ sources with the pinned clang-format (Debian's clang-format-16).
# --check: change nothing, fail if a file is not formatted.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tracked and new (untracked, not ignored) files alike.
files=$(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp')
if [ "${1:-}" = "--check" ]; then
  # shellcheck disable=SC2086
  clang-format-16 --dry-run --Werror $files
else
  # shellcheck disable=SC2086
  clang-format-16 -i $files
fi
