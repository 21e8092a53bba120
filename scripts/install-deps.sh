#!/usr/bin/env bash
# Installs the Debian packages tilefs needs to build, test and run (Debian
# 12 "bookworm" or newer). Does nothing when they are all present. Works
# unattended: as root (CI), or through sudo for a normal user.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config                       # toolchain
  dpkg-dev                                               # cpack -G DEB (dpkg-shlibdeps)
  libzstd-dev zlib1g-dev liblz4-dev libbz2-dev           # codecs of the filters
  libssl-dev libwebp-dev                                 # AES/MD5/SHA-256, WebP
  libcriterion-dev                                       # unit tests
  libpng-dev                                             # .png slices, previews
  pcmanfm xvfb imagemagick                               # thumbnail test (a file manager)
  libjson-c-dev                                          # schema JSON
  libfuse3-dev fuse3                                     # the daemon
  python3 python3-numpy python3-pandas                   # corpus check, examples
  rsync vim                                              # tests of writing
  libglib2.0-bin file                                    # gio copy, file: tests of copies
  hyperfine clang                                        # benchmarks, fuzzing
  libcurl4-openssl-dev libexpat1-dev                     # the S3 backend
  ceph-mon ceph-osd radosgw ceph-common s3cmd            # S3 server in the tests
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages are installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  as_root=(sudo -n)
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  --no-install-recommends "${missing[@]}" </dev/null
