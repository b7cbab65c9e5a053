#!/bin/sh
# Validates every golden domain XML against libvirt's own RelaxNG schema.
# Usage: validate_domxml.sh <golden dir> <mustwork.sh>
set -eu
. "$2"
command -v virt-xml-validate >/dev/null || skip "virt-xml-validate missing (package libvirt-clients)"
n=0
for f in "$1"/*.xml; do
    virt-xml-validate "$f" domain
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no golden XML found in $1" >&2; exit 1; }
