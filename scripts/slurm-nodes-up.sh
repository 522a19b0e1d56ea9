#!/usr/bin/env bash
# A multi-node Slurm cluster of kerneltracer's own on this one machine, for the tests of shards
# on several hosts sharing one run dir (Debian's slurm-wlm + munge, as root).
#
# Each node is a slurmd in its own network namespace (its own address on a private bridge), UTS
# namespace (its own hostname) and mount namespace (its own /tmp); slurmctld runs in a namespace
# of its own too. The bridge itself lives in a namespace ("hub"), so no interface, address or
# route is added to the machine's own network: every address is inside namespaces this script
# made. Munge is a munged of its own (own key and socket), so stopping the cluster stops it too.
#
# Everything it owns is named: $KT_SLURM_NODES_HOME (config, state, logs, pid files, the shared
# dir), the namespaces ${PREFIX}hub, ${PREFIX}ctl, ${PREFIX}n1..nN (PREFIX=$KT_SLURM_NODES_PREFIX)
# and /etc/netns/${PREFIX}* (each namespace's /etc/hosts). It refuses to start when a namespace
# of those names exists that it did not make, and it never signals a process outside them but
# the daemons it started (checked by their pid files and command lines).
#
# Clients reach the cluster through $KT_SLURM_NODES_HOME/bin (sbatch, squeue, ... run inside the
# controller's namespace: the login node) with SLURM_CONF=$KT_SLURM_NODES_HOME/slurm.conf.
# $KT_SLURM_NODES_HOME/shared is the storage every node sees (as NFS would be); /tmp is per node.
#
# Idempotent: a cluster already up is kept. Fails, saying why, when it cannot start within
# $SLURM_NODES_UP_TIMEOUT_S (default 60 s). scripts/slurm-nodes-down.sh stops it all.
set -euo pipefail

HOME_DIR="${KT_SLURM_NODES_HOME:-/var/lib/kerneltracer/slurm-nodes}"
PREFIX="${KT_SLURM_NODES_PREFIX:-ktsn-}"
NODES="${KT_SLURM_NODES:-3}"
NET="${KT_SLURM_NODES_NET:-10.213.57}"  # a /24 that exists only inside the namespaces
TIMEOUT_S="${SLURM_NODES_UP_TIMEOUT_S:-60}"
CTLD_PORT=16827
SLURMD_PORT=16828
CONF="$HOME_DIR/slurm.conf"
RUN="$HOME_DIR/run"
LOGS="$HOME_DIR/log"
MUNGE="$HOME_DIR/munge"
OWNED="$RUN/namespaces"
T0=$(date +%s%N)

refuse() {
    echo "slurm-nodes-up: cannot start: $*" >&2
    exit 1
}

[ "$(id -u)" -eq 0 ] || refuse "must run as root (it makes network namespaces and a bridge)"
case "$NODES" in '' | *[!0-9]*) refuse "KT_SLURM_NODES=$NODES is not a number" ;; esac
[ "$NODES" -ge 1 ] && [ "$NODES" -le 9 ] || refuse "KT_SLURM_NODES=$NODES: between 1 and 9"
case "$PREFIX" in *[!a-z0-9-]* | '') refuse "KT_SLURM_NODES_PREFIX=$PREFIX: use a-z, 0-9, -" ;; esac
for tool in ip unshare nsenter mount setsid; do
    command -v "$tool" >/dev/null || refuse "\`$tool\` not found"
done
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }; } \
        || refuse "slurm-wlm and munge are not installed and apt-get could not install them"
fi
ip netns list >/dev/null 2>&1 || refuse "\`ip netns\` does not work here (no network namespaces?)"

node_names=()
for i in $(seq 1 "$NODES"); do node_names+=("kt-n$i"); done
namespaces=("${PREFIX}hub" "${PREFIX}ctl")
for i in $(seq 1 "$NODES"); do namespaces+=("${PREFIX}n$i"); done

# A pid file names one of ours when that process is alive and runs with our config (slurm) or
# our socket (munged): a daemon of any other Slurm never counts, whatever its name.
ours() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    grep -q '^[^Z]' <(ps -o stat= -p "$pid" 2>/dev/null) || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2"
}
all_up() {
    ours "$MUNGE/munged.pid" "$MUNGE/munge.socket" || return 1
    ours "$RUN/slurmctld.pid" "-f $CONF" || return 1
    for n in "${node_names[@]}"; do ours "$RUN/slurmd.$n.pid" "-f $CONF" || return 1; done
}

sinfo_() { SLURM_CONF="$CONF" ip netns exec "${PREFIX}ctl" sinfo "$@"; }

