#!/usr/bin/env bash
# Gathers what the runtime image holds into ROOT: the given binaries in /usr/local/bin, every
# shared library they link (at the path the loader looks for it), a user and group for the
# process to run as, the name-service switch the resolver reads, and the CA bundle.
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

# The CA bundle, for https:// upstreams verified against the system's CAs (upstream_tls without
# `ca`): Debian's (package ca-certificates, which the build stage installs), at its Debian path,
# and linked as OpenSSL's default file, OPENSSLDIR/cert.pem, as Debian links it. About 220 kB.
bundle=/etc/ssl/certs/ca-certificates.crt
if [ -f "$bundle" ]; then
  openssldir=$(openssl version -d 2>/dev/null | sed -n 's/^OPENSSLDIR: "\(.*\)"$/\1/p' || true)
  openssldir=${openssldir:-/usr/lib/ssl}
  mkdir -p "$root$(dirname "$bundle")" "$root$openssldir"
  install -m 644 "$bundle" "$root$bundle"
  ln -sfn "$bundle" "$root$openssldir/cert.pem"
else
  echo "collect-runtime: no $bundle here (Debian's ca-certificates): the image has no CA" \
    "bundle, and https:// upstreams need upstream_tls.ca" >&2
fi

# The time zone database, for calendar windows in a `timezone` (SPEC §8): Debian's tzdata, at
# the path the date library reads, without its posix/ and right/ copies. About 1.3 MB.
zoneinfo=/usr/share/zoneinfo
if [ -f "$zoneinfo/tzdata.zi" ]; then
  mkdir -p "$root$zoneinfo"
  tar -C "$zoneinfo" --exclude=./posix --exclude=./right -cf - . | tar -C "$root$zoneinfo" -xf -
else
  echo "collect-runtime: no $zoneinfo here (Debian's tzdata): only UTC calendar windows" \
    "will work in the image" >&2
fi
