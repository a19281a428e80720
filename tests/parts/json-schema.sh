#!/usr/bin/env bash
# json-schema.sh BUILD COUNTS — every command's --json output (generate, beam search included; info; bench;
# verify; audit) against its schema in docs/schemas/ (JSON Schema 2020-12, checked with Debian's python3-jsonschema),
# and each schema's negative control: the same output with a required key dropped and with a key's type changed
# must fail it, or the schema would accept anything. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-json-schema-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python=/usr/bin/python3 # Debian's, where python3-jsonschema installs

if ! "$python" -c 'import jsonschema' 2>/dev/null; then
    echo "SKIP json-schema: $python cannot import jsonschema (Debian package python3-jsonschema; make deps installs it)"
    echo "0 0 1" >"$counts"
    exit 0
fi

# validate SCHEMA INSTANCE: the instance against the schema, and two broken copies that must not pass; prints one
# line per outcome ("valid", "invalid: why")
validate() {
    "$python" - "$1" "$2" <<'PY'
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
doc = json.load(open(sys.argv[2]))
def verdict(d):
    errors = sorted(v.iter_errors(d), key=lambda e: list(e.path))
    return "valid" if not errors else "invalid: " + errors[0].message[:200]
print(verdict(doc))
required = schema.get("required", [])
dropped = dict(doc); dropped.pop(required[0], None)          # a required key missing
print(verdict(dropped))
retyped = dict(doc); retyped[required[-1]] = {"not": "this"}  # a key of the wrong type
print(verdict(retyped))
PY
}

check_output() { # check_output NAME SCHEMA FILE
    local name=$1 schema=docs/schemas/$2.schema.json file=$3
    validate "$schema" "$file" >"$tmp/verdicts" 2>&1
    if [ "$(sed -n 1p "$tmp/verdicts")" = valid ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL json-schema: $name: $(sed -n 1p "$tmp/verdicts")"
    fi
    if [ "$(sed -n 2,3p "$tmp/verdicts" | grep -c '^invalid')" -eq 2 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL json-schema: $name: the schema accepts a broken copy: $(cat "$tmp/verdicts")"
    fi
}

"$spec" generate --method mtp --max-tokens 8 --json >"$tmp/generate.json" 2>&1
check_output "generate --json" generate "$tmp/generate.json"
"$spec" generate --method beam --beams 3 --max-tokens 6 --json >"$tmp/beam.json" 2>&1
check_output "generate --method beam --json" generate "$tmp/beam.json"
"$spec" generate --method bigram --ids --max-tokens 8 --json >"$tmp/ids.json" 2>&1
check_output "generate --ids --json (no text)" generate "$tmp/ids.json"
"$spec" info --json >"$tmp/info.json" 2>&1
check_output "info --json" info "$tmp/info.json"
"$spec" bench --backend cpu --runs 1 --tokens 8 --cost-reps 1 --json >"$tmp/bench.json" 2>/dev/null
check_output "bench --json" bench "$tmp/bench.json"
"$spec" bench --backend cpu --runs 1 --tokens 8 --plain --json >"$tmp/plain.json" 2>/dev/null
check_output "bench --plain --json (no pass costs)" bench "$tmp/plain.json"
"$spec" verify --method lookup --scale 0.2 --json --quiet >"$tmp/verify.json" 2>/dev/null
check_output "verify --json" verify "$tmp/verify.json"
"$spec" verify --method beam --json --quiet >"$tmp/beamv.json" 2>/dev/null
check_output "verify --method beam --json" verify "$tmp/beamv.json"
"$spec" audit --method spec --k 2 -n 60 --length 4 --backend cpu --json --quiet >"$tmp/audit.json" 2>/dev/null
check_output "audit --json" audit "$tmp/audit.json"

echo "json-schema: $pass passed, $fail failed"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
