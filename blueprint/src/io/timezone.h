// Zone names → UTC offsets, using the system tz database (the core has no tz access).
#pragma once

#include <cstdint>
#include <string>

#include "attribution/model.h"

namespace attribution::blueprint {

// The offset of `zone` (e.g. "Europe/Paris", "UTC", "+02:00") at time `at` in seconds east of UTC.
// Returns false when the zone is unknown. Not thread-safe (uses TZ); call at start-up.
bool utc_offset_at(const std::string& zone, TimeNs at, int64_t& offset_s);

}  // namespace attribution::blueprint
