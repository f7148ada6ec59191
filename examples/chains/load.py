# Step 3: load, once both transforms ended (a fan-in): $4 holds every parent's run and output.
import json, sys

params, parents = json.loads(sys.argv[1]), json.loads(sys.argv[4])
totals = {p["output"]["region"]: p["output"]["total"] for p in parents}
print(json.dumps({"day": params["day"], "loaded": totals, "sum": round(sum(totals.values()), 2)}))
