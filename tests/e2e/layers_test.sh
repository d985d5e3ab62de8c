#!/usr/bin/env bash
# The house's rules, read from the code itself:
#   1. no include runs back up the layers: a file in src/LAYER includes only
#      its own layer and the layers LAYER stands on, as CMakeLists.txt's
#      DEPS_LAYER lists say (read from there, not copied here), transitively;
#   2. the two ends of a fastboot link (src/fastboot, the device side, and
#      src/host, the host side) never define a class of the same name, so a
#      name says which end it is;
#   3. the binary does not link libcurl (loaded on first use).
set -euo pipefail
SRC=${FLASHPIPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$SRC" <<'PY'
import os, re, sys
src = sys.argv[1]
cm = open(os.path.join(src, "CMakeLists.txt")).read()
layers = re.search(r"set\(FLASHPIPE_LAYERS ([^)]*)\)", cm).group(1).split()
deps = {l: set() for l in layers}
for l in layers:
    m = re.search(r"set\(DEPS_%s ([^)]*)\)" % l, cm)
    if m:
        deps[l] = {d[len("flashpipe_"):] for d in m.group(1).split() if d.startswith("flashpipe_")}
def below(l, seen=None):
    seen = set() if seen is None else seen
    for d in deps[l]:
        if d not in seen:
            seen.add(d); below(d, seen)
    return seen
bad, files = [], 0
for l in layers:
    allowed = below(l) | {l}
    d = os.path.join(src, "src", l)
    for name in sorted(os.listdir(d)):
        if not name.endswith((".h", ".cc")):
            continue
        files += 1
        for n, line in enumerate(open(os.path.join(d, name), errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"([a-z0-9_]+)/', line)
            if m and m.group(1) in layers and m.group(1) not in allowed:
                bad.append(f"src/{l}/{name}:{n}: includes {m.group(1)}/, above or beside {l} "
                           f"(it stands on {', '.join(sorted(below(l))) or 'nothing'})")
for b in bad:
    print("FAIL:", b)
print(f"ok: {files} files in {len(layers)} layers, no include runs back up" if not bad else "")
def classes(layer):
    out = {}
    d = os.path.join(src, "src", layer)
    for name in os.listdir(d):
        if not name.endswith(".h"):
            continue
        for n, line in enumerate(open(os.path.join(d, name), errors="replace"), 1):
            m = re.match(r"(?:class|struct)\s+([A-Z][A-Za-z0-9_]*)\b[^;]*$", line)
            if m:
                out.setdefault(m.group(1), f"src/{layer}/{name}:{n}")
    return out
dev, host = classes("fastboot"), classes("host")
twins = sorted(set(dev) & set(host))
for t in twins:
    print(f"FAIL: {t} is defined on both ends: {dev[t]} and {host[t]}")
if not twins:
    print(f"ok: {len(dev)} device-side and {len(host)} host-side class names, none on both ends")
sys.exit(1 if bad or twins else 0)
PY
# libcurl is loaded on first use (fetch/curl_api.h), never linked: every
# process would map its 26 libraries at start.
if [ -n "${FLASHPIPE:-}" ]; then
  if ldd "$FLASHPIPE" | grep -q libcurl; then echo "FAIL: $FLASHPIPE links libcurl"; exit 1; fi
  echo "ok: $(ldd "$FLASHPIPE" | wc -l) shared libraries, libcurl not among them"
fi
echo PASS
