#!/usr/bin/env bash
# bam table import|generate|info and bam query on the CPU target: the real NYC taxi
# sample (data/tables) imported and queried (Q0-Q5) in every mode, each answer verified
# against the CPU reference and the modes' answers equal; the flights slice (data/tables,
# and the full 3M-row file when $BAM_SHARED_DATA/tables has it) with its own predicate
# (distance range, mean delay grouped by origin); generated tables (the same bytes for
# any thread count, the checksums verified, queries verified); bad CSV refused with
# FILE:LINE:COLUMN, exit 1 and no output left behind.
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }
D=$(cd "$(dirname "$0")/../data/tables" && pwd)
SHARED=${BAM_SHARED_DATA:-${BAM_DEFAULT_SHARED_DATA:-}}
TAXI=$D/nyc-yellow-taxi-2019-03-sample.csv

"$BAM" table import "$TAXI" -o "$W/taxi.btab" --quiet >/dev/null && ok "import taxi sample" || bad "import taxi sample"
"$BAM" table info "$W/taxi.btab" --verify --json >"$W/info.json" && ok "info --verify" || bad "info --verify"
[ "$(jq '.rows' "$W/info.json")" = 6500 ] && ok "6500 rows" || bad "rows: $(jq .rows "$W/info.json")"
[ "$(jq -r '.columns[] | select(.name=="trip_distance") | .type' "$W/info.json")" = float64 ] && ok "trip_distance float64" || bad "trip_distance type"
[ "$(jq -r '.columns[] | select(.name=="store_and_fwd_flag") | .type' "$W/info.json")" = dict ] && ok "flag dict" || bad "flag type"
[ "$(jq -r '.columns[] | select(.name=="ehail_fee") | .nulls' "$W/info.json")" = 6500 ] && ok "all-null column" || bad "ehail_fee nulls"

for m in bam host whole-column; do
  if "$BAM" query "$W/taxi.btab" --q all --mode $m --target cpu --verify --json --quiet >"$W/q-$m.json"; then
    ok "Q0-Q5 $m verified"
  else
    bad "Q0-Q5 $m"
  fi
  # answers: counts, mins and maxes exactly; sums rounded to 1e-6
  jq -c '[.queries[] | {name, matched, c: [.columns[] | {count, min, max, s: ((.sum * 1e6 | round) / 1e6)}], g: [(.groups // [])[] | {key, rows}]}]' "$W/q-$m.json" >"$W/a-$m"
done
cmp -s "$W/a-bam" "$W/a-host" && cmp -s "$W/a-bam" "$W/a-whole-column" && ok "answers equal in every mode" || bad "answers differ between modes"
sel=$(jq '.queries[0].selectivity' "$W/q-bam.json")
awk -v s="$sel" 'BEGIN { exit !(s >= 0.01 && s <= 0.05) }' && ok "Q0 selectivity $sel in 1-5%" || bad "Q0 selectivity $sel"
amp=$(jq '.queries[5].amplification' "$W/q-bam.json")
awk -v a="$amp" 'BEGIN { exit !(a >= 1) }' && ok "Q5 amplification $amp from the counters" || bad "Q5 amplification $amp"
# the 2-controller emulator (striped columns) gives the same answers
"$BAM" query "$W/taxi.btab" --q 5 --backend=emu:count=2 --target cpu --verify --quiet >/dev/null && ok "Q5 on 2 controllers" || bad "Q5 on 2 controllers"

# flights: distance range, mean delay grouped by origin
flights() { # file label
  "$BAM" table import "$1" -o "$W/fl.btab" --quiet >/dev/null && ok "import $2" || { bad "import $2"; return; }
  if "$BAM" query "$W/fl.btab" --where distance:500:1000 --cols delay --agg count,mean --group-by origin \
    --target cpu --verify --json --quiet >"$W/fl.json"; then
    ok "$2: delay by origin verified ($(jq '.queries[0].groups | length' "$W/fl.json") origins)"
  else
    bad "$2 query"
  fi
  "$BAM" query "$W/fl.btab" --where distance:500:1000 --cols delay --group-by origin --mode host --target cpu --verify --quiet >/dev/null &&
    ok "$2 host mode verified" || bad "$2 host mode"
}
flights "$D/flights-100k.csv.gz" "flights slice"
if [ -n "$SHARED" ] && [ -f "$SHARED/tables/flights-3m.csv.gz" ]; then
  flights "$SHARED/tables/flights-3m.csv.gz" "flights 3M"
else
  echo "skip: flights-3m.csv.gz (no \$BAM_SHARED_DATA/tables)"
fi

# generated: deterministic for any thread count, verified
COLS=trip_distance,fare_amount,tip_amount,tolls_amount,total_amount,passenger_count,payment_type
for t in 1 3; do
  "$BAM" table generate --like "$TAXI" --rows 300001 --seed 5 --threads $t --columns $COLS \
    --schema trip_distance:float32,fare_amount:float32 -o "$W/g$t.btab" --quiet >/dev/null || bad "generate --threads $t"
