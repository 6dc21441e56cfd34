// Internal: recognizes the prefix of one log line — its time, host and rank — across the shapes of
// SPEC §7 and FORMATS.md: dmesg "[secs.usecs]" (needs the source's boot time), dmesg -T
// "[Wed Jan 27 23:04:35 2021]", syslog "May 18 19:02:39 host ...", ISO 8601 (also in brackets and
// after "kern:  err: "), glog "E0612 01:14:57.061000" / "[rank1]:[E1002 18:16:40.66 ...", NCCL
// "host:pid:tid [dev]", srun --label "12: ", "[rankN]:". Allocation-free; runs only on candidate
// lines and on their look-back neighbours.
#pragma once

#include <string_view>

#include "attribution/model.h"

namespace attribution::detail {

struct LinePrefix {
  TimeNs t = kNoTime;
  std::string_view host;  // points into the line
  int rank = kNoRank;
};

// `year` is used for stamps without a year (syslog, glog); 0 means unknown (then such stamps give
// no time).
LinePrefix parse_line_prefix(std::string_view line, const TextSource& source, int year);

// True for the names a line gives the machine that wrote it without naming it ("localhost",
// "localhost.localdomain", the loopback addresses): such a line is about its source's own node.
inline bool names_local_machine(std::string_view host) {
  return host == "localhost" || host == "localhost.localdomain" || host == "127.0.0.1" || host == "::1";
}

// Normalizes a PCI address to "dddd:bb:dd" (lower case, 4-hex-digit domain, no function):
// "00000000:9B:00.0" → "0000:9b:00". Other strings are returned unchanged.
std::string normalize_gpu(std::string_view gpu);

}  // namespace attribution::detail
