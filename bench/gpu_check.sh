#!/usr/bin/env bash
# The device check, prepared to run once on a lent GPU machine (torch with CUDA, nanobind, cmake and ninja
# there; no internet), in about 8 minutes:
#   1. builds and installs the package;
#   2. bench/host_cost.py with --device cuda: the tool's host time per step, measured, per workload and mode;
#   3. the blocking-read test on the GPU (tests/python/test_no_blocking_reads.py, its cuda cases);
#   4. the Figure 7 evaluation with --device cuda: naive, full (monkey-patch) and selective, on our
#      workloads and on the seed's own (--seed-workloads);
# and writes every figure into one CSV, $OUT/gpu_check.csv (columns: part, workload, method, metric, value).
#
#     OUT=/path/to/results bash bench/gpu_check.sh
#
# Each part has a time limit of its own, so a slow part leaves the others' figures; a part that fails is
# a row saying so, and the script goes on.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
log() { echo "[$(date +%H:%M:%S)] $*"; }

log "build"
python3 -m pip install -q --no-build-isolation . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/device.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" >> "$OUT/device.txt"
cat "$OUT/device.txt"

log "host cost on the device"
timeout 180 python3 bench/host_cost.py --device cuda --blocks 3 --pairs 15 --iters 8 \
  --workloads mnist resnet18 transformer p1000 p10000 --json "$OUT/host_cost.json" | tee "$OUT/host_cost.txt"

log "blocking reads on the device"
timeout 90 python3 -m pytest -q -rA tests/python/test_no_blocking_reads.py -k cuda > "$OUT/blocking_reads.txt" 2>&1
tail -5 "$OUT/blocking_reads.txt"

log "Figure 7 on the device"
for set in ours seed; do
  extra=(); [ "$set" = seed ] && extra=(--seed-workloads)
  timeout 150 python3 -m eval.perf_overhead.run --device cuda "${extra[@]}" --workloads mnist resnet18 transformer \
    --methods naive monkey-patch selective --iters 30 --warmup 5 --repeats 1 --out "$OUT/perf_$set" \
    > "$OUT/perf_$set.log" 2>&1
  tail -8 "$OUT/perf_$set.log"
done

log "one CSV"
python3 - "$OUT" <<'PY'
import csv, json, re, sys
from pathlib import Path

out = Path(sys.argv[1])
rows = []
host = out / "host_cost.json"
if host.exists():
    for r in json.loads(host.read_text()):
        for metric in ("plain_ms", "added_us", "writer_us", "wrapped_calls_per_step"):
            rows.append(("host_cost", r["workload"], r["mode"], metric, r[metric]))
else:
    rows.append(("host_cost", "", "", "status", "no result"))
reads = out / "blocking_reads.txt"
text = reads.read_text() if reads.exists() else ""
for outcome in ("passed", "failed", "skipped"):
    m = re.search(rf"(\d+) {outcome}", text)
    rows.append(("blocking_reads", "", "", outcome, int(m.group(1)) if m else 0))
for s in ("ours", "seed"):
    table = out / f"perf_{s}" / "overhead_e2e.csv"
    if not table.exists():
        rows.append((f"figure7_{s}", "", "", "status", "no result"))
        continue
    for r in csv.DictReader(table.open()):
        for metric in ("overhead", "std", "peak_rss_ratio"):
            rows.append((f"figure7_{s}", r["task"], r["method"], metric, r[metric]))
with (out / "gpu_check.csv").open("w", newline="") as f:
    w = csv.writer(f)
    w.writerow(("part", "workload", "method", "metric", "value"))
    w.writerows(rows)
print(f"{len(rows)} rows in {out / 'gpu_check.csv'}")
PY
log "done"
