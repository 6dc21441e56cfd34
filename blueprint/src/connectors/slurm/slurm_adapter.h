// The Slurm adapter (SPEC §9, FORMATS §6): which jobs ended and each attempt's ExecutionContext,
// from `sacct --parsable2 --duplicates` (job, array task, het component and step rows) and
// `scontrol show job -o` (StdOut/StdErr while the controller still knows the job).
//
//   by_job(ID)           sacct -j ID: every array task / het component, every requeued attempt
//                        (--duplicates; attempt = 0, 1, ... oldest first).
//   ended_between(a, b)  sacct -S/-E with terminal states, keeping job rows whose End is in [a, b].
//
// Evidence named for the files step: the job's StdOut/StdErr (scontrol, else the -o/-e of the
// SubmitLine, else WorkDir/slurm-%j.out; %j %A %a %x %u %N %% expanded) and the job's sacct rows
// written to a temp file (kind scheduler, like a bundle's sacct.txt).
//
// sacct and scontrol run through the blueprint's process runner (process/process_runner.h), never
// a shell: `timeout` (config, default 60 s) bounds each run, then the command's process group is
// SIGKILLed; SLURM_TIME_FORMAT=%s and SLURM_CONF (config slurm_conf) are passed in its environment.
// A sacct that fails, hangs or prints more than 1 GiB fails the query with an error naming the
// command as run, how it ended and its stderr. A scontrol that exits non-zero (the controller forgot
// the job) is not an error; one that cannot run, hangs or prints more than 1 MiB is not asked again
// in that query (one timeout per query, not per job), and that attempt and each later one carry a
// "slurm:scontrol" error report saying so (their StdOut/StdErr come from the SubmitLine).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attribution/model.h"
#include "connectors/connector.h"

namespace attribution::blueprint::slurm {

// "gpu-[01-04,07]" → gpu-01 … gpu-04, gpu-07; "a[1-2]-b[1-2],c" → cartesian, in order.
std::vector<std::string> expand_hostlist(const std::string& list);

// One sacct --parsable2 row keyed by column name.
struct SacctRow {
  std::map<std::string, std::string> f;
  const std::string& operator[](const std::string& k) const;
};

// Groups sacct rows (job rows followed by their step rows) into attempts. `cluster` is used when
// the Cluster column is empty. Times: epoch seconds (SLURM_TIME_FORMAT=%s) or local ISO 8601.
std::vector<WorkloadAttempt> attempts_from_sacct(const std::vector<SacctRow>& rows, const std::string& cluster,
                                                 std::vector<std::vector<SacctRow>>* rows_per_attempt = nullptr);

// Parses `sacct --parsable2 --noheader` output for the given columns (the last column may hold '|').
std::vector<SacctRow> parse_sacct(const std::string& text, const std::vector<std::string>& columns);

// Expands a Slurm filename pattern (%j %J %A %a %x %u %N %n %t %s %%) for a job.
std::string expand_output_pattern(const std::string& pattern, const ExecutionContext& context,
                                  const std::string& job_id_raw, const std::string& workdir);

// Output paths named by an sbatch command line (-o/--output, -e/--error); empty when absent.
void output_options_from_submit_line(const std::string& submit_line, std::string& out, std::string& err);

}  // namespace attribution::blueprint::slurm
