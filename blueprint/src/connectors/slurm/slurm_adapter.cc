#include "connectors/slurm/slurm_adapter.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "attribution/codec.h"
#include "process/process_runner.h"

namespace attribution::blueprint::slurm {
namespace {

const std::vector<std::string>& sacct_columns() {
  // SubmitLine last: it may contain '|'.
  static const std::vector<std::string> c = {"JobID",   "JobIDRaw",  "JobName",  "Partition", "Account",
                                             "User",    "AllocCPUS", "State",    "ExitCode",  "DerivedExitCode",
                                             "Reason",  "NodeList",  "NNodes",   "Submit",    "Start",
                                             "End",     "Elapsed",   "Timelimit", "Cluster",  "WorkDir",
                                             "AllocTRES", "SubmitLine"};
  return c;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Local offset (seconds east of UTC) at a given time, for zone-less Slurm stamps.
int64_t local_offset_at(time_t t) {
  struct tm lt {};
  localtime_r(&t, &lt);
  return lt.tm_gmtoff;
}

TimeNs parse_slurm_time(const std::string& v) {
  if (v.empty() || v == "Unknown" || v == "None" || v == "N/A") return kNoTime;
  if (all_digits(v)) return static_cast<TimeNs>(std::stoll(v)) * 1'000'000'000LL;
  auto p = parse_rfc3339(v, local_offset_at(time(nullptr)));
  return p.ok() ? p.value : kNoTime;
}

std::string slurm_time_arg(TimeNs t) {
  // sacct -S/-E take local time without zone.
  time_t s = static_cast<time_t>(t / 1'000'000'000LL);
  struct tm lt {};
  localtime_r(&s, &lt);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &lt);
  return buf;
}

std::string iso_utc(TimeNs t) {
  if (t == kNoTime) return "Unknown";
  std::string s = format_rfc3339(t);  // 2024-05-01T10:00:00.000Z
  return s.substr(0, 19);
}

// sacct and scontrol run through the blueprint's process runner (process/process_runner.h: no
// shell, stdin /dev/null, their own process group, never hang) with the adapter's policy: the
// configured timeout bounds each run and SIGKILLs the group at once (both only read; nothing to
// flush); SLURM_TIME_FORMAT and SLURM_CONF reach them through the runner's environment (the
// blueprint's own environment is never changed); stdout is captured up to a cap, stderr bounded.
constexpr uint64_t kSacctMaxStdoutBytes = 1ull << 30;     // ~2 million rows; more: narrow the range
constexpr uint64_t kScontrolMaxStdoutBytes = 1ull << 20;  // one job's record (a het job: a few)

process::Result run_slurm_client(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                 int timeout_s, uint64_t max_stdout_bytes, std::string& out) {
  process::Request request;
  request.argv = argv;
  request.env = env;
  request.limits.timeout_s = timeout_s;
  request.limits.max_stdout_bytes = max_stdout_bytes;
  request.limits.kill_grace_ms = 0;
  return process::run_capture(request, out);
}

// "`SLURM_TIME_FORMAT=%s sacct ... -j 55`: exit 1; stderr: sacct: error: ..." — the command as it
// ran (with the environment the adapter gave it), how it ended, its stderr on one line.
std::string describe_failure(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                             const process::Result& r) {
  std::vector<std::string> words;
  for (const auto& [name, value] : env) words.push_back(name + "=" + value);
  words.insert(words.end(), argv.begin(), argv.end());
  std::string text = fmt::format("`{}`: {}", process::describe_command(words), r.failure());
  std::string stderr_line;
  for (char c : trim(r.stderr_text)) {
    if (c == '\n') stderr_line += " | ";
    else if (c != '\r') stderr_line += c;
  }
  if (!stderr_line.empty()) text += "; stderr: " + stderr_line;
  return text;
}

std::string base_job_id(const std::string& job_id) {
  auto dot = job_id.find('.');
  return dot == std::string::npos ? job_id : job_id.substr(0, dot);
}

bool is_terminal_row(const std::string& state) {
  return state.rfind("RUNNING", 0) != 0 && state.rfind("PENDING", 0) != 0 && state.rfind("SUSPENDED", 0) != 0 &&
         state.rfind("REQUEUE_HOLD", 0) != 0 && state.rfind("CONFIGURING", 0) != 0 && state.rfind("COMPLETING", 0) != 0;
}

// Splits a command line roughly like a shell (quotes, backslashes).
std::vector<std::string> shell_words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < s.size()) cur += s[++i];
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

class SlurmAdapter : public Adapter {
 public:
  struct Options {
    std::string sacct = "sacct", scontrol = "scontrol";
    std::string cluster;          // -M/--clusters for sacct, and the stored cluster name
    std::string slurm_conf;       // SLURM_CONF for the tools
    int timeout_s = 60;
    bool stdout_evidence = true;  // StdOut/StdErr as evidence
    bool sacct_evidence = true;   // the job's sacct rows as scheduler evidence
    std::string scratch_dir;      // where sacct row files go (default: a temp dir)
  };
  explicit SlurmAdapter(Options o) : o_(std::move(o)) {}
  ~SlurmAdapter() override {
    if (!scratch_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(scratch_, ec);
    }
  }
  std::string name() const override { return "slurm"; }

