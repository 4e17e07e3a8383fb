#!/usr/bin/env bash
# Reading a run folder from elsewhere is bounded (issue 43). Prints, side
# by side for each build given, the wall time, peak RSS and exit of
#   - merge and export of N cells naming one 8 MiB trace (each cell's folder
#     a link to the one folder holding it), N = 1, 10, 40, 400 (target:
#     under 300 MB at every N);
#   - show, compare (the run with itself) and baseline of 200k small cells
#     (target: under 10 s each);
#   - reading a 4 MiB expectations file (merge --expect of a 10-cell run:
#     the file is parsed and checked, then refused for naming targets the
#     run lacks, which is all this measures);
#   - check (the newest reader) of the same folders, where a build has it;
#   - reports shaped to load a reader, each small: 5 000 cells on the
#     diagonal of 5 000 targets x 5 000 scenarios (1.4 MB), and 4 000 cells
#     each on a server point of its own (show, check, merge; compare
#     --axis server), where the target is what a run of as many cells
#     takes.
# The builds run one after the other on each row, so the machine's load
# falls on both alike; the load average is printed before and after.
#
# Each command runs within a time limit (LIMIT, 180 s: past it, it is
# killed and shows "killed"), an address-space cap (CAP_MB, 4096: a build
# that would take the machine's memory fails an allocation there and
# shows "signal_6", an abort; its peak is then more than the cap, whatever
# RSS it reached first) and a cap on what it writes (OUT_CAP_MB, 512: past
# it, it is killed and shows "wrote>512MB"; the disk is shared). A build
# without a command shows "n/a".
#
#   bench/bounds.sh                                  # this build (release)
#   BEFORE=/tmp/before/continuity bench/bounds.sh    # and another, side by side
#   BIN=/path/to/continuity bench/bounds.sh          # another build (no build)
#   NS="1 10" CELLS=20000 DIAGONAL=500 POINTS=400 LIMIT=30 bench/bounds.sh  # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
if [ -z "${BIN:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$repo/target/release/continuity}
limit=${LIMIT:-180}
cap=${CAP_MB:-4096}
out_cap=${OUT_CAP_MB:-512}
ns=${NS:-1 10 40 400}
cells=${CELLS:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

builds=("after=$bin")
if [ -n "${BEFORE:-}" ]; then builds=("before=$BEFORE" "${builds[@]}"); fi

echo "limit ${limit} s, cap ${cap} MB, output cap ${out_cap} MB; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${builds[@]}"; do echo "${b%%=*}: ${b#*=} ($("${b#*=}" --version 2>&1 | head -1))"; done
printf '%-36s' "case"
for b in "${builds[@]}"; do printf ' | %-24s' "${b%%=*}: s, MB, exit"; done
echo

# row NAME CMD [WRITES]: CMD once per build (@BIN@ its binary, @OUT@ a
# fresh path; WRITES, the path it writes, capped: @OUT@ or @OUT@.json); a
# build whose binary lacks CMD's subcommand shows n/a.
row() {
  local name=$1 cmd=$2 writes=${3:--}
  printf '%-36s' "$name"
  for b in "${builds[@]}"; do
    local label=${b%%=*} exe=${b#*=}
    local out="$work/out-$label-$RANDOM"
    local sub=${cmd#@BIN@ }
    sub=${sub%% *}
    local got
    if ! "$exe" "$sub" --help >/dev/null 2>&1; then
      got="n/a"
    else
      # shellcheck disable=SC2046 # the command's words, split on purpose
      got=$(python3 bench/lib/measure.py "$limit" "$cap" "${writes//@OUT@/$out}" "$out_cap" \
        "$out.log" $(sed "s|@BIN@|$exe|g; s|@OUT@|$out|g" <<<"$cmd"))
    fi
    rm -rf "$out" "$out.json" "$out.log"
    printf ' | %-24s' "$got"
  done
  echo
}

for n in $ns; do
  python3 bench/lib/hostile_run.py shared-trace "$n" "$work/shared-$n"
  row "merge, $n cells naming one trace" "@BIN@ merge --out @OUT@ $work/shared-$n" @OUT@
  row "export, $n cells naming one trace" "@BIN@ export $work/shared-$n --chrome-trace @OUT@.json" @OUT@.json
  row "check, $n cells naming one trace" "@BIN@ check $work/shared-$n"
  rm -rf "$work/shared-$n"
done

python3 bench/lib/hostile_run.py cells "$cells" "$work/cells"
row "show, $cells cells" "@BIN@ show $work/cells"
row "compare, $cells cells" "@BIN@ compare $work/cells $work/cells"
row "baseline, $cells cells" "@BIN@ baseline $work/cells"
row "check, $cells cells" "@BIN@ check $work/cells"
rm -rf "$work/cells"

python3 bench/lib/hostile_run.py diagonal "${DIAGONAL:-5000}" "$work/diagonal"
row "show, a ${DIAGONAL:-5000}-cell diagonal" "@BIN@ show $work/diagonal"
row "check, a ${DIAGONAL:-5000}-cell diagonal" "@BIN@ check $work/diagonal"
row "merge, a ${DIAGONAL:-5000}-cell diagonal" "@BIN@ merge --out @OUT@ $work/diagonal" @OUT@
python3 bench/lib/hostile_run.py points "${POINTS:-4000}" "$work/points"
row "merge, ${POINTS:-4000} server points" "@BIN@ merge --out @OUT@ $work/points" @OUT@
row "compare --axis, ${POINTS:-4000} points" "@BIN@ compare $work/points --axis server"
rm -rf "$work/diagonal" "$work/points"

python3 bench/lib/hostile_run.py cells 10 "$work/small"
python3 bench/lib/hostile_run.py expectations 27000 "$work/expect.toml"
row "read $(($(stat -c %s "$work/expect.toml") >> 20)) MiB of expectations" \
  "@BIN@ merge --out @OUT@ $work/small --expect $work/expect.toml" @OUT@
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
