#!/usr/bin/env bash
# make demo's last step: the team service. pin serve on a free loopback port with a SQLite
# file in demo-out/, the demo lock pushed and assigned to the group "demo", the three fleet
# nodes of the demo reporting their snapshots (node03 drifted), then what the service says.
# Usage: examples/serve/demo.sh BIN_DIR OUT_DIR
set -euo pipefail
BIN=$1 OUT=$2
DB="sqlite:///$(cd "$OUT" && pwd)/serve.db"
rm -f "$OUT/serve.db" "$OUT/serve.log"
umask 077
"$BIN/pin" serve token create --scope publish --db "$DB" > "$OUT/publish.token" 2>/dev/null
"$BIN/pin" serve token create --scope report --db "$DB" > "$OUT/report.token" 2>/dev/null
"$BIN/pin" serve --port 0 --db "$DB" > "$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 200); do grep -q "listening on" "$OUT/serve.log" && break; sleep 0.05; done
URL=$(sed -n 's/^pin serve: listening on \(http[^ ]*\) .*/\1/p' "$OUT/serve.log")
[ -n "$URL" ] || { echo "pin serve did not start:" >&2; cat "$OUT/serve.log" >&2; exit 1; }
echo "pin serve is listening on $URL (database $DB)"
echo "pin lock push: $(PIN_TOKEN_FILE="$OUT/publish.token" \
  "$BIN/pin" lock push "$OUT/mi300x.lock" --to "$URL" --assign-group demo)"
export PIN_TOKEN_FILE="$OUT/report.token"  # the nodes report with a report token
for node in node01 node02 node03; do
  "$BIN/pin" verify "$OUT/mi300x.lock" --host "$OUT/fleet/$node.json" --report-to "$URL" \
    --report-host "$node" --report-group demo | tail -n 1 || true
done
echo "GET $URL/api/v1/fleet/summary:"
"$BIN/python" -c 'import json, sys, urllib.request
print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/fleet/summary")), indent=1))' "$URL"
echo "The dashboard was at $URL/ (pin serve stops now; run it yourself to browse)."
