#!/usr/bin/env bash
# tcdoctor's CUDA figures against plain scripts, on whatever GPU machine is at hand (issues 50, 56).
#
# Runs the targets of benchmarks/gpu/ through `tcdoctor analyze` and the reference scripts
# (benchmarks/gpu/ref_blocked.py: blocked_autorange per side, eager and compiled alternated in one
# fresh process, two processes per case and mode so the ±10% bound is judged against the scripts'
# own spread), then benchmarks/gpu/process_state.py on the GPT-2 step (what an analysis process
# does before its timing, step by step), and prints one line per figure, tcdoctor's against the
# scripts' (benchmarks/gpu/compare.py; exit 1 when a check fails).
#
# Order: cg_mutation first (the run of 2026-11-28 ran out of time before it), the GPT-2 step (the
# figure that failed), its reference scripts, the encoder and its scripts; then process_state.py
# with a budget of its own. --quick: the GPT-2 step in the default mode and the encoder only.
# --plan: print the steps and the budget line, run nothing (no GPU needed).
#
# Made for a GPU machine with no network and its own torch: tcdoctor is installed from this checkout
# with `pip --no-deps --no-build-isolation --target`, libcst (the one dependency such an image
# lacked) from the wheels in $WHEELS when it does not import. Every step has its own timeout and
# writes into $OUT as it goes (log.txt, each step's output, the reports, and results.txt redrawn
# after each step), so a step that runs out of time loses only itself.
#
# Usage (from the project root): OUT=/path/out [WHEELS=dir] [BUDGET_S=s] [PS_S=s]
#        bash benchmarks/gpu_check.sh [--quick] [--plan]
set -u
QUICK=0; PLAN=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    --plan) PLAN=1 ;;
    *) echo "usage: OUT=dir bash benchmarks/gpu_check.sh [--quick] [--plan]" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-check-out}
# The check's steps stop starting once BUDGET_S is spent; process_state.py then has PS_S of its
# own. --quick with process_state fits one device call of 10 minutes; the full run does not.
BUDGET_S=${BUDGET_S:-$([ "$QUICK" = 1 ] && echo 420 || echo 600)}
PS_S=${PS_S:-150}
START=$(date +%s); DEADLINE=$((START + BUDGET_S)); PS_DEADLINE=$((DEADLINE + PS_S))
W=$OUT/w; LOG=$OUT/log.txt; T=$ROOT/benchmarks/gpu
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
EST_TOTAL=0

# Each step's estimate is its time on one H200 (16 cores, torch 2.11) on 2026-11-28, from
# tests/data/cuda-h200/log.txt where the step ran there (A_encoder 63 s with 4 processes at
# --budget 1; ref_blocked on the encoder 30 s and 25 s at ROUNDS=6; the GPT-2 analysis 226 s with
# reduce-overhead, whose strategy child took 52.9 s; a by-hand GPT-2 process 63 s with its 41.9 s
# cold compile, 17 s without a compile: ~14 s of start, imports and CUDA set-up per process; a
# timing-only GPT-2 process 35.0 s; the warm compile 12.6 s), else from its parts.
step() {  # step NAME MAX_S EST_S cmd...: runs in $W, its output in $W/NAME.out, its tail in the log
  local name=$1 max=$2 est=$3; shift 3
  EST_TOTAL=$((EST_TOTAL + est))
  if [ "$PLAN" = 1 ]; then printf '%-18s timeout %4ss  estimate %4ss\n' "$name" "$max" "$est"; return; fi
  local until=$DEADLINE; [ "$name" = P_process_state ] && until=$PS_DEADLINE
  local left=$((until - $(date +%s)))
  [ "$left" -lt 25 ] && { echo "=== $name skipped (${left}s left)" >> "$LOG"; return; }
  [ "$max" -gt "$left" ] && max=$left
  echo "=== $name (max ${max}s, estimate ${est}s) $(date +%T)" >> "$LOG"
  ( cd "$W" && timeout -k 5 "$max" "$@" ) > "$W/$name.out" 2>&1
  echo "rc=$? $(date +%T)" >> "$LOG"; tail -n 30 "$W/$name.out" >> "$LOG"
  python3 "$T/compare.py" "$W" > "$OUT/results.txt" 2>&1  # redrawn after every step
}

