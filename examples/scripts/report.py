# A Python job (CPython 3.12 inside the wasm sandbox: no network, no host files).
# argv[1] is the run's params (JSON), argv[2] the shard ("index/total"), argv[3] the
# parent run's output (JSON). Every printed line goes to the run's log; the last one,
# if it is JSON, is the run's output (passed on to child jobs).
import json
import sys

params = json.loads(sys.argv[1])
rows = [{"region": r, "total": len(r) * 100} for r in params.get("regions", ["eu", "us"])]
for row in rows:
    print(f"{row['region']}: {row['total']}")
print(json.dumps({"rows": len(rows), "sum": sum(r["total"] for r in rows)}))
