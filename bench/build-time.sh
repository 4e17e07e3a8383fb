#!/usr/bin/env bash
# Release build time and binary size of two commits, side by side: each
# commit is cloned into its own folder with its own target dir, then the
# builds alternate (A, B, A, B, ...) so a change in the machine's load
# falls on both. Two figures per build:
#   cold  — `cargo build --release --locked` from an empty target dir
#           (every dependency and the workspace's own crates);
#   ours  — the workspace's own crates only, after `cargo clean -p` of
#           each member (the dependencies stay built): what a developer
#           waits for after an edit.
# Needs the dependencies in cargo's registry cache (offline is fine).
# Run it on a quiet machine: a build uses every core.
#
#   bench/build-time.sh 9248bc9 HEAD            # one round of each
#   ROUNDS=2 bench/build-time.sh OLD NEW
#   KEEP=1 bench/build-time.sh OLD NEW          # keep the clones
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
[ $# -eq 2 ] || { echo "usage: bench/build-time.sh COMMIT_A COMMIT_B" >&2; exit 64; }
rounds=${ROUNDS:-1}
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "work folder: $work" >&2 || trap 'rm -rf "$work"' EXIT

names=()
for rev in "$1" "$2"; do
  sha=$(git -C "$repo" rev-parse --short=7 "$rev^{commit}") || { echo "not a commit: $rev" >&2; exit 64; }
  git clone --quiet --no-checkout "$repo" "$work/$sha"
  git -C "$work/$sha" checkout --quiet "$sha"
  names+=("$sha")
done

secs() { # seconds a command took, to a tenth
  local start; start=$(date +%s%N)
  "$@" >"$work/last.log" 2>&1 || { echo "failed: $*" >&2; tail -20 "$work/last.log" >&2; return 1; }
  echo "scale=1; ($(date +%s%N) - $start) / 1000000000" | bc
}

members() { # -p flags for the workspace's own packages
  cargo metadata --format-version 1 --no-deps --manifest-path "$1/Cargo.toml" |
    python3 -c 'import json,sys; print(" ".join("-p "+p["name"] for p in json.load(sys.stdin)["packages"]))'
}

printf '%-8s %-6s %8s %8s %12s %6s\n' commit round cold_s ours_s binary_bytes load
for round in $(seq 1 "$rounds"); do
  for sha in "${names[@]}"; do
    dir=$work/$sha
    rm -rf "$dir/target"
    load=$(cut -d' ' -f1 /proc/loadavg)
    cold=$(secs cargo build --release --locked --manifest-path "$dir/Cargo.toml") || exit 1
    # shellcheck disable=SC2046 # one -p flag per word
    cargo clean --release --manifest-path "$dir/Cargo.toml" $(members "$dir") >/dev/null 2>&1
    ours=$(secs cargo build --release --locked --manifest-path "$dir/Cargo.toml") || exit 1
    size=$(stat -c %s "$dir/target/release/continuity")
    printf '%-8s %-6s %8s %8s %12s %6s\n' "$sha" "$round" "$cold" "$ours" "$size" "$load"
  done
done
