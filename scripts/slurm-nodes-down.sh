#!/usr/bin/env bash
# Stops what scripts/slurm-nodes-up.sh started, and only that: its daemons (by their pid files,
# checked against their command lines), every process inside its namespaces (job steps and
# tasks included), then the namespaces themselves (the bridge and veths go with them, and the
# per-node /tmp mounts with the last process of each node) and /etc/netns/<its namespaces>.
# Prints what is left, if anything, and fails then. The config dir keeps the logs.
set -euo pipefail
HOME_DIR="${KT_SLURM_NODES_HOME:-/var/lib/kerneltracer/slurm-nodes}"
PREFIX="${KT_SLURM_NODES_PREFIX:-ktsn-}"
CONF="$HOME_DIR/slurm.conf"
RUN="$HOME_DIR/run"
MUNGE="$HOME_DIR/munge"
OWNED="$RUN/namespaces"

[ "$(id -u)" -eq 0 ] || { echo "slurm-nodes-down: must run as root" >&2; exit 1; }

mapfile -t namespaces < <(cat "$OWNED" 2>/dev/null || true)

ours() {  # pid file, text its command line must hold
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" && echo "$pid"
}
in_namespaces() {
    local ns
    for ns in "${namespaces[@]}"; do
        ip netns pids "$ns" 2>/dev/null || true
    done
}

pids=()
for f in "$RUN"/slurmd.*.pid "$RUN/slurmctld.pid"; do
    [[ "$f" == *.daemon.pid ]] && continue
    pid=$(ours "$f" "-f $CONF") && pids+=("$pid")
done
pid=$(ours "$MUNGE/munged.pid" "$MUNGE/munge.socket") && pids+=("$pid")
mapfile -t inside < <(in_namespaces)
pids+=("${inside[@]}")
if [ "${#pids[@]}" -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do
        alive=()
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
        [ "${#alive[@]}" -eq 0 ] && break
        sleep 0.1
    done
    [ "${#alive[@]}" -gt 0 ] && kill -KILL "${alive[@]}" 2>/dev/null || true
    # Processes that started inside a namespace while we waited (a job step being launched).
    mapfile -t late < <(in_namespaces)
    [ "${#late[@]}" -gt 0 ] && kill -KILL "${late[@]}" 2>/dev/null || true
    sleep 0.2
fi
for ns in "${namespaces[@]}"; do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
done
rm -f "$OWNED" "$RUN"/*.pid "$MUNGE/munge.socket"*
rm -rf "$HOME_DIR/nodes"

# What is left of ours, if anything: fail and say it.
left=""
listed=$(ip netns list | awk '{print $1}')
for ns in "${namespaces[@]}"; do
    grep -qxF -- "$ns" <<<"$listed" && left="$left netns:$ns"
    [ -e "/etc/netns/$ns" ] && left="$left /etc/netns/$ns"
done
for p in "${pids[@]}"; do
    [ -e "/proc/$p" ] && grep -q '^[^Z]' <(ps -o stat= -p "$p" 2>/dev/null) && left="$left pid:$p"
done
if grep -qF -- "$HOME_DIR/" /proc/*/mountinfo 2>/dev/null; then left="$left mounts-under:$HOME_DIR"; fi
if [ -n "$left" ]; then
    echo "slurm-nodes-down: could not remove:$left" >&2
    exit 1
fi
echo "slurm-nodes-down: stopped ${#pids[@]} process(es), removed ${#namespaces[@]} namespace(s)"
