#include "log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace attribution::service {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_json{true};
std::mutex g_mu;

std::string_view level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    default: return "off";
  }
}

std::string now_rfc3339_us() {
  auto now = std::chrono::system_clock::now();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           static_cast<long long>(us % 1000000));
  return buf;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if invalid.
size_t utf8_len(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}
}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn" || name == "warning") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  if (name == "off") return LogLevel::kOff;
  return std::nullopt;
}
void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
void set_log_json(bool json) { g_json = json; }
bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void json_escape_to(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8_len(s, i);
      if (n == 0) { out += "\xEF\xBF\xBD"; ++i; }
      else { out.append(s.substr(i, n)); i += n; }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) { out += "\\u00"; out += hex[c >> 4]; out += hex[c & 15]; }
        else out += static_cast<char>(c);
    }
    ++i;
  }
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  json_escape_to(out, s);
  out += '"';
  return out;
}

void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  if (!log_enabled(level)) return;
  std::string line;
  line.reserve(128 + msg.size());
  if (g_json) {
    line += "{\"ts\":\"" + now_rfc3339_us() + "\",\"level\":\"";
    line += level_name(level);
    line += "\",\"logger\":\"attribution-service\",\"msg\":";
    line += json_quote(msg);
    for (const auto& [k, v] : fields) {
      line += ',';
      line += json_quote(k);
      line += ':';
      line += json_quote(v);
    }
    line += "}\n";
  } else {
    line += now_rfc3339_us() + " " + std::string(level_name(level)) + " " + std::string(msg);
    for (const auto& [k, v] : fields) line += " " + std::string(k) + "=" + v;
    line += '\n';
  }
  std::lock_guard lock(g_mu);
  (void)!::write(2, line.data(), line.size());
}

}  // namespace attribution::service
