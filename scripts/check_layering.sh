#!/usr/bin/env bash
# limiter/ depends on the standard library only: no Boost, yaml-cpp, spdlog, hiredis, nor any
# other module of this project.
set -euo pipefail
cd "$(dirname "$0")/.."

violations=$(grep -nE '^\s*#\s*include\s*("|<(boost|asio|yaml-cpp|spdlog|hiredis|fmt)/)' \
  limiter/*.hpp limiter/*.cpp | grep -vE '#\s*include\s*"limiter/' || true)
if [ -n "$violations" ]; then
  echo "limiter/ must include only the standard library and limiter/ headers:" >&2
  echo "$violations" >&2
  exit 1
fi
