# Runs only if extract fails for good (an on_failure edge).
import json

print(json.dumps({"alerted": True}))
