// Zone names → UTC offsets, read from the system tz database (the core has no tz access).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "attribution/model.h"

namespace attribution::blueprint {

// The offset of `zone` (e.g. "Europe/Paris", "UTC", "+02:00", "-0530") at time `at` (kNoTime: now)
// in seconds east of UTC. Named zones are read from /usr/share/zoneinfo (TZif, RFC 8536) without
// touching the process environment, so it is safe to call from any thread. Returns false when the
// zone is unknown or its file is not valid TZif.
bool utc_offset_at(const std::string& zone, TimeNs at, int64_t& offset_s);

// The same over the bytes of a TZif file (exposed for tests). Times after the file's last
// transition repeat the 28-year cycle of the Gregorian calendar between 1901 and 2099 (same
// weekdays, same rule-based DST dates) or take the footer's standard offset when it has no DST rule.
bool utc_offset_from_tzif(std::string_view tzif, int64_t at_s, int64_t& offset_s);

}  // namespace attribution::blueprint
