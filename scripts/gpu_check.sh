#!/usr/bin/env bash
# GPU node check: the single-file probe and the NVML health reader, with the node's system python3
# only (no venv, no network), into OUT/bundle; bounded well under 5 minutes.
#   scripts/gpu_check.sh [OUT]            (default: ./gpu-check-<host>-<UTC time>)
# Copy OUT/bundle back and read it with runbook 01 (source=OUT/bundle). Without a GPU it still
# completes and says so, so it can be dry-run anywhere.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lib="$here/lib/vllm_runbooks"
out="${1:-./gpu-check-$(hostname -s 2>/dev/null || echo node)-$(date -u +%Y%m%dT%H%M%SZ)}"
py="$(command -v python3 || true)"
[ -n "$py" ] || { echo "gpu_check: no python3 on PATH" >&2; exit 2; }
mkdir -p "$out" || exit 2
start=$(date +%s)

# 1. the probe (stdlib only): nvidia-smi XML, kernel log (Xid/SXid), fabric, disk, ... (each bounded)
timeout 240 "$py" "$lib/probe.py" --out "$out/bundle" --timeout 20 --kernel-log-hours "${KERNEL_LOG_HOURS:-72}" \
  > "$out/probe.out" 2>&1
rc=$?
cat "$out/probe.out"
[ "$rc" -eq 0 ] || { echo "gpu_check: probe exited $rc" >&2; exit 1; }

# 2. NVML health (pynvml when the system python has it; otherwise the file says why)
timeout 60 "$py" "$lib/evidence/nvml_health.py" --json > "$out/bundle/nvml-health.json" 2> "$out/nvml.err" \
  || echo '{"error": "nvml_health.py failed or timed out"}' > "$out/bundle/nvml-health.json"

took=$(( $(date +%s) - start ))
if command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  echo "gpu_check: ${gpus:-0} GPU(s) listed by nvidia-smi; bundle in $out/bundle (${took} s)"
else
  echo "gpu_check: no GPU on this machine (nvidia-smi not found): dry run only; bundle in $out/bundle (${took} s)"
fi
"$py" - "$out/bundle/nvml-health.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("gpu_check: NVML:", d.get("error") or f"{len(d.get('gpus') or [])} GPU(s), driver {d.get('driver_version')}")
PY
