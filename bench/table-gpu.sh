#!/usr/bin/env bash
# The taxi queries Q0-Q5 at scale on the GPU machine (issue 28's "must show"): a taxi
# table of ROWS rows (default 1e9) resampled from the real TLC sample (the seven columns
# the queries read, amounts as float32: 28 GB at 1e9 rows), then Q0-Q5 through bam and
# with the whole-column baseline, with the emulated devices' unlimited profile and 1, 2
# and 4 emulated Optane P5800X. The whole-column runs read the file paced at the devices'
# datasheet sequential read (7.2 GB/s each; unpaced beside the unlimited profile), so
# both sides see storage of the same bandwidth. Prints per query and configuration the
# bam and whole-column end-to-end times and their ratio, each one's I/O amplification,
# and bam's scaling from 1 to 2 and 4 devices; a short table last.
# Builds nothing (the coordinator builds): BIN defaults to build/tools/bam/bam.
# Usage: bench/table-gpu.sh [ROWS]   env: BIN, WORK (default .work/table-gpu), KEEP=1
# Duration on an H100 with 16 cores: about 5-6 minutes at 1e9 rows (generation ~1 min,
# each configuration's columns placed on the emulated media ~15 s, queries 1-30 s).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000000}
BIN=${BIN:-build/tools/bam/bam}
WORK=${WORK:-.work/table-gpu}
mkdir -p "$WORK"
T=$WORK/taxi-$ROWS.btab
TAXI=data/tables/nyc-yellow-taxi-2019-03-sample.csv
COLS=trip_distance,fare_amount,tip_amount,tolls_amount,total_amount,passenger_count,payment_type
F32=trip_distance:float32,fare_amount:float32,tip_amount:float32,tolls_amount:float32,total_amount:float32
t0=$(date +%s)
if [ ! -f "$T" ]; then
  "$BIN" table generate --like "$TAXI" --rows "$ROWS" --seed 1 --columns $COLS --schema $F32 -o "$T"
fi
"$BIN" table info "$T"
tg=$(($(date +%s) - t0))
declare -A E2E AMP
for cfg in unlimited 1 2 4; do
  if [ $cfg = unlimited ]; then be=emu; rb=(); else be=emu:profile=optane-p5800x,count=$cfg; rb=(--read-bw=$(awk -v c=$cfg 'BEGIN{printf "%.0f", 7.2e9 * c}')); fi
  echo "== $cfg: bam ($be)" >&2
  timeout 300 "$BIN" query "$T" --q all --mode=bam --backend="$be" --json --quiet >"$WORK/bam-$cfg.json"
  echo "== $cfg: whole-column ${rb[*]:-}" >&2
  timeout 300 "$BIN" query "$T" --q all --mode=whole-column "${rb[@]}" --json --quiet >"$WORK/wc-$cfg.json"
  for m in bam wc; do
    for k in 0 1 2 3 4 5; do
      E2E[$m,$cfg,$k]=$(jq ".queries[$k].e2e_s" "$WORK/$m-$cfg.json")
      AMP[$m,$cfg,$k]=$(jq ".queries[$k].amplification" "$WORK/$m-$cfg.json")
    done
  done
  jq -r '.queries[] | "\(.name): selectivity \(.selectivity * 100 | . * 1000 | round / 1000)%, e2e \(.e2e_s) s, amplification \(.amplification)"' "$WORK/bam-$cfg.json" >&2
done
[ "${KEEP:-0}" = 1 ] || rm -f "$T"
echo
echo "taxi Q0-Q5, $ROWS rows ($(jq -r .target "$WORK/bam-1.json") target; $(nvidia-smi -L 2>/dev/null | head -1 || echo no GPU)); generation ${tg} s, total $(($(date +%s) - t0)) s"
echo "ratio = whole-column e2e / bam e2e (> 1: bam faster); amp = bytes read from storage / bytes the kernels requested"
printf '%-4s %-10s %10s %10s %7s %8s %8s\n' Q devices bam_s whole_s ratio amp_bam amp_wc
for k in 0 1 2 3 4 5; do
  for cfg in unlimited 1 2 4; do
    b=${E2E[bam,$cfg,$k]} w=${E2E[wc,$cfg,$k]}
    printf '%-4s %-10s %10.3f %10.3f %7.2f %8.2f %8.2f\n' Q$k $cfg "$b" "$w" "$(awk -v b="$b" -v w="$w" 'BEGIN{print (b > 0 ? w / b : 0)}')" \
      "${AMP[bam,$cfg,$k]}" "${AMP[wc,$cfg,$k]}"
  done
done
echo "bam scaling over one Optane (e2e of 1 device / e2e of n):"
printf '%-4s %8s %8s\n' Q "2 dev" "4 dev"
for k in 0 1 2 3 4 5; do
  printf '%-4s %8.2f %8.2f\n' Q$k "$(awk -v a="${E2E[bam,1,$k]}" -v b="${E2E[bam,2,$k]}" 'BEGIN{print a / b}')" \
    "$(awk -v a="${E2E[bam,1,$k]}" -v b="${E2E[bam,4,$k]}" 'BEGIN{print a / b}')"
done