  bool by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) override {
    if (job_id.empty() || job_id.find_first_of(" \t|;") != std::string::npos) {
      error = fmt::format("invalid job id \"{}\"", job_id);
      return false;
    }
    std::vector<std::string> args = {"-a", "-j", job_id};
    scontrol_unusable_.clear();
    return query(args, kNoTime, kNoTime, out, error);
  }

  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) override {
    // Pass 1: job rows that reached a terminal state in the window (sacct's -S/-E select jobs
    // active in it; we keep those whose End is inside). Pass 2: their full rows (steps).
    std::string text;
    std::vector<std::string> args = {"-a", "-X", "-S", slurm_time_arg(from - 1'000'000'000LL), "-E",
                                     slurm_time_arg(to + 1'000'000'000LL), "-s", "CA,CD,DL,F,NF,OOM,PR,TO,BF,RQ"};
    std::vector<SacctRow> rows;
    if (!sacct(args, rows, error)) return false;
    scontrol_unusable_.clear();
    std::set<std::string> ids;
    std::vector<std::string> order;
    for (const auto& r : rows) {
      TimeNs end = parse_slurm_time(r["End"]);
      if (end == kNoTime || end < from || end > to) continue;
      std::string id = base_job_id(r["JobID"]);
      if (ids.insert(id).second) order.push_back(id);
    }
    // Batch the ids (sacct -j takes a comma list).
    for (size_t i = 0; i < order.size(); i += 200) {
      std::string list;
      for (size_t j = i; j < std::min(order.size(), i + 200); ++j) list += (list.empty() ? "" : ",") + order[j];
      std::vector<WorkloadAttempt> batch;
      if (!query({"-a", "-j", list}, from, to, batch, error)) return false;
      for (auto& a : batch) out.push_back(std::move(a));
    }
    return true;
  }

 private:
  std::map<std::string, std::string> env() const {
    std::map<std::string, std::string> e = {{"SLURM_TIME_FORMAT", "%s"}};
    if (!o_.slurm_conf.empty()) e["SLURM_CONF"] = o_.slurm_conf;
    return e;
  }

  bool sacct(const std::vector<std::string>& extra, std::vector<SacctRow>& rows, std::string& error) {
    std::string fields;
    for (const auto& c : sacct_columns()) fields += (fields.empty() ? "" : ",") + c;
    std::vector<std::string> argv = {o_.sacct, "--parsable2", "--noheader", "--duplicates", "-o", fields};
    if (!o_.cluster.empty()) {
      argv.push_back("-M");
      argv.push_back(o_.cluster);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string out;
    process::Result r = run_slurm_client(argv, env(), o_.timeout_s, kSacctMaxStdoutBytes, out);
    if (!r.failure().empty()) {
      error = "sacct failed: " + describe_failure(argv, env(), r);
      return false;
    }
    rows = parse_sacct(out, sacct_columns());
    return true;
  }

  // scontrol show job -o ID → key=value map; empty when the controller forgot the job (scontrol
  // exits non-zero) or scontrol could not answer: then `unusable` says why (not started, timed
  // out, output over the limit, killed by a signal).
  std::map<std::string, std::string> scontrol_job(const std::string& raw_id, std::string& unusable) {
    std::map<std::string, std::string> kv;
    std::vector<std::string> argv = {o_.scontrol, "show", "job", "-o", raw_id};
    std::string out;
    process::Result r = run_slurm_client(argv, env(), o_.timeout_s, kScontrolMaxStdoutBytes, out);
    if (!r.started || r.timed_out || r.truncated || r.signal != 0) unusable = describe_failure(argv, env(), r);
    if (!r.failure().empty()) return kv;
    // Values may contain spaces only in Command/Comment/Reason; StdOut/StdErr/WorkDir are taken up
    // to the next " Key=" token.
    std::string line = out.substr(0, out.find('\n'));
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      auto eq = line.find('=', i);
      if (eq == std::string::npos) break;
      std::string key = line.substr(i, eq - i);
      size_t j = eq + 1;
      // value ends before the next " Word=" where Word has no spaces
      size_t end = line.size();
      for (size_t k = j; k < line.size(); ++k) {
        if (line[k] != ' ') continue;
        size_t e2 = line.find('=', k + 1);
        size_t sp = line.find(' ', k + 1);
        if (e2 != std::string::npos && (sp == std::string::npos || e2 < sp)) {
          end = k;
          break;
        }
      }
      kv[key] = line.substr(j, end - j);
      i = end;
    }
    return kv;
  }

  std::string scratch() {
    if (scratch_.empty()) {
      std::string base = o_.scratch_dir.empty() ? std::filesystem::temp_directory_path().string() : o_.scratch_dir;
      std::string tmpl = base + "/attribution-slurm.XXXXXX";
      std::vector<char> buf(tmpl.begin(), tmpl.end());
      buf.push_back('\0');
      if (mkdtemp(buf.data())) scratch_ = buf.data();
    }
    return scratch_;
  }

  bool query(const std::vector<std::string>& args, TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out,
             std::string& error) {
    std::vector<SacctRow> rows;
    if (!sacct(args, rows, error)) return false;
    std::vector<std::vector<SacctRow>> per;
    auto attempts = attempts_from_sacct(rows, o_.cluster, &per);
    for (size_t i = 0; i < attempts.size(); ++i) {
      auto& a = attempts[i];
      const auto& job_row = per[i].front();
      if (from != kNoTime || to != kNoTime) {
        // time-range mode: only attempts that ended in the window
        if (a.context.end == kNoTime || a.context.end < from || a.context.end > to) continue;
      }
      if (!is_terminal_row(job_row["State"])) continue;  // still running / pending
      add_evidence(a, per[i]);
      out.push_back(std::move(a));
    }
    return true;
  }

  void add_evidence(WorkloadAttempt& a, const std::vector<SacctRow>& rows) {
    const auto& c = a.context;
    std::string first_node = c.nodes.empty() ? "" : c.nodes.front();
    if (o_.sacct_evidence) {
      std::string dir = scratch();
      if (!dir.empty()) {
        std::string safe = c.id;
        for (auto& ch : safe)
          if (ch == '/' || ch == ' ') ch = '_';
        std::string path = fmt::format("{}/sacct-{}-{}.txt", dir, safe, c.attempt);
        std::ofstream f(path);
        f << "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Start|End|Elapsed|NodeList\n";
        for (const auto& r : rows) {
          f << fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}\n", r["JobID"], r["JobName"], r["Partition"], r["Account"],
                           r["AllocCPUS"], r["State"], r["ExitCode"], iso_utc(parse_slurm_time(r["Start"])),
                           iso_utc(parse_slurm_time(r["End"])), r["Elapsed"], r["NodeList"]);
        }
        TextSource src;
        src.name = "sacct";
        src.kind = ObservationKind::kScheduler;
        a.evidence_files.emplace_back(path, src);
      }
    }
    // A job that never started (cancelled while pending) wrote no output.
    if (!o_.stdout_evidence || c.start == kNoTime) return;
    const auto& job = rows.front();
    std::string raw = job["JobIDRaw"].empty() ? c.id : job["JobIDRaw"];
    std::string out_path, err_path;
    // The controller's view is authoritative while it still holds the job (and this attempt is its last).
    // Once scontrol could not answer (hung, missing, ...), the rest of this query does without it,
    // so a hung controller costs one timeout per query, not one per attempt; each attempt says so.
    std::map<std::string, std::string> kv;
    if (scontrol_unusable_.empty()) kv = scontrol_job(raw, scontrol_unusable_);
    if (!scontrol_unusable_.empty()) {
      a.reports.push_back({"slurm:scontrol", "error",
                           scontrol_unusable_ + "; StdOut/StdErr taken from the SubmitLine or slurm-%j.out", 0, 0});
    }
    if (!kv.empty()) {
      out_path = kv["StdOut"];
      err_path = kv["StdErr"];
    }
    if (out_path.empty()) {
      std::string o, e;
      output_options_from_submit_line(job["SubmitLine"], o, e);
      std::string pattern = o.empty() ? (c.labels.count("array_job_id") ? "slurm-%A_%a.out" : "slurm-%j.out") : o;
      out_path = expand_output_pattern(pattern, c, raw, job["WorkDir"]);
      err_path = e.empty() ? "" : expand_output_pattern(e, c, raw, job["WorkDir"]);
    }
    auto add = [&](const std::string& path, const char* what) {
      if (path.empty() || path == "/dev/null") return;
      for (const auto& [p, s] : a.evidence_files)
        if (p == path) return;
      TextSource src;
      src.name = path;
      src.kind = ObservationKind::kAppLog;
      src.node = first_node;  // the batch host; lines may name their own node
      src.utc_offset_s = local_offset_at(c.end == kNoTime ? time(nullptr) : static_cast<time_t>(c.end / 1'000'000'000LL));
      src.note = fmt::format("Slurm {} of job {}", what, c.id);
      a.evidence_files.emplace_back(path, src);
    };
    add(out_path, "StdOut");
    add(err_path, "StdErr");
  }

  Options o_;
  std::string scratch_;
  std::string scontrol_unusable_;  // why scontrol could not answer during the current query
};

}  // namespace

const std::string& SacctRow::operator[](const std::string& k) const {
  static const std::string empty;
  auto it = f.find(k);
  return it == f.end() ? empty : it->second;
}

std::vector<SacctRow> parse_sacct(const std::string& text, const std::vector<std::string>& columns) {
  std::vector<SacctRow> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    SacctRow r;
    size_t start = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i + 1 == columns.size()) {
        r.f[columns[i]] = start <= line.size() ? line.substr(start) : "";
        break;
      }
      size_t bar = line.find('|', start);
      if (bar == std::string::npos) {
        r.f[columns[i]] = start <= line.size() ? line.substr(start) : "";
        start = line.size() + 1;
        continue;
      }
      r.f[columns[i]] = line.substr(start, bar - start);
      start = bar + 1;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty() || list == "None assigned" || list == "(null)") return out;
  // Split at top-level commas.
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  for (const auto& part : parts) {
    auto lb = part.find('[');
    if (lb == std::string::npos) {
      out.push_back(part);
      continue;
    }
    auto rb = part.find(']', lb);
    if (rb == std::string::npos) {
      out.push_back(part);
      continue;
    }
    std::string prefix = part.substr(0, lb), ranges = part.substr(lb + 1, rb - lb - 1);
    auto suffixes = expand_hostlist(part.substr(rb + 1));
    if (suffixes.empty()) suffixes.push_back("");
    size_t s = 0;
    while (s <= ranges.size()) {
      size_t comma = ranges.find(',', s);
      std::string r = ranges.substr(s, comma == std::string::npos ? std::string::npos : comma - s);
      s = comma == std::string::npos ? ranges.size() + 1 : comma + 1;
      if (r.empty()) continue;
      auto dash = r.find('-');
      std::vector<std::string> values;
      if (dash == std::string::npos) {
        values.push_back(r);
      } else {
        std::string a = r.substr(0, dash), b = r.substr(dash + 1);
        if (!all_digits(a) || !all_digits(b)) {
          values.push_back(r);
        } else {
          long lo = std::stol(a), hi = std::stol(b);
          size_t width = a.size();
          for (long v = lo; v <= hi && values.size() < 100000; ++v) {
            std::string n = std::to_string(v);
            if (n.size() < width) n = std::string(width - n.size(), '0') + n;
            values.push_back(n);
          }
        }
      }
      for (const auto& v : values)
        for (const auto& suf : suffixes) out.push_back(prefix + v + suf);
    }
  }
  return out;
}

