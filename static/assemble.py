#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Assembles the directory the daemon serves: every file of static/ (minus this script and
# meson.build) plus Chart.js's self-contained UMD build from node_modules (installed by `npm ci`
# from the pinned package-lock.json; scripts/deps runs it). Without node_modules the dashboard
# is still assembled and says "charts unavailable" where a chart would be.
# Usage: assemble.py STATIC_SRC NODE_MODULES OUT_DIR
import os
import shutil
import sys

src, modules, out = sys.argv[1:4]
skip = {"meson.build", "assemble.py"}
tmp = out + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
for root, dirs, files in os.walk(src):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    rel = os.path.relpath(root, src)
    os.makedirs(os.path.join(tmp, rel), exist_ok=True)
    for f in sorted(files):
        if f in skip or f.startswith("."):
            continue
        shutil.copyfile(os.path.join(root, f), os.path.join(tmp, rel, f))
chart = os.path.join(modules, "chart.js", "dist", "chart.umd.js")
os.makedirs(os.path.join(tmp, "vendor"), exist_ok=True)
if os.path.isfile(chart):
    shutil.copyfile(chart, os.path.join(tmp, "vendor", "chart.umd.js"))
else:
    print(f"assemble.py: {chart} missing (run `npm ci` at the top); charts unavailable",
          file=sys.stderr)
shutil.rmtree(out, ignore_errors=True)
os.rename(tmp, out)
