#!/usr/bin/env bash
# A three-step chain: extract → two transforms in parallel → load (which waits for both), and
# an alert if extract fails. Script jobs, so the node's built-in runner runs them: nothing else
# to start. Creates the scripts and jobs, triggers the chain with params, waits for it, and
# prints its tree (GET /api/v1/chains/{chain_id}).
#
#   KEY=sk_… APP=billing ./examples/chains/pipeline.sh        # SUNDIAL_URL defaults to http://127.0.0.1:7700
set -euo pipefail
URL=${SUNDIAL_URL:-http://127.0.0.1:7700}
APP=${APP:-billing}
DIR=$(cd "$(dirname "$0")" && pwd)
api() { # METHOD PATH [BODY]: the JSON answer; fails on an HTTP error, printing it
  curl -sS --fail-with-body -X "$1" "$URL$2" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' ${3:+-d "$3"}
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

for s in extract transform load alert; do
  api POST /api/v1/scripts "$(python3 -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "runtime": "python", "source": open(sys.argv[2]).read()}))' "$s" "$DIR/$s.py")" >/dev/null
done
manual='"schedule": {"kind": "manual"}'
LOAD=$(api POST /api/v1/jobs "{\"name\": \"load\", \"app\": \"$APP\", \"script\": \"load\", $manual}" | field id)
EU=$(api POST /api/v1/jobs "{\"name\": \"transform-eu\", \"app\": \"$APP\", \"script\": \"transform\", $manual,
  \"params\": {\"region\": \"eu\", \"rate\": 1.08}, \"children\": [\"$LOAD\"]}" | field id)
US=$(api POST /api/v1/jobs "{\"name\": \"transform-us\", \"app\": \"$APP\", \"script\": \"transform\", $manual,
  \"params\": {\"region\": \"us\", \"rate\": 1.0}, \"children\": [\"$LOAD\"]}" | field id)
ALERT=$(api POST /api/v1/jobs "{\"name\": \"alert\", \"app\": \"$APP\", \"script\": \"alert\", $manual}" | field id)
EXTRACT=$(api POST /api/v1/jobs "{\"name\": \"extract\", \"app\": \"$APP\", \"script\": \"extract\",
  \"schedule\": {\"kind\": \"cron\", \"expression\": \"0 30 2 * * *\", \"timezone\": \"Europe/Berlin\"},
  \"children\": [\"$EU\", \"$US\", {\"job\": \"$ALERT\", \"on\": \"on_failure\"}]}" | field id)

# Run tonight's chain now, with params that flow down to every step.
CHAIN=$(api POST "/api/v1/jobs/$EXTRACT/trigger" '{"params": {"day": "2026-11-25"}}' | field id)
for _ in $(seq 1 300); do
  [ "$(api GET "/api/v1/chains/$CHAIN" | field state)" = done ] && [ "$(api GET "/api/v1/runs?chain_id=$CHAIN" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')" = 4 ] && break
  sleep 0.2
done
api GET "/api/v1/chains/$CHAIN" | python3 -c '
import json, sys
tree = json.load(sys.stdin)
print("chain", tree["chain_id"], tree["state"], "params", json.dumps(tree["params"]))
for r in tree["runs"]:
    job, state, trigger, out = r["job"], r["state"], r["trigger"], json.dumps(r["output"])
    print(f"  {job:<13} {state:<10} {trigger:<7} {out}")
name = {j["id"]: j["name"] for j in tree["jobs"]}
for e in tree["edges"]:
    src, dst, status = name[e["from_job"]], name[e["to_job"]], e["status"]
    why = "" if e["reason"] is None else " (%s: %s)" % (e["reason"], e["detail"])
    print(f"  {src} -> {dst}: {status}{why}")
'
