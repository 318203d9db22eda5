#!/usr/bin/env bash
# Messages that name the real cause (CPU target):
#  - file: and emu media files on a read-only file system: EROFS, not the ENOENT of the
#    read-only fallback; on a full file system bfs, cc and bench say the same words
#    ("Capacity Exceeded: no space left on the media"), not "I/O error" (these two
#    need a private mount: unshare -rm; skipped where user namespaces are off);
#  - a media path in a missing folder: the hint names the folder, not "give size=";
#  - paths with control characters / escape sequences are escaped on stderr (bfs, cc,
#    graph import, bench).
. "$(dirname "$0")/lib.sh"
bad() { fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/  | /' "$W/err" 2>/dev/null | tail -10; }
expect() { # description, fixed string the stderr must hold, then the command
  local d=$1 want=$2; shift 2
  local rc=0
  "$@" >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$W/err"; then ok "$d"; else bad "$d (exit $rc; want: $want)"; fi
}
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "%d\t%d\n%d\t%d\n", i, (i + 1) % 2000, i, (i + 7) % 2000 }' >"$W/g.arcs"
"$BAM" graph import "$W/g.arcs" -o "$W/g.bam" -q
G=$W/g.bam

# a missing folder: the hint says so, with and without size=
for be in "file:$W/nodir/m.img" "file:$W/nodir/m.img,size=1M" "emu:media=file,path=$W/nodir/m.img" "emu:media=file,path=$W/nodir/m.img,size=1M"; do
  expect "bfs --backend=$be: the missing folder named" "its folder $W/nodir does not exist: create it first" \
    "$BAM" bfs "$G" --backend="$be" --target=cpu --quiet
  if grep -q "give size=" "$W/err"; then bad "bfs --backend=$be: still suggests size="; fi
done
mkdir "$W/nodir" # the fix the hint gave works
if "$BAM" bfs "$G" --backend="file:$W/nodir/m.img,size=1M" --target=cpu --quiet >"$W/out" 2>"$W/err"; then
  ok "after mkdir: the run works"
else
  bad "after mkdir: the run still fails"
fi

# escape sequences in user input: never raw on stderr
esc=$(printf '\033[31mred')
raw() { LC_ALL=C grep -q "$(printf '\033')" "$W/err"; }
for cmd in "bfs $W/x$esc.bam --target=cpu" "cc $W/x$esc.bam --target=cpu" "graph import $W/x$esc.arcs -o $W/o.bam" \
  "bfs $G --backend=file:$W/x$esc.img --target=cpu" "cc $G --backend=file:$W/nodir$esc/m.img --target=cpu" \
  "bench --backend=file:$W/x$esc.img --target=cpu --baseline=0"; do
  rc=0
  # shellcheck disable=SC2086
  "$BAM" $cmd >"$W/out" 2>"$W/err" || rc=$?
  if [ "$rc" -eq 0 ]; then bad "bam $cmd: exit 0"
  elif raw; then bad "bam $cmd: a raw escape byte on stderr"
  elif grep -qF '\x1b[31mred' "$W/err"; then ok "bam ${cmd%% *}: the path escaped"
  else bad "bam $cmd: the path not shown escaped"; fi
done

# read-only and full file systems (a private tmpfs)
if ! unshare -rm true 2>/dev/null; then
  echo "skip: unshare -rm not available (no user namespaces): the read-only and full file system cases"
else
  mnt=$W/mnt
  mkdir -p "$mnt"
  fs() { # mount options, then a bam command line; stderr to $W/err
    local opts=$1; shift
    unshare -rm sh -c 'm=$1; o=$2; shift 2; mount -t tmpfs -o "$o" none "$m" && "$@"' sh "$mnt" "$opts" "$@" >"$W/out" 2>"$W/err"
  }
  for be in "file:$mnt/m.img,size=1M" "emu:media=file,path=$mnt/m.img,size=1M"; do
    rc=0; fs ro "$BAM" bfs "$G" --backend="$be" --target=cpu --quiet || rc=$?
    if [ "$rc" -ne 0 ] && grep -q "Read-only file system" "$W/err" && ! grep -q "No such file" "$W/err"; then
      ok "read-only file system, --backend=${be%%:*}: EROFS said"
    else bad "read-only file system, --backend=${be%%:*} (exit $rc)"; fi
  done
  want="Capacity Exceeded: no space left on the media (a full file system)"
  for c in bfs cc; do
    rc=0; fs size=16k "$BAM" $c "$G" --backend="file:$mnt/m.img,size=1M,direct=0" --target=cpu --quiet || rc=$?
    if [ "$rc" -ne 0 ] && grep -qF "$want" "$W/err"; then ok "full file system: $c says '$want'"; else bad "full file system: $c (exit $rc)"; fi
  done
  rc=0; fs size=16k "$BAM" bench --backend="file:$mnt/b.img,size=1M,direct=0" --rw=write --size=1M --quiet --baseline=0 --target=cpu || rc=$?
  if [ "$rc" -ne 0 ] && grep -qF "$want" "$W/err"; then ok "full file system: bench says '$want'"; else bad "full file system: bench (exit $rc)"; fi
fi
test_summary "messages"