wait_ready() {
    local deadline=$((SECONDS + TIMEOUT_S - (($(date +%s%N) - T0) / 1000000000))) states
    while :; do
        states=$(sinfo_ -h -N -o '%N %T' 2>/dev/null | sort -u || true)
        local ready=0
        for n in "${node_names[@]}"; do
            case "$(awk -v n="$n" '$1 == n {print $2}' <<<"$states")" in
                idle | mixed | allocated | completing) ready=$((ready + 1)) ;;
                down* | drain* | fail*)
                    SLURM_CONF="$CONF" ip netns exec "${PREFIX}ctl" \
                        scontrol update NodeName="$n" State=RESUME >/dev/null 2>&1 || true ;;
            esac
        done
        [ "$ready" -eq "$NODES" ] && return 0
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "slurm-nodes-up: cannot start: $ready of $NODES nodes ready after ${TIMEOUT_S}s (sinfo: ${states:-no answer})" >&2
            for f in "$LOGS/slurmctld.log" "$LOGS"/slurmd.*.log "$MUNGE/munged.log"; do
                echo "--- $f (last 20 lines)" >&2
                tail -n 20 "$f" >&2 2>/dev/null || echo "(missing)" >&2
            done
            return 1
        fi
        sleep 0.5
    done
}

elapsed() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }
report() {
    echo "slurm-nodes-up: kerneltracer's ${NODES}-node test cluster ready in $(elapsed)s (nodes ${node_names[*]}, namespaces ${namespaces[*]})"
    echo "SLURM_CONF=$CONF"
    echo "PATH=$HOME_DIR/bin:\$PATH"
    echo "KT_SLURM_NODES_SHARED=$HOME_DIR/shared"
}

# Daemons in the foreground of their own session (-D), so the pid we keep is the daemon's:
# nsenter, unshare and sh each exec the next. nsenter (not `ip netns exec`, which remounts
# /sys and so hides the cgroup tree slurmd needs) joins the network namespace; the private
# mount namespace gets the namespace's /etc/hosts and, on a node, the node's own /tmp (bind
# mounts that exist only there and end with its last process).
# A checkout under /tmp (CI may clone there) stays visible on every node at its own path, as
# a home directory on NFS would: it is bound into the node's /tmp before that hides the host's.
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
case "$REPO/" in /tmp/?*) KEEP=$REPO ;; *) KEEP="" ;; esac
# The bound checkout by path and inode: a checkout deleted and cloned again at the same path
# (a CI run killed and restarted) is another directory, which running nodes would not see.
KEEP_ID=${KEEP:+"$KEEP $(stat -c '%d:%i' "$KEEP")"}
start() {  # namespace, hostname, pid file, log, node tmp ("" for none), command...
    local ns=$1 host=$2 pidfile=$3 log=$4 tmp=$5
    shift 5
    setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private \
        sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts \
               && { [ -z "$3" ] || { { [ -z "$4" ] || { mkdir -p "$3/${4#/tmp/}" \
                    && mount --bind "$4" "$3/${4#/tmp/}"; }; } && mount --rbind "$3" /tmp; }; } \
               && shift 4 && exec "$@"' \
        sh "$host" "/etc/netns/$ns/hosts" "$tmp" "$KEEP" "$@" </dev/null >>"$log" 2>&1 &
    echo $! >"$pidfile"
}
start_node() {  # index
    local n="kt-n$1"
    mkdir -p "$HOME_DIR/nodes/$n/tmp" "$HOME_DIR/state/$n"
    chmod 1777 "$HOME_DIR/nodes/$n/tmp"
    start "${PREFIX}n$1" "$n" "$RUN/slurmd.$n.pid" "$LOGS/slurmd.$n.out" "$HOME_DIR/nodes/$n/tmp" \
        /usr/sbin/slurmd -D -f "$CONF" -N "$n"
}

# A node whose slurmd is gone (a test that "lost" it) comes back alone, with an empty /tmp,
# while the controller and the other nodes go on; so do nodes that were started for another
# checkout under /tmp, which they would not see.
if [ -f "$CONF" ] && ours "$MUNGE/munged.pid" "$MUNGE/munge.socket" \
    && ours "$RUN/slurmctld.pid" "-f $CONF"; then
    [ "$(cat "$RUN/keep" 2>/dev/null || true)" = "$KEEP_ID" ] && same_keep=1 || same_keep=""
    for i in $(seq 1 "$NODES"); do
        [ -n "$same_keep" ] && ours "$RUN/slurmd.kt-n$i.pid" "-f $CONF" && continue
        [ -e "/run/netns/${PREFIX}n$i" ] || continue
        left=$(ip netns pids "${PREFIX}n$i" 2>/dev/null || true)
        [ -z "$left" ] || kill -KILL $left 2>/dev/null || true
        rm -rf "$HOME_DIR/nodes/kt-n$i/tmp"
        start_node "$i"
        echo "slurm-nodes-up: restarted node kt-n$i"
    done
    echo "$KEEP_ID" >"$RUN/keep"
fi

if all_up && [ -f "$CONF" ]; then
    wait_ready || exit 1
    report
    exit 0
fi

# Anything half-started of ours goes first; a namespace of these names that is not ours stops us.
if [ -f "$OWNED" ] || [ -f "$RUN/slurmctld.pid" ] || [ -f "$MUNGE/munged.pid" ]; then
    KT_SLURM_NODES_HOME="$HOME_DIR" KT_SLURM_NODES_PREFIX="$PREFIX" \
        bash "$(dirname "$0")/slurm-nodes-down.sh" >/dev/null