if [ "$PLAN" = 0 ]; then
  mkdir -p "$W"
  bash "$0" --plan $([ "$QUICK" = 1 ] && echo --quick) >> "$LOG"  # the steps and the budget line
  nvidia-smi -L >> "$LOG" 2>&1; nproc >> "$LOG"
  NT=$(python3 -c "import sys, torch; print(torch.__version__, torch.version.cuda, torch.get_num_threads()); sys.exit(0 if torch.cuda.is_available() else 1)" 2>> "$LOG") \
    || { echo "no CUDA device here: nothing to check (tcdoctor's CUDA figures stay unverified)" | tee -a "$LOG"; exit 2; }
  echo "torch, CUDA, threads: $NT" >> "$LOG"; NT=${NT##* }
  SITE=$OUT/site
  python3 -c "import libcst" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target "$SITE" "${WHEELS:-$ROOT/benchmarks/gpu/wheels}"/*.whl >> "$LOG" 2>&1
  python3 -m pip install -q --no-deps --no-build-isolation --no-index --target "$SITE" "$ROOT" >> "$LOG" 2>&1
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  echo "installed $(date +%T)" >> "$LOG"
  mkdir -p "$W/refcache" "$W/gpt2cache"
fi
# the set-up above: nvidia-smi, one torch probe, the install (24 s on the H200 with three probes)
EST_TOTAL=16

ANALYZE=(python3 -m tcdoctor analyze --no-fixes --no-compile-remedies)
REF=(python3 "$T/ref_blocked.py")
[ "$QUICK" = 0 ] && step E_cg 60 40 "${ANALYZE[@]}" "$T/cg_mutation.py:build" --mode reduce-overhead \
  --processes 2 --budget 0.5 --json E.json --md E.md --html ''
if [ "$QUICK" = 1 ]; then
  step C_gpt2 250 173 "${ANALYZE[@]}" "$T/gpt2_train_amp.py:build" --no-training-ways --budget 1 \
    --processes 3 --json C.json --md C.md --html ''
else
  step C_gpt2 300 226 "${ANALYZE[@]}" "$T/gpt2_train_amp.py:build" --modes default,reduce-overhead \
    --no-training-ways --budget 1 --processes 3 --json C.json --md C.md --html ''
fi
MODES=default; [ "$QUICK" = 0 ] && MODES="default reduce-overhead"
for m in $MODES; do
  for i in 1 2; do  # one GPT-2 cache for the scripts: the first process of a mode compiles cold
    step "R_gpt2_${m}_$i" $([ $i = 1 ] && echo 90 || echo 60) $([ $i = 1 ] && echo 60 || echo 30) \
      env TORCHINDUCTOR_CACHE_DIR="$W/gpt2cache" MODE="$m" ROUNDS=4 "${REF[@]}" "$T/gpt2_train_amp.py" 0.3
    [ "$PLAN" = 0 ] && grep -hs '^{' "$W/R_gpt2_${m}_$i.out" >> "$W/ref_gpt2.jsonl"
  done
done
step A_encoder 90 45 "${ANALYZE[@]}" "$T/block_infer.py:build" --budget 0.5 --processes 3 \
  --json A.json --md A.md --html ''
for i in $([ "$QUICK" = 1 ] && echo 1 || echo 1 2); do  # --quick: the interval against one script
  step "B_ref$i" 45 $([ $i = 1 ] && echo 26 || echo 22) env TORCHINDUCTOR_CACHE_DIR="$W/refcache" \
    REF_THREADS="${NT:-1}" ROUNDS=4 "${REF[@]}" "$T/block_infer.py" 0.2
  [ "$PLAN" = 0 ] && grep -hs '^{' "$W/B_ref$i.out" >> "$W/ref.jsonl"
done
CHECK_EST=$EST_TOTAL
step P_process_state "$PS_S" 100 env TORCHINDUCTOR_CACHE_DIR="$W/gpt2cache" python3 "$T/process_state.py" \
  "$T/gpt2_train_amp.py:build" --device cuda --line-s 1.0 --budget $((PS_S - 40)) --json P.json
echo "budget: the check ≈ ${CHECK_EST} s ($([ "$QUICK" = 1 ] && echo --quick || echo full): \
$([ "$CHECK_EST" -le 360 ] && echo within || echo beyond) six minutes; 70 s more if the GPT-2 \
analysis replaces its two analysis processes, 35 s each), steps stop starting at ${BUDGET_S} s; \
then process_state.py ≈ 100 s within ${PS_S} s; estimates from one H200's log (2026-11-28)"
[ "$PLAN" = 1 ] && exit 0
rm -rf "$W/refcache" "$W/gpt2cache"
python3 "$T/compare.py" "$W" | tee "$OUT/results.txt"
status=${PIPESTATUS[0]}
echo "done $(date +%T), $(( $(date +%s) - START ))s, compare rc=$status" >> "$LOG"
exit "$status"
