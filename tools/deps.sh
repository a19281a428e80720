#!/bin/sh
# deps.sh PACKAGE... — installs the Debian packages that are missing, with
# apt-get when run as root; otherwise prints the exact command and fails.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q --no-install-recommends $missing && exit 0
    echo "deps: apt-get failed" >&2
    exit 1
fi
echo "deps: missing Debian packages:$missing" >&2
echo "deps: run this, then try again:" >&2
echo "  sudo apt-get install -y$missing" >&2
exit 1