done
cmp -s "$W/g1.btab" "$W/g3.btab" && ok "generate: same file for 1 and 3 threads" || bad "generate differs by thread count"
"$BAM" table info "$W/g1.btab" --verify >/dev/null && ok "generated table's checksums" || bad "generated checksums"
"$BAM" query "$W/g1.btab" --q all --target cpu --verify --quiet >/dev/null && ok "Q0-Q5 on a generated table verified" || bad "generated queries"
"$BAM" query "$W/g1.btab" --where fare_amount:10:20 --cols tip_amount --group-by payment_type --target cpu --verify --quiet >/dev/null &&
  ok "grouped by payment_type verified" || bad "payment_type query"
# a damaged column is found
cp "$W/g1.btab" "$W/dmg.btab"
printf 'X' | dd of="$W/dmg.btab" bs=1 seek=10000 conv=notrunc status=none
"$BAM" table info "$W/dmg.btab" --verify >/dev/null 2>&1 && bad "damage not found" || ok "damaged column found by --verify"

# bad CSV: an error with FILE:LINE:COLUMN, exit 1, nothing at -o
badcsv() { # name, expected pattern, content (printf format), import options...
  local n=$1 pat=$2 out rc=0
  printf "$3" >"$W/$n.csv"
  shift 3
  out=$("$BAM" table import "$W/$n.csv" -o "$W/$n.btab" --quiet "$@" 2>&1) || rc=$?
  if [ $rc = 1 ] && grep -qF -- "$pat" <<<"$out" && [ ! -e "$W/$n.btab" ] && ! ls "$W"/.$n.btab.tmp* >/dev/null 2>&1; then
    ok "bad CSV $n: $out"
  else
    bad "bad CSV $n (rc $rc, no '$pat'): $out"
  fi
}
badcsv ragged "ragged.csv:3:3" 'a,b,c\n1,2,3\n4,5\n'
badcsv unparsable "unparsable.csv:3:2 (b): not an integer" 'a,b\n1,2\n3,x\n' --schema b:int32
badcsv unparsable_f "unparsable_f.csv:2:1 (a): not a number" 'a\n1.5.2\n' --schema a:float64
badcsv overflow_i32 "overflow_i32.csv:2:1 (a): integer overflow" 'a\n2147483648\n' --schema a:int32
badcsv overflow "overflow.csv:2:1 (a): integer overflow" 'a\n99999999999999999999\n'
badcsv overflow32 "overflow32.csv:2:1 (a): integer overflow" 'a\n-9223372036854775808\n'
badcsv utf8 "utf8.csv:2:2 (b): not valid UTF-8" 'a,b\n1,\xff\xfe\n'
badcsv empty "empty.csv:1:1: empty file" ''
badcsv header_only "header_only.csv:2:1: no data rows" 'a,b\n'
badcsv quote "quote.csv:2:2: text after the closing quote" 'a,b\n1,"x"y\n'
badcsv float "float.csv:3:1 (a): number overflow" 'a\n1.5\n1e999\n'
zcat "$D/flights-100k.csv.gz" >"$W/t.csv"
head -20000 "$W/t.csv" | gzip >"$W/t.csv.gz"
head -c 100000 "$W/t.csv.gz" >"$W/trunc.csv.gz"
out=$("$BAM" table import "$W/trunc.csv.gz" -o "$W/trunc.btab" --quiet 2>&1) && bad "truncated gzip accepted" ||
  { grep -q "trunc.csv.gz:[0-9]*:[0-9]*: the gzip stream ends early" <<<"$out" && [ ! -e "$W/trunc.btab" ] && ok "truncated gzip: $out" || bad "truncated gzip: $out"; }
# an existing output is kept when the import fails
echo keep >"$W/keep.btab"
"$BAM" table import "$W/ragged.csv" -o "$W/keep.btab" --quiet 2>/dev/null || true
[ "$(cat "$W/keep.btab")" = keep ] && ok "failed import leaves the old output" || bad "old output replaced"
# usage errors
rc=0; "$BAM" query "$W/taxi.btab" --q 7 2>/dev/null || rc=$?; [ $rc = 2 ] && ok "--q 7 refused" || bad "--q 7"
rc=0; "$BAM" query "$W/taxi.btab" --where nosuch:1:2 --target cpu 2>/dev/null || rc=$?; [ $rc = 2 ] && ok "unknown column refused" || bad "unknown column"
rc=0; "$BAM" query "$W/taxi.btab" --q 0 --mode gpu --target cpu 2>/dev/null || rc=$?; [ $rc = 2 ] && ok "--mode=gpu on the CPU target refused" || bad "gpu mode on cpu"
test_summary test_table
