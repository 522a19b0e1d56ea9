#!/usr/bin/env bash
# A one-node Slurm cluster on this machine for CI (Debian's slurm-wlm + munge), as root.
# Idempotent: installs only what is missing, keeps an existing munge key and running daemons,
# and returns once `sinfo` shows the node idle. No systemd needed: daemons run in the background.
set -euo pipefail

CONF_DIR=/etc/slurm
STATE=/var/spool/slurm
LOGS=/var/log/slurm
JOBCOMP="$LOGS/jobcomp.log"
TIMEOUT_S="${SLURM_UP_TIMEOUT_S:-90}"

if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-up: must run as root" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends slurm-wlm munge
fi

mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge "$CONF_DIR" "$STATE/ctld" "$STATE/d" "$LOGS"
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
# Written by scripts/slurm-up.sh: a single-node cluster for kerneltracer's CI.
ClusterName=kt-ci
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
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
JobCompLoc=$JOBCOMP
MinJobAge=600
KillWait=10
SchedulerParameters=sched_interval=2
DefMemPerCPU=$def_mem
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
)
if [ ! -f "$CONF_DIR/slurm.conf" ] || [ "$(cat "$CONF_DIR/slurm.conf")" != "$conf" ]; then
    printf '%s\n' "$conf" > "$CONF_DIR/slurm.conf"
    changed=1
else
    changed=0
fi

# A daemon counts as running if a live (non-zombie) process has its name: without an init
# that reaps, the daemons' forked parents linger as zombies under the same name.
running() { ps -C "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }

if ! running munged; then
    runuser -u munge -- /usr/sbin/munged --force
fi
if [ "$changed" = 1 ] && running slurmctld; then
    # A new config: let the running daemons pick it up.
    scontrol reconfigure || true
fi
if ! running slurmctld; then
    /usr/sbin/slurmctld
fi
if ! running slurmd; then
    /usr/sbin/slurmd -N localhost
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
echo "slurm-up: one-node cluster ready (sinfo: $state, $cpus CPUs, RealMemory=${real_mem}M)"
