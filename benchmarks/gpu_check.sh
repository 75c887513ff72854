#!/usr/bin/env bash
# tcdoctor's CUDA figures against plain scripts, on whatever GPU machine is at hand (issue 50 item 7).
#
# Runs the three targets of benchmarks/gpu/ through `tcdoctor analyze` and their by-hand scripts
# (benchmarks/gpu/ref_blocked.py: blocked_autorange per side; benchmarks/gpu/benchmarked_by_hand.py:
# the benchmark article's method, one fresh process per mode), then prints one line per figure,
# tcdoctor's against the script's (benchmarks/gpu/compare.py; exit 1 when a check fails).
#
# Made for a GPU machine with no network and its own torch: tcdoctor is installed from this checkout
# with `pip --no-deps --no-build-isolation --target`, libcst (the one dependency such an image
# lacked) from the wheels in $WHEELS when it does not import. Every step has its own timeout and
# writes into $OUT as it goes (log.txt, the reports, results.txt), so a step that runs out of time
# loses only itself. The whole run takes about 10 minutes on one H100 (BUDGET_S caps it).
#
# Usage (from the project root): OUT=/path/out [WHEELS=dir] [BUDGET_S=560] bash benchmarks/gpu_check.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-check-out}
START=$(date +%s); DEADLINE=$((START + ${BUDGET_S:-560}))
W=$OUT/w; mkdir -p "$W"; LOG=$OUT/log.txt; T=$ROOT/benchmarks/gpu
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
step() {  # step NAME MAX_S cmd...: runs in $W, its output in $W/NAME.out, its tail in the log
  local name=$1 max=$2; shift 2
  local left=$((DEADLINE - $(date +%s)))
  [ "$left" -lt 25 ] && { echo "=== $name skipped (${left}s left)" >> "$LOG"; return; }
  [ "$max" -gt "$left" ] && max=$left
  echo "=== $name (max ${max}s) $(date +%T)" >> "$LOG"
  ( cd "$W" && timeout -k 5 "$max" "$@" ) > "$W/$name.out" 2>&1
  echo "rc=$? $(date +%T)" >> "$LOG"; tail -n 30 "$W/$name.out" >> "$LOG"
}
{ nvidia-smi -L; nproc; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"; } >> "$LOG" 2>&1
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  || { echo "no CUDA device here: nothing to check (tcdoctor's CUDA figures stay unverified)" | tee -a "$LOG"; exit 2; }
SITE=$OUT/site
python3 -c "import libcst" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target "$SITE" "${WHEELS:-$ROOT/benchmarks/gpu/wheels}"/*.whl >> "$LOG" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target "$SITE" "$ROOT" >> "$LOG" 2>&1
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
echo "installed $(date +%T)" >> "$LOG"
NT=$(python3 -c "import torch; print(torch.get_num_threads())")

step A_encoder 200 python3 -m tcdoctor analyze "$T/block_infer.py:build" --budget 1 --no-fixes --json A.json --html A.html --md A.md
mkdir -p "$W/refcache"
for i in 1 2; do
  step "B_ref$i" 70 env TORCHINDUCTOR_CACHE_DIR="$W/refcache" REF_THREADS="$NT" ROUNDS=6 python3 "$T/ref_blocked.py" "$T/block_infer.py" 0.3
  grep -h '^{' "$W/B_ref$i.out" >> "$W/ref.jsonl"
done
step C_gpt2 260 python3 -m tcdoctor analyze "$T/gpt2_train_amp.py:build" --modes default,reduce-overhead --no-fixes --no-training-ways --budget 1 --processes 3 --json C.json --html C.html --md C.md
for m in eager default reduce-overhead; do
  step "D_$m" 75 python3 "$T/benchmarked_by_hand.py" "$m"
  grep -h '^{' "$W/D_$m.out" >> "$W/by_hand.jsonl"
done
step E_cg 100 python3 -m tcdoctor analyze "$T/cg_mutation.py:build" --mode reduce-overhead --no-fixes --budget 0.5 --processes 3 --json E.json --html E.html --md E.md
rm -rf "$W/refcache"
python3 "$T/compare.py" "$W" | tee "$OUT/results.txt"
status=${PIPESTATUS[0]}
echo "done $(date +%T), $(( $(date +%s) - START ))s, compare rc=$status" >> "$LOG"
exit "$status"
