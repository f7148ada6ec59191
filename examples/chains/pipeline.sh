#!/usr/bin/env bash
# A three-step chain: extract → two transforms in parallel → load (which waits for both), and
# an alert if extract fails. Script jobs, so the node's built-in runner runs them: nothing else
# to start. Creates the scripts and jobs (run again: uploads new versions of the scripts and
# replaces the jobs it made before), triggers the chain with params, waits for it, and prints
# its tree (GET /api/v1/chains/{chain_id}).
#
#   KEY=$KEY APP=billing ./examples/chains/pipeline.sh   # $KEY from the README's quickstart; SUNDIAL_URL defaults to http://127.0.0.1:7700
set -euo pipefail
URL=${SUNDIAL_URL:-http://127.0.0.1:7700}
APP=${APP:-billing}
DIR=$(cd "$(dirname "$0")" && pwd)
api() { # METHOD PATH [BODY]: the JSON answer; fails on an HTTP error, printing it
  curl -sS --fail-with-body -X "$1" "$URL$2" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' ${3:+-d "$3"}
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

exists() { # PATH: whether it answers 200
  [ "$(curl -sS -o /dev/null -w '%{http_code}' "$URL$1" -H "Authorization: Bearer $KEY")" = 200 ]
}
# A job by name: replaced when a job of that name exists (from an earlier run), else created; its id.
job() { # NAME BODY
  local id
  id=$(api GET "/api/v1/jobs?name=$1" | python3 -c 'import json,sys; print(next((j["id"] for j in json.load(sys.stdin)["items"]), ""))')
  if [ -n "$id" ]; then api PUT "/api/v1/jobs/$id" "$2" | field id; else api POST /api/v1/jobs "$2" | field id; fi
}

for s in extract transform load alert; do
  source=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$DIR/$s.py")
  if exists "/api/v1/scripts/$s"; then
    api POST "/api/v1/scripts/$s/versions" "{\"source\": $source}" >/dev/null
  else
    api POST /api/v1/scripts "{\"name\": \"$s\", \"runtime\": \"python\", \"source\": $source}" >/dev/null
  fi
done
manual='"schedule": {"kind": "manual"}'
LOAD=$(job load "{\"name\": \"load\", \"app\": \"$APP\", \"script\": \"load\", $manual}")
EU=$(job transform-eu "{\"name\": \"transform-eu\", \"app\": \"$APP\", \"script\": \"transform\", $manual,
  \"params\": {\"region\": \"eu\", \"rate\": 1.08}, \"children\": [\"$LOAD\"]}")
US=$(job transform-us "{\"name\": \"transform-us\", \"app\": \"$APP\", \"script\": \"transform\", $manual,
  \"params\": {\"region\": \"us\", \"rate\": 1.0}, \"children\": [\"$LOAD\"]}")
ALERT=$(job alert "{\"name\": \"alert\", \"app\": \"$APP\", \"script\": \"alert\", $manual}")
EXTRACT=$(job extract "{\"name\": \"extract\", \"app\": \"$APP\", \"script\": \"extract\",
  \"schedule\": {\"kind\": \"cron\", \"expression\": \"0 30 2 * * *\", \"timezone\": \"Europe/Berlin\"},
  \"children\": [\"$EU\", \"$US\", {\"job\": \"$ALERT\", \"on\": \"on_failure\"}]}")

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