fi
existing=$(ip netns list | awk '{print $1}')
for ns in "${namespaces[@]}"; do
    if grep -qxF -- "$ns" <<<"$existing"; then
        refuse "network namespace $ns exists and is not this script's (set KT_SLURM_NODES_PREFIX to use other names)"
    fi
    [ -e "/etc/netns/$ns" ] && refuse "/etc/netns/$ns exists and is not this script's"
done

mkdir -p "$RUN" "$LOGS" "$HOME_DIR/state/ctld" "$HOME_DIR/shared" "$HOME_DIR/bin" "$MUNGE"
chmod 0755 "$HOME_DIR" "$HOME_DIR/shared"
chmod 0711 "$MUNGE"
: >"$OWNED"
# From here on a failure takes down what was made: a refused start leaves nothing behind.
teardown() {
    KT_SLURM_NODES_HOME="$HOME_DIR" KT_SLURM_NODES_PREFIX="$PREFIX" \
        bash "$(dirname "$0")/slurm-nodes-down.sh" >/dev/null || true
}
trap 'status=$?; [ "$status" -eq 0 ] || teardown' EXIT

# The network: a bridge in the hub namespace, one veth pair per namespace into it.
ip netns add "${PREFIX}hub"
echo "${PREFIX}hub" >>"$OWNED"
ip -n "${PREFIX}hub" link add br0 type bridge
ip -n "${PREFIX}hub" link set br0 up
ip -n "${PREFIX}hub" link set lo up
hosts="127.0.0.1 localhost
$NET.1 kt-ctl"
for i in $(seq 1 "$NODES"); do hosts="$hosts
$NET.$((10 + i)) kt-n$i"; done
join() {  # namespace, its address, its hostname
    local ns=$1 addr=$2 port=$3
    ip netns add "$ns"
    echo "$ns" >>"$OWNED"
    ip link add eth0 netns "$ns" type veth peer name "$port" netns "${PREFIX}hub"
    ip -n "${PREFIX}hub" link set "$port" master br0 up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    printf '%s\n' "$hosts" >"/etc/netns/$ns/hosts"
}
join "${PREFIX}ctl" "$NET.1" p-ctl
for i in $(seq 1 "$NODES"); do join "${PREFIX}n$i" "$NET.$((10 + i))" "p-n$i"; done

# Munge of its own: own key, own socket (Slurm finds it through AuthInfo).
[ -s "$MUNGE/munge.key" ] || dd if=/dev/urandom of="$MUNGE/munge.key" bs=1024 count=1 status=none
chmod 0400 "$MUNGE/munge.key"
/usr/sbin/munged --force --key-file="$MUNGE/munge.key" --socket="$MUNGE/munge.socket" \
    --pid-file="$MUNGE/munged.pid" --seed-file="$MUNGE/munged.seed" --log-file="$MUNGE/munged.log" \
    || refuse "munged did not start (see $MUNGE/munged.log)"

cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
real_mem=$((mem_mb * 9 / 10 / NODES))
def_mem=$((real_mem / cpus / 2))
node_lines=""
for i in $(seq 1 "$NODES"); do node_lines="${node_lines}NodeName=kt-n$i NodeAddr=$NET.$((10 + i)) CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
"; done
cat >"$CONF.tmp" <<CONF
# Written by kerneltracer's scripts/slurm-nodes-up.sh: a ${NODES}-node cluster for its tests.
ClusterName=kt-nodes
SlurmctldHost=kt-ctl($NET.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE/munge.socket
CredType=cred/munge
StateSaveLocation=$HOME_DIR/state/ctld
SlurmdSpoolDir=$HOME_DIR/state/%n
SlurmctldPidFile=$RUN/slurmctld.daemon.pid
SlurmdPidFile=$RUN/slurmd.%n.daemon.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.log
MinJobAge=600
KillWait=5
DefMemPerCPU=$def_mem
${node_lines}PartitionName=nodes Nodes=kt-n[1-$NODES] Default=YES MaxTime=INFINITE State=UP
CONF
mv "$CONF.tmp" "$CONF"
rm -rf "$HOME_DIR/state/ctld"/* "$LOGS/jobcomp.log"  # a fresh cluster: no jobs of an old one

# The clients, as a login node runs them: inside the controller's namespace.
for tool in sbatch squeue scontrol sacct scancel sinfo srun; do
    cat >"$HOME_DIR/bin/$tool.tmp" <<WRAP
#!/bin/sh
# scripts/slurm-nodes-up.sh: $tool of kerneltracer's test cluster, from its login namespace.
export SLURM_CONF="$CONF"
exec ip netns exec ${PREFIX}ctl /usr/bin/$tool "\$@"
WRAP
    chmod 0755 "$HOME_DIR/bin/$tool.tmp"
    mv "$HOME_DIR/bin/$tool.tmp" "$HOME_DIR/bin/$tool"
done

start "${PREFIX}ctl" kt-ctl "$RUN/slurmctld.pid" "$LOGS/slurmctld.out" "" \
    /usr/sbin/slurmctld -D -f "$CONF"
echo "$KEEP_ID" >"$RUN/keep"
for i in $(seq 1 "$NODES"); do start_node "$i"; done

wait_ready || exit 1
report
