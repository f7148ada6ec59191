# Step 2, twice in parallel: one region each (the job's params say which), from the parent's output.
import json, sys

params, parent = json.loads(sys.argv[1]), json.loads(sys.argv[3])
region = params["region"]
total = sum(parent["orders"][region]) * params["rate"]
print(json.dumps({"region": region, "total": round(total, 2)}))
