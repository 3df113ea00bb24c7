#!/usr/bin/env bash
# Gathers what the runtime image holds into ROOT: the given binaries in /usr/local/bin, every
# shared library they link (at the path the loader looks for it), a user and group for the
# process to run as, and the name-service switch the resolver reads.
#   collect-runtime.sh ROOT BINARY...
set -euo pipefail
root=$1
shift
mkdir -p "$root/usr/local/bin" "$root/etc"
for binary in "$@"; do
  install -m 755 "$binary" "$root/usr/local/bin/"
  # ldd prints "name => /path (addr)" per library, and the loader as "/lib64/ld-... (addr)".
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
    while read -r library; do
      mkdir -p "$root$(dirname "$library")"
      cp -L "$library" "$root$library"
    done
done
echo "sluice:x:65532:65532:sluice:/nonexistent:/usr/sbin/nologin" >"$root/etc/passwd"
echo "sluice:x:65532:" >"$root/etc/group"
echo "hosts: files dns" >"$root/etc/nsswitch.conf"
