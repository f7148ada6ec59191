# Step 1: extract. Its output (the last line of stdout, JSON) goes to both transforms.
import json, sys

params = json.loads(sys.argv[1])
orders = {"eu": [120, 80, 45], "us": [200, 15]}
print(f"extracting orders of {params.get('day', 'today')}", file=sys.stderr)
print(json.dumps({"day": params.get("day"), "orders": orders}))
