#!/usr/bin/env bash
# Vendor the web UI's third-party assets from the npm registry into the package, so that neither
# CI nor users need npm: the built files are committed. Run it again after changing a version.
#
#   scripts/vendor_ui.sh            # fetch the pinned versions below
#
# Cytoscape.js (MIT) draws the graph explorer and the Cypher console's graph view.
set -euo pipefail

CYTOSCAPE_VERSION="3.35.0"

here="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$here/src/evigraph/api/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
tarball="$(npm pack --silent "cytoscape@$CYTOSCAPE_VERSION")"
tar -xzf "$tarball"
mkdir -p "$vendor"
cp package/dist/cytoscape.min.js "$vendor/cytoscape.min.js"
cp package/LICENSE "$vendor/cytoscape.LICENSE"
echo "cytoscape $CYTOSCAPE_VERSION ($(sha256sum "$tarball" | cut -c1-16)…) -> $vendor"
