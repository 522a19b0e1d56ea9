#!/usr/bin/env bash
# Stops the daemons scripts/slurm-up.sh started (by their pid files under $KT_SLURM_HOME), and
# nothing else: another Slurm and the shared munged are left alone.
set -euo pipefail
HOME_DIR="${KT_SLURM_HOME:-/var/lib/kerneltracer/slurm}"
CONF="$HOME_DIR/slurm.conf"
for daemon in slurmd slurmctld; do
    pid=$(cat "$HOME_DIR/run/$daemon.pid" 2>/dev/null) || continue
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-f $CONF"; then
        kill "$pid"
        echo "slurm-down: stopped $daemon (pid $pid)"
    fi
done