std::vector<WorkloadAttempt> attempts_from_sacct(const std::vector<SacctRow>& rows, const std::string& cluster,
                                                 std::vector<std::vector<SacctRow>>* rows_per_attempt) {
  std::vector<WorkloadAttempt> out;
  std::vector<std::vector<SacctRow>> per;
  std::map<std::string, size_t> current;  // job id → index in out
  std::map<std::string, int> attempts;    // job id → attempts seen
  for (const auto& r : rows) {
    const std::string& id_full = r["JobID"];
    if (id_full.empty()) continue;
    std::string id = base_job_id(id_full);
    bool is_step = id_full.size() > id.size();
    if (id.find('[') != std::string::npos) continue;  // pending array range "123_[5-10]"
    if (!is_step) {
      WorkloadAttempt a;
      auto& c = a.context;
      c.id = id;
      c.scheduler = "slurm";
      c.cluster = r["Cluster"].empty() ? cluster : r["Cluster"];
      c.attempt = attempts[id]++;
      c.name = r["JobName"];
      c.user = r["User"];
      c.queue = r["Partition"];
      c.nodes = expand_hostlist(r["NodeList"]);
      c.start = parse_slurm_time(r["Start"]);
      c.end = parse_slurm_time(r["End"]);
      c.state = r["State"];
      c.exit_code = r["ExitCode"];
      c.reason = (r["Reason"] == "None" || r["Reason"] == "(null)") ? "" : r["Reason"];
      if (!r["Account"].empty()) c.labels["account"] = r["Account"];
      if (!r["JobIDRaw"].empty()) c.labels["job_id_raw"] = r["JobIDRaw"];
      if (!r["DerivedExitCode"].empty()) c.labels["derived_exit_code"] = r["DerivedExitCode"];
      if (!r["Timelimit"].empty()) c.labels["timelimit"] = r["Timelimit"];
      if (!r["AllocTRES"].empty()) c.labels["alloc_tres"] = r["AllocTRES"];
      auto us = id.find('_');
      if (us != std::string::npos) {
        c.labels["array_job_id"] = id.substr(0, us);
        c.labels["array_task_id"] = id.substr(us + 1);
      }
      auto plus = id.find('+');
      if (plus != std::string::npos) {
        c.labels["het_job_id"] = id.substr(0, plus);
        c.labels["het_job_offset"] = id.substr(plus + 1);
      }
      current[id] = out.size();
      out.push_back(std::move(a));
      per.push_back({r});
    } else {
      auto it = current.find(id);
      if (it == current.end()) continue;  // a step without its job row
      per[it->second].push_back(r);
    }
  }
  // Step: the first numbered step that failed, else the last numbered step.
  for (size_t i = 0; i < out.size(); ++i) {
    std::string failed, last;
    for (size_t k = 1; k < per[i].size(); ++k) {
      const auto& r = per[i][k];
      std::string suffix = r["JobID"].substr(r["JobID"].find('.') + 1);
      if (suffix == "batch" || suffix == "extern" || suffix == "interactive") continue;
      last = r["JobID"];
      if (failed.empty() && r["State"] != "COMPLETED" && r["State"].rfind("RUNNING", 0) != 0) failed = r["JobID"];
    }
    out[i].context.step = failed.empty() ? last : failed;
  }
  if (rows_per_attempt) *rows_per_attempt = std::move(per);
  return out;
}

