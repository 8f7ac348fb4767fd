"""Every example in an OpenAPI 3.1 document is valid against the schema beside it (JSON Schema 2020-12).

Usage: python3 scripts/check-openapi-examples.py openapi.json   (exit 1 and a list when one is not)
scripts/schemathesis.sh runs it with schemathesis's own validator before the run: schemathesis
skips an example its schema refuses, so such an example would silently test nothing.
"""
import json
import sys

import jsonschema_rs


def main(path):
    doc = json.load(open(path))
    components = doc.get("components", {})
    problems = []
    checked = 0

    def check(where, schema, example):
        nonlocal checked
        checked += 1
        wrapped = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "components": components}
        validator = jsonschema_rs.validator_for(wrapped)
        errors = [f"{e.instance_path}: {e.message}" for e in validator.iter_errors(example)]
        if errors:
            problems.append(f"{where}: " + "; ".join(errors[:3]))

    def walk_content(where, content):
        for media, body in (content or {}).items():
            if "schema" in body and "example" in body:
                check(f"{where} {media}", body["schema"], body["example"])

    for section in ("paths", "webhooks"):
        for path, item in doc.get(section, {}).items():
            for method, op in item.items():
                label = f"{method.upper()} {path}"
                walk_content(f"{label} request", op.get("requestBody", {}).get("content"))
                for status, answer in op.get("responses", {}).items():
                    walk_content(f"{label} {status}", answer.get("content"))
                for parameter in op.get("parameters", []):
                    if "example" in parameter.get("schema", {}):
                        check(f"{label} parameter {parameter['name']}", parameter["schema"], parameter["schema"]["example"])
    for name, schema in components.get("schemas", {}).items():
        if "example" in schema:
            check(f"components.schemas.{name}", schema, schema["example"])
    for problem in problems:
        print(problem)
    print(f"check-openapi-examples: {checked} examples, {len(problems)} not valid against their schema")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
