# Sourced: the matrix a release gates on, as `continuity run` arguments in
# the array `matrix`, by default 400 cells (five targets × five scenarios ×
# four agents × two clients × two server versions). TARGETS, SCENARIOS,
# AGENTS, CLIENTS and SERVERS (space-separated) choose a smaller one.
targets=${TARGETS:-agent gateway gateway-reload rivet rivet-engine}
scenarios=${SCENARIOS:-native-continuity recreate-rehydrate sandbox-reconnect native-load restart-mid-turn}
agents=${AGENTS:-mock opencode claude codex}
clients=${CLIENTS:-rust ts-sdk}
servers=${SERVERS:-0.4.0 0.4.2}
matrix=()
for t in $targets; do matrix+=(--target "$t"); done
for s in $scenarios; do matrix+=(--scenario "$s"); done
for a in $agents; do matrix+=(--agent "$a"); done
for c in $clients; do matrix+=(--client "$c"); done
for v in $servers; do matrix+=(--server-version "$v"); done
