"""Every operation of openapi/openapi.json is in the generated clients (scripts/spec-check).

usage: coverage.py SPEC PYTHON_PACKAGE_DIR SCHEMA_D_TS
A generator that drops an operation (as openapi-python-client does, with a warning, for a
duplicate operationId) fails this, naming it.
"""

import json
import pathlib
import re
import sys


def main() -> int:
    spec_path, py_dir, ts_path = sys.argv[1:4]
    spec = json.loads(pathlib.Path(spec_path).read_text())
    ops = [
        (op["operationId"], method, path)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in ("get", "put", "post", "delete", "patch")
    ]
    # openapi-python-client writes api/<tag>/<operationId>.py (`list_.py` for a Python name):
    # two operations that would share a module mean one was dropped.
    py_modules = {(p.parent.name, p.stem.rstrip("_")) for p in pathlib.Path(py_dir, "api").glob("*/*.py")}
    seen_py: set[tuple[str, str]] = set()
    ts = pathlib.Path(ts_path).read_text()
    ts_ops = set(re.findall(r"^    ([a-z_]+): \{$", ts.split("export interface operations {", 1)[1], re.M))
    ts_paths = set(re.findall(r'^    "([^"]+)": \{$', ts.split("export interface paths {", 1)[1].split("\nexport ", 1)[0], re.M))
    missing = []
    for op_id, method, path in ops:
        module = (spec["paths"][path][method].get("tags", ["default"])[0], op_id)
        if module not in py_modules or module in seen_py:
            missing.append(f"python client: no module for {op_id} ({method.upper()} {path})")
        seen_py.add(module)
        if op_id not in ts_ops:
            missing.append(f"typescript: no operations[{op_id!r}] ({method.upper()} {path})")
        if path not in ts_paths:
            missing.append(f"typescript: no paths[{path!r}]")
    for m in missing:
        print(m, file=sys.stderr)
    if missing:
        return 1
    print(f"all {len(ops)} operations are in the Python client and the TypeScript types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