std::string expand_output_pattern(const std::string& pattern, const ExecutionContext& c, const std::string& raw,
                                  const std::string& workdir) {
  std::string out;
  std::string array_job = c.labels.count("array_job_id") ? c.labels.at("array_job_id") : raw;
  std::string array_task = c.labels.count("array_task_id") ? c.labels.at("array_task_id") : "4294967294";
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    size_t j = i + 1;
    size_t width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j]))) width = width * 10 + (pattern[j++] - '0');
    if (j >= pattern.size()) {
      out += pattern.substr(i);
      break;
    }
    std::string v;
    switch (pattern[j]) {
      case '%': v = "%"; break;
      case 'j': v = raw; break;
      case 'J': v = raw; break;
      case 'A': v = array_job; break;
      case 'a': v = array_task; break;
      case 'x': v = c.name; break;
      case 'u': v = c.user; break;
      case 'N': v = c.nodes.empty() ? "" : c.nodes.front(); break;
      case 'n': case 't': case 's': v = "0"; break;
      default: v = pattern.substr(i, j - i + 1);
    }
    if (width > 0 && v.size() < width && pattern[j] != '%' && std::isdigit(static_cast<unsigned char>(v[0])))
      v = std::string(width - v.size(), '0') + v;
    out += v;
    i = j;
  }
  if (!out.empty() && out[0] != '/' && !workdir.empty()) out = workdir + "/" + out;
  return out;
}

