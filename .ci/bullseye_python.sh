#!/usr/bin/env bash
# Install Debian bullseye's Python 3.9 (the newest Python the Ascend TF 2.6.5 adapter supports) on a
# bookworm machine, touching nothing else: the bullseye source lives in its own file, pinned low so
# no bookworm package is replaced, for the length of this install only (removed on exit).
# Debian's python3.9 has no ensurepip (the venv is made with virtualenv) and keeps distutils in
# python3-distutils=3.9.2-1. apt cannot install that package here: it Depends on python3 (<< 3.10)
# and would downgrade bookworm's python3. It only adds files under /usr/lib/python3.9/distutils/
# that no installed package owns, so we unpack exactly those (pip on Python < 3.10 needs them).
# Idempotent: does nothing once /usr/bin/python3.9 imports distutils.cmd from its own stdlib.
set -euo pipefail

ready() {
    [ -x /usr/bin/python3.9 ] && [ -f /usr/lib/python3.9/distutils/cmd.py ]
}
if ready; then exit 0; fi

sudo_cmd=""
if [ "$(id -u)" != "0" ]; then sudo_cmd="sudo"; fi
src=/etc/apt/sources.list.d/npu-jupyter-bullseye.sources
pin=/etc/apt/preferences.d/npu-jupyter-bullseye
tmp=$(mktemp -d)

cleanup() {
    rm -rf "$tmp"
    $sudo_cmd rm -f "$src" "$pin"
    $sudo_cmd apt-get update -qq || true
}
trap cleanup EXIT

$sudo_cmd tee "$src" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bullseye
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
# Priority 100: a bullseye package is taken only when bookworm has none of that name (python3.9 and
# its own libraries: libssl1.1, libffi7, libmpdec3); nothing installed from bookworm is replaced.
$sudo_cmd tee "$pin" >/dev/null <<'PIN'
Package: *
Pin: release n=bullseye
Pin-Priority: 100
PIN

export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends python3.9 >/dev/null
(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "python3-distutils=3.9.2-1")
dpkg-deb -x "$tmp"/python3-distutils_3.9.2-1_all.deb "$tmp/root"
$sudo_cmd cp -rn "$tmp/root/usr/lib/python3.9/distutils/." /usr/lib/python3.9/distutils/
ready
/usr/bin/python3.9 -c "import sys, distutils.cmd; print('python3.9 ready:', sys.version.split()[0])"
