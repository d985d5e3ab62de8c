#!/usr/bin/env bash
# The simulated device in real time against its model: `flashpipe bench` on
# sim:...,time=real (the queue sleeps until each completion, spin:US really
# spins), blocking and non-blocking, each the median of $REPEAT runs, next to
# what docs/bench.md's model predicts (n(p+s) blocking, p+s+(n-1)max(p,s)
# non-blocking) and to the same run in virtual time. Real time can only be
# slower than the model; how much slower is the sleep and spin overshoot
# plus the machine's load, which is what this measures (the unit tests
# assert only what load cannot change). Writes nothing but its output.
#   FLASHPIPE=build/flashpipe REPEAT=5 COUNT=40 SPIN_US=1000 bash bench/sim_time_bench.sh
set -euo pipefail
FP=$(realpath "${FLASHPIPE:-$(dirname "$0")/../build/flashpipe}")
REPEAT=${REPEAT:-5}
COUNT=${COUNT:-40}
SPIN_US=${SPIN_US:-1000}
REQUEST=${REQUEST:-4096}
SIM=${SIM:-sim:size=1G,bw=1G,cmd_us=2000}
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 0; }
run() {  # run TIME: the bench's JSON on stdout
  "$FP" bench "$SIM,time=$1" --sizes "$REQUEST" --total "$((COUNT * REQUEST))" --tests write \
    --modes blocking,non-blocking --prep "spin:$SPIN_US" --repeat "$REPEAT" --json 2>/dev/null |
    sed -n '/^{/,$p'
}
real=$(run real)
virtual=$(run virtual)
python3 - "$SIM" "$COUNT" "$SPIN_US" "$REQUEST" "$real" "$virtual" <<'PY'
import json, re, sys
sim, n, spin_us, request = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
spec = dict(kv.split('=') for kv in sim[len('sim:'):].split(','))
rate = {'': 1, 'K': 10**3, 'M': 10**6, 'G': 10**9}
m = re.fullmatch(r'(\d+)([KMG]?)', spec['bw'])
bw = int(m.group(1)) * rate[m.group(2)]
p = spin_us * 1000
s = int(spec['cmd_us']) * 1000 + -(-request * 10**9 // bw)
model = {'blocking': n * (p + s), 'non-blocking': p + s + (n - 1) * max(p, s)}
ns = {t: {r['mode']: r['ns'] for r in json.loads(text)['results']}
      for t, text in (('real', sys.argv[5]), ('virtual', sys.argv[6]))}
print(f'{sim}: {n} writes of {request} bytes, host spin {spin_us} us, device {s / 1e6:.3f} ms per request')
print(f'{"mode":14} {"model ms":>10} {"real ms":>10} {"real/model":>11} {"virtual ms":>11}')
for mode, want in model.items():
    print(f'{mode:14} {want / 1e6:10.3f} {ns["real"][mode] / 1e6:10.3f} '
          f'{ns["real"][mode] / want:11.3f} {ns["virtual"][mode] / 1e6:11.3f}')
gain = lambda d: d['blocking'] / d['non-blocking']
print(f'non-blocking gain over blocking: model {gain(model):.3f}, real {gain(ns["real"]):.3f}, '
      f'virtual {gain(ns["virtual"]):.3f}')
PY
echo "command: FLASHPIPE=${FLASHPIPE:-build/flashpipe} REPEAT=$REPEAT COUNT=$COUNT SPIN_US=$SPIN_US bash bench/sim_time_bench.sh"
