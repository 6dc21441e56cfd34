slurmstepd: error: slurm_get_node_energy: Socket timed out on send/recv operation
slurmstepd: error: _get_joules_task: can't get info from slurmd
slurmstepd: error: If munged is up, restart with --num-threads=10
slurmstepd: error: Munge encode failed: Failed to access "/var/run/munge/munge.socket.2": Input/output error
slurmstepd: error: authentication: Socket communication error
slurmstepd: error: slurm_get_node_energy: Protocol authentication error
slurmstepd: error: _get_joules_task: can't get info from slurmd
/work2/05861/tg851601/stampede2/code/rsmas_insar/minsar/utils/copy_data_to_tmp.bash: line 124: /bin/mv: Input/output error
/work2/05861/tg851601/stampede2/code/rsmas_insar/minsar/utils/copy_data_to_tmp.bash: /scratch/01255/siliu/collect_distribute/bin/distribute.bash: /bin/bash: bad interpreter: Input/output error
/work2/05861/tg851601/stampede2/code/rsmas_insar/minsar/utils/copy_data_to_tmp.bash: line 124: /bin/mv: Input/output error
/work2/05861/tg851601/stampede2/code/rsmas_insar/minsar/utils/copy_data_to_tmp.bash: /scratch/01255/siliu/collect_distribute/bin/distribute.bash: /bin/bash: bad interpreter: Input/output error