void output_options_from_submit_line(const std::string& submit_line, std::string& out, std::string& err) {
  out.clear();
  err.clear();
  auto words = shell_words(submit_line);
  if (words.empty()) return;
  for (size_t i = 1; i < words.size(); ++i) {
    const auto& w = words[i];
    auto take = [&](const char* shortf, const char* longf, std::string& dst) {
      std::string l = std::string(longf) + "=";
      if (w == shortf || w == longf) {
        if (i + 1 < words.size()) dst = words[++i];
        return true;
      }
      if (w.rfind(l, 0) == 0) {
        dst = w.substr(l.size());
        return true;
      }
      if (w.size() > 2 && w.rfind(shortf, 0) == 0) {
        dst = w.substr(2);
        return true;
      }
      return false;
    };
    if (take("-o", "--output", out)) continue;
    if (take("-e", "--error", err)) continue;
    if (w == "--wrap") {
      ++i;
      continue;
    }
  }
}

namespace {

AdapterRegistrar slurm_registrar("slurm", [](const YAML::Node& config, std::string& error) -> std::unique_ptr<Adapter> {
  SlurmAdapter::Options o;
  const std::set<std::string> known = {"sacct", "scontrol", "cluster", "slurm_conf", "timeout", "stdout_evidence",
                                       "sacct_evidence", "scratch_dir"};
  if (config && config.IsMap()) {
    for (const auto& kv : config) {
      std::string k = kv.first.as<std::string>("");
      if (!known.count(k)) {
        error = fmt::format("adapters.slurm.{}: unknown key (expected one of: cluster, sacct, sacct_evidence, "
                            "scontrol, scratch_dir, slurm_conf, stdout_evidence, timeout)",
                            k);
        return nullptr;
      }
    }
    try {
      if (config["sacct"]) o.sacct = config["sacct"].as<std::string>();
      if (config["scontrol"]) o.scontrol = config["scontrol"].as<std::string>();
      if (config["cluster"]) o.cluster = config["cluster"].as<std::string>();
      if (config["slurm_conf"]) o.slurm_conf = config["slurm_conf"].as<std::string>();
      if (config["scratch_dir"]) o.scratch_dir = config["scratch_dir"].as<std::string>();
    } catch (const YAML::Exception&) {
      error = "adapters.slurm: sacct, scontrol, cluster, slurm_conf and scratch_dir must be strings";
      return nullptr;
    }
    for (const char* k : {"stdout_evidence", "sacct_evidence"}) {
      if (!config[k]) continue;
      bool b;
      if (!YAML::convert<bool>::decode(config[k], b)) {
        error = fmt::format("adapters.slurm.{}: must be true or false", k);
        return nullptr;
      }
      (std::string(k) == "stdout_evidence" ? o.stdout_evidence : o.sacct_evidence) = b;
    }
    if (config["timeout"]) {
      int t = 0;
      if (!YAML::convert<int>::decode(config["timeout"], t) || t <= 0) {
        error = "adapters.slurm.timeout: must be a positive number of seconds";
        return nullptr;
      }
      o.timeout_s = t;
    }
  }
  return std::make_unique<SlurmAdapter>(std::move(o));
});

}  // namespace
}  // namespace attribution::blueprint::slurm
