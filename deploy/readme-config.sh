#!/usr/bin/env bash
# Regenerates the configuration table of README.md from the code.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import subprocess
t = subprocess.run(["go", "run", "./cmd/kgagent", "config-reference"], capture_output=True, text=True, check=True).stdout
s = open("README.md").read()
a = s.index("<!-- CONFIG:BEGIN -->") + len("<!-- CONFIG:BEGIN -->")
b = s.index("<!-- CONFIG:END -->")
open("README.md", "w").write(s[:a] + "\n" + t + s[b:])
PY
