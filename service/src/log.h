// JSON Lines logging to stderr (ECOSYSTEM §4): ts, level, logger, msg, plus extra fields.
// Thread-safe; one write(2)-sized line per record.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace attribution::service {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError, kOff };

std::optional<LogLevel> parse_log_level(std::string_view name);
void set_log_level(LogLevel level);
void set_log_json(bool json);
bool log_enabled(LogLevel level);

using LogField = std::pair<std::string_view, std::string>;
void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});

// Appends `s` JSON-escaped (without quotes) to `out`; invalid UTF-8 bytes become U+FFFD.
void json_escape_to(std::string& out, std::string_view s);
std::string json_quote(std::string_view s);

}  // namespace attribution::service
