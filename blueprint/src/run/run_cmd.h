// `attribution-blueprint run` (once: bundles, a job id or a time range) and `watch` (follows newly
// finished jobs with a persistent cursor in the store's `cursors` table).
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

struct RunCommandOptions {
  std::string config_file;                                 // --config / $ATTRIBUTION_CONFIG
  std::vector<std::pair<std::string, std::string>> flags;  // dotted key → value (flags layer)
  std::vector<std::string> bundles;                        // --bundle (static adapter)
  std::vector<std::string> jobs;                           // --job
  std::string since, from, to;                             // time range
  bool print_config = false;
  bool once = false;       // watch: one poll, then exit
  int max_polls = 0;       // watch: stop after N polls (0 = forever)
  std::string progress = "auto";  // auto | always | never
};

int run_run(const RunCommandOptions& options, std::ostream& out, std::ostream& err);
int run_watch(const RunCommandOptions& options, std::ostream& out, std::ostream& err);

// Cursor value of watch mode: the last end time processed and the attempts processed at it.
struct WatchCursor {
  TimeNs end = kNoTime;
  std::vector<std::string> done;  // "job_id#attempt" with end == `end`
  TimeNs floor = kNoTime;         // where the cursor was first set; nothing older is taken
};
std::string encode_cursor(const WatchCursor& cursor);
bool decode_cursor(const std::string& text, WatchCursor& cursor);

}  // namespace attribution::blueprint
