#!/usr/bin/env python3
"""The GitHub Actions example (docs/examples/github-actions.yml), checked as far as it can be here:
the YAML parses and has the job's shape (a checkout, a cache keyed on the sources, a build, a check),
every package it installs is one scripts/bootstrap.sh needs or ccache/ninja, and each `scripts/tally`
command in its run steps runs with TALLY_BINARY and exits 0.

    ci_example.py TALLY_BINARY WORKFLOW

Exits 77 (ctest: skipped) without PyYAML (Debian: python3-yaml)."""
import os
import re
import shlex
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("ci_example: PyYAML is not installed (Debian: python3-yaml); skipped")
    sys.exit(77)

tally, path = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


with open(path) as f:
    doc = yaml.safe_load(f)
jobs = doc.get("jobs", {})
check(len(jobs) == 1, "one job")
job = next(iter(jobs.values()))
steps = job.get("steps", [])
uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
check(uses == ["actions/checkout", "actions/cache"], f"a checkout, then a cache: {uses}")
cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
check("hashFiles(" in cache["with"]["key"] and "'src/**'" in cache["with"]["key"], "the cache is keyed on the sources")
check(cache["with"]["path"] == ".ccache" and job["env"]["CCACHE_DIR"].endswith("/.ccache"),
      "the cache holds CCACHE_DIR")
runs = "\n".join(s["run"] for s in steps if "run" in s)

# The packages: those scripts/bootstrap.sh checks for, plus ninja-build and ccache.
with open(os.path.join(root, "scripts", "bootstrap.sh")) as f:
    needed = set(re.search(r"TALLY_PACKAGES=\(([^)]*)\)", f.read()).group(1).split())
install = re.search(r"apt-get install -y --no-install-recommends ((?:[^\n\\]|\\\n)*)", runs).group(1)
packages = set(install.replace("\\\n", " ").split())
check(needed <= packages, f"installs every package scripts/bootstrap.sh needs: {sorted(needed - packages)} missing")
check(packages - needed <= {"ninja-build", "ccache"}, f"installs nothing else: {sorted(packages - needed)}")
check("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" in runs, "the build goes through ccache")

# Each scripts/tally command, run from the repository root as the job runs it.
commands = [line.strip() for line in runs.splitlines() if line.strip().startswith("scripts/tally ")]
check(commands, "at least one scripts/tally command")
for line in commands:
    args = shlex.split(line.split(">")[0])[1:]
    done = subprocess.run([tally] + args, cwd=root, capture_output=True, text=True)
    check(done.returncode == 0, f"{line}: exit {done.returncode}: {done.stderr.strip()}")

for f in failures:
    print(f"{path}: {f}")
print(f"ci example: {len(commands)} tally commands run, {len(failures)} failed checks")
sys.exit(1 if failures else 0)
