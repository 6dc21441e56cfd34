# Sourced by tests/integration/slurm.sh and watch.sh: configures and starts a single-node Slurm
# (munge, MariaDB, slurmdbd, slurmctld, slurmd) on loopback in a temp dir. Sets T, SLURM_CONF,
# NODE, CLUSTER; registers cleanup on EXIT. Needs root (slurmd) and the Debian packages
# slurm-wlm slurmdbd mariadb-server munge. Exits 77 (skip) when they are missing.

for c in slurmctld slurmd slurmdbd sacct sbatch munged mariadbd mariadb-install-db; do
  if ! command -v "$c" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$c" ]; then
    echo "SKIP: $c not installed (apt-get install slurm-wlm slurmdbd mariadb-server munge)"; exit 77
  fi
done
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root to run slurmd"; exit 77; fi
export PATH="/usr/sbin:$PATH"

T=$(mktemp -d /tmp/bp-slurm.XXXXXX)
chmod 755 "$T"
CLUSTER=bptest
NODE=$(hostname -s)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
DB_PORT=$(free_port); DBD_PORT=$(free_port); CTLD_PORT=$(free_port); SLURMD_PORT=$(free_port)

slurm_cleanup() {
  local rc=$?
  for p in slurmd slurmctld slurmdbd mariadb munged; do
    if [ -f "$T/run/$p.pid" ]; then
      local pid; pid=$(cat "$T/run/$p.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    fi
  done
  sleep 1
  for p in slurmd slurmctld slurmdbd mariadb munged; do
    if [ -f "$T/run/$p.pid" ]; then
      local pid; pid=$(cat "$T/run/$p.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    fi
  done
  # job cgroups left by slurmd
  find /sys/fs/cgroup/*/slurm_"$NODE"_bp* -depth -type d -exec rmdir {} \; 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
  exit $rc
}
trap slurm_cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$T"/{etc,run,log,munge,mysql,spool/ctld,spool/d,out}
chmod 755 "$T/munge"

wait_for() {  # wait_for SECONDS DESCRIPTION CMD...
  local secs=$1 what=$2; shift 2
  for _ in $(seq 1 $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "FAIL: $what did not come up"; tail -n 30 "$T"/log/*.log 2>/dev/null; exit 1
}

# munge
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
munged --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
  --pid-file="$T/run/munged.pid" --log-file="$T/log/munged.log" --seed-file="$T/munge/seed"
wait_for 10 munged test -S "$T/munge/munge.socket"

# MariaDB on loopback TCP (random port), for slurmdbd
mariadb-install-db --no-defaults --datadir="$T/mysql" --user=root --auth-root-authentication-method=normal \
  --skip-test-db >"$T/log/mariadb-install.log" 2>&1
mariadbd --no-defaults --datadir="$T/mysql" --user=root --bind-address=127.0.0.1 --port="$DB_PORT" \
  --socket="$T/run/mysql.sock" --pid-file="$T/run/mariadb.pid" --log-error="$T/log/mariadb.log" \
  --innodb-buffer-pool-size=64M --skip-log-bin &
wait_for 60 mariadb mariadb --no-defaults -uroot --socket="$T/run/mysql.sock" -e 'select 1'
mariadb --no-defaults -uroot --socket="$T/run/mysql.sock" -e \
  "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'bp-slurm-pw'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';"

MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
CGROUP_MODE=none
if [ -d /sys/fs/cgroup/memory ] && mkdir /sys/fs/cgroup/memory/bp-probe.$$ 2>/dev/null; then
  rmdir /sys/fs/cgroup/memory/bp-probe.$$; CGROUP_MODE=v1
fi

cat >"$T/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$T/run/slurmdbd.pid
LogFile=$T/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=bp-slurm-pw
StorageLoc=slurm_acct_db_bp
CONF
chmod 600 "$T/etc/slurmdbd.conf"

if [ "$CGROUP_MODE" = v1 ]; then
  PROCTRACK=proctrack/cgroup; TASK=task/cgroup; GATHER=jobacct_gather/cgroup; GATHER_PARAMS=
  cat >"$T/etc/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
CONF
else
  PROCTRACK=proctrack/linuxproc; TASK=task/none; GATHER=jobacct_gather/linux
  GATHER_PARAMS=JobAcctGatherParams=OverMemoryKill  # memory limit enforced by polling instead of cgroups
fi

cat >"$T/etc/slurm.conf" <<CONF
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/spool/ctld
SlurmdSpoolDir=$T/spool/d
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=$PROCTRACK
TaskPlugin=$TASK
JobAcctGatherType=$GATHER
JobAcctGatherFrequency=1
$GATHER_PARAMS
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$T/munge/munge.socket
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
DefMemPerCPU=256
MpiDefault=none
ReturnToService=2
OverTimeLimit=0
KillWait=2
MinJobAge=600
InactiveLimit=0
SlurmdTimeout=30
MessageTimeout=10
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=8 RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$T/etc/slurm.conf"

slurmdbd  # reads slurmdbd.conf beside $SLURM_CONF
wait_for 60 slurmdbd bash -c "grep -q 'slurmdbd version .* started' $T/log/slurmdbd.log"
sacctmgr -i add cluster "$CLUSTER" >"$T/log/sacctmgr.log" 2>&1 || true
slurmctld -f "$SLURM_CONF"
wait_for 60 slurmctld scontrol ping
slurmd -f "$SLURM_CONF" -N "$NODE"
wait_for 60 "slurmd (node idle)" bash -c "sinfo -h -N -o %t | grep -qE '^(idle|mix)'"
echo "slurm up in $T: cluster=$CLUSTER node=$NODE cgroup=$CGROUP_MODE proctrack=$PROCTRACK"
