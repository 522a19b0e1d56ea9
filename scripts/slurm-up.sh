#!/usr/bin/env bash
# A one-node Slurm cluster of kerneltracer's own for the real-Slurm tests (Debian's slurm-wlm +
# munge, as root). Everything it owns lives under $KT_SLURM_HOME: its config, state, spool, logs
# and pid files, and its daemons listen on their own ports. So it never reconfigures, reuses or
# mistakes for its own a Slurm that is already on the machine (a user's cluster, or a slurmd
# registered under another host name): clients reach it only with SLURM_CONF=$KT_SLURM_HOME/slurm.conf,
# which the tests set themselves. Idempotent: keeps its running daemons, returns once the node
# is idle and prints the SLURM_CONF line. No systemd needed: daemons run in the background.
set -euo pipefail

HOME_DIR="${KT_SLURM_HOME:-/var/lib/kerneltracer/slurm}"
CTLD_PORT="${KT_SLURM_CTLD_PORT:-16817}"
SLURMD_PORT="${KT_SLURM_SLURMD_PORT:-16818}"
TIMEOUT_S="${SLURM_UP_TIMEOUT_S:-90}"
CONF="$HOME_DIR/slurm.conf"
STATE="$HOME_DIR/state"
LOGS="$HOME_DIR/log"
RUN="$HOME_DIR/run"

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-up: must run as root" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends slurm-wlm munge
fi

mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge "$STATE/ctld" "$STATE/d" "$LOGS" "$RUN"
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge 2>/dev/null || true
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key

cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
real_mem=$((mem_mb * 9 / 10))
def_mem=$((real_mem / cpus / 2))
conf=$(cat <<CONF
# Written by kerneltracer's scripts/slurm-up.sh: a single-node cluster for its tests.
ClusterName=kt-ci
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.log
MinJobAge=600
KillWait=10
SchedulerParameters=sched_interval=2
DefMemPerCPU=$def_mem
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
)
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$conf" ]; then
    printf '%s\n' "$conf" > "$CONF.tmp"
    mv "$CONF.tmp" "$CONF"
    changed=1
else
    changed=0
fi
export SLURM_CONF="$CONF"

# Ours is running when its pid file names a live (non-zombie) process started with our config:
# a daemon of another Slurm on this machine never counts, whatever its name.
ours() {
    local pid
    pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    grep -q '^[^Z]' <(ps -o stat= -p "$pid" 2>/dev/null) || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-f $CONF"
}
# munged is shared: any live one answers for this host's key.
munge_running() { ps -C munged -o stat= 2>/dev/null | grep -qv '^Z'; }

if ! munge_running; then
    runuser -u munge -- /usr/sbin/munged --force
fi
if [ "$changed" = 1 ] && ours slurmctld; then
    scontrol reconfigure || true  # a new config: let our running daemons pick it up
fi
if ! ours slurmctld; then
    /usr/sbin/slurmctld -f "$CONF"
fi
if ! ours slurmd; then
    /usr/sbin/slurmd -f "$CONF" -N localhost
fi

dump_logs() {
    for f in "$LOGS/slurmctld.log" "$LOGS/slurmd.log" /var/log/munge/munged.log; do
        echo "--- $f (last 40 lines)" >&2
        tail -n 40 "$f" >&2 2>/dev/null || echo "(missing)" >&2
    done
}

deadline=$((SECONDS + TIMEOUT_S))
while :; do
    state=$(sinfo -h -N -n localhost -o '%T' 2>/dev/null | head -n1 || true)
    case "$state" in
        idle | mixed | allocated | completing) break ;;
        down* | drain* | fail*) scontrol update NodeName=localhost State=RESUME >/dev/null 2>&1 || true ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "slurm-up: node not ready after ${TIMEOUT_S}s (sinfo state: '${state:-no answer}')" >&2
        dump_logs
        exit 1
    fi
    sleep 1
done
echo "slurm-up: kerneltracer's one-node test cluster ready (sinfo: $state, $cpus CPUs, RealMemory=${real_mem}M, ports $CTLD_PORT/$SLURMD_PORT)"
echo "SLURM_CONF=$CONF"
