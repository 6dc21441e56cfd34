#include "line_prefix.h"

#include <cctype>
#include <string>

#include "time_parse.h"

namespace attribution::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

void skip_spaces(std::string_view s, size_t& p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
}

// Skips ANSI CSI sequences (ESC [ ... final byte) and a UTF-8 BOM at p.
void skip_noise(std::string_view s, size_t& p) {
  for (;;) {
    if (p + 2 < s.size() + 0 && s.substr(p, 3) == "\xEF\xBB\xBF") {
      p += 3;
      continue;
    }
    if (p + 1 < s.size() && s[p] == '\x1b' && s[p + 1] == '[') {
      size_t q = p + 2;
      while (q < s.size() && !(s[q] >= '@' && s[q] <= '~')) ++q;
      p = q < s.size() ? q + 1 : q;
      continue;
    }
    if (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r')) {
      ++p;
      continue;
    }
    return;
  }
}

// "[rank12]:" → 12
bool parse_rank_tag(std::string_view s, size_t& p, int& rank) {
  if (s.compare(p, 5, "[rank") != 0) return false;
  size_t q = p + 5;
  int v = 0;
  size_t digits = 0;
  while (q < s.size() && is_digit(s[q]) && digits < 7) v = v * 10 + (s[q++] - '0'), ++digits;
  if (digits == 0 || q >= s.size() || s[q] != ']') return false;
  ++q;
  if (q < s.size() && s[q] == ':') ++q;
  rank = v;
  p = q;
  return true;
}

// Open MPI --tag-output "[1,12]<stdout>:" / "<stderr>:" → 12 (job, rank)
bool parse_mpi_tag(std::string_view s, size_t& p, int& rank) {
  if (p >= s.size() || s[p] != '[') return false;
  size_t q = p + 1;
  size_t digits = 0;
  while (q < s.size() && is_digit(s[q]) && digits < 9) ++q, ++digits;
  if (digits == 0 || q >= s.size() || s[q] != ',') return false;
  ++q;
  int v = 0;
  digits = 0;
  while (q < s.size() && is_digit(s[q]) && digits < 7) v = v * 10 + (s[q++] - '0'), ++digits;
  if (digits == 0 || q >= s.size() || s[q] != ']') return false;
  ++q;
  for (std::string_view tag : {std::string_view("<stdout>:"), std::string_view("<stderr>:")}) {
    if (s.compare(q, tag.size(), tag) == 0) {
      rank = v;
      p = q + tag.size();
      return true;
    }
  }
  return false;
}

// grep -H / multi-file grep output "train-7.log:" (a file name ending in a log extension, then ':')
bool skip_grep_file(std::string_view s, size_t& p) {
  size_t q = p;
  while (q < s.size() && q - p < 200 && (is_host_char(s[q]) || s[q] == '/')) ++q;
  if (q >= s.size() || s[q] != ':' || q == p) return false;
  std::string_view name = s.substr(p, q - p);
  for (std::string_view ext : {std::string_view(".log"), std::string_view(".out"), std::string_view(".err"),
                               std::string_view(".txt")}) {
    if (name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext) {
      p = q + 1;
      return true;
    }
  }
  return false;
}

// srun --label "12: "
bool parse_srun_label(std::string_view s, size_t& p, int& rank) {
  size_t q = p;
  int v = 0;
  size_t digits = 0;
  while (q < s.size() && is_digit(s[q]) && digits < 6) v = v * 10 + (s[q++] - '0'), ++digits;
  if (digits == 0 || q + 1 >= s.size() || s[q] != ':' || s[q + 1] != ' ') return false;
  rank = v;
  p = q + 2;
  return true;
}

// dmesg "[  1084456.074562]"
bool parse_dmesg_relative(std::string_view s, size_t& p, const TextSource& src, TimeNs& t) {
  if (p >= s.size() || s[p] != '[') return false;
  size_t q = p + 1;
  while (q < s.size() && s[q] == ' ') ++q;
  int64_t secs = 0;
  size_t digits = 0;
  // At most 10 digits (317 years of uptime): keeps boot_time + secs far from overflow.
  while (q < s.size() && is_digit(s[q]) && digits < 10) secs = secs * 10 + (s[q++] - '0'), ++digits;
  if (digits == 0 || q >= s.size() || s[q] != '.') return false;
  ++q;
  int64_t frac = 0;
  int64_t scale = 100000000;
  size_t fdigits = 0;
  while (q < s.size() && is_digit(s[q])) {
    if (scale > 0) frac += (s[q] - '0') * scale, scale /= 10;
    ++q;
    ++fdigits;
  }
  if (fdigits == 0 || q >= s.size() || s[q] != ']') return false;
  p = q + 1;
  TimeNs since_boot = secs * 1000000000LL + frac;  // < 3.2e18 with at most 10 digits
  TimeNs sum = 0;
  t = src.boot_time == kNoTime || __builtin_add_overflow(src.boot_time, since_boot, &sum) ? kNoTime : sum;
  return true;
}

// "hh:mm:ss" at s[q]
bool parse_hms(std::string_view s, size_t q, int& h, int& mi, int& sec) {
  h = parse_fixed_digits(s, q, 2);
  if (h < 0 || q + 8 > s.size() || s[q + 2] != ':' || s[q + 5] != ':') return false;
  mi = parse_fixed_digits(s, q + 3, 2);
  sec = parse_fixed_digits(s, q + 6, 2);
  return mi >= 0 && sec >= 0 && h < 24 && mi < 60 && sec <= 60;
}

int64_t parse_fraction(std::string_view s, size_t& q) {
  int64_t frac = 0;
  if (q < s.size() && (s[q] == '.' || s[q] == ',')) {
    ++q;
    int64_t scale = 100000000;
    while (q < s.size() && is_digit(s[q])) {
      if (scale > 0) frac += (s[q] - '0') * scale, scale /= 10;
      ++q;
    }
  }
  return frac;
}

// "Mmm dd hh:mm:ss" (day space-padded or not) at s[p]; on success q is just past the seconds.
bool parse_month_day_hms(std::string_view s, size_t p, size_t& q, int& mo, int& d, int& h, int& mi, int& sec) {
  if (p + 15 > s.size()) return false;
  mo = month_from_abbrev(s.substr(p, 3));
  if (mo == 0 || s[p + 3] != ' ') return false;
  q = p + 4;
  if (s[q] == ' ') ++q;
  d = 0;
  size_t digits = 0;
  while (q < s.size() && is_digit(s[q]) && digits < 2) d = d * 10 + (s[q++] - '0'), ++digits;
  if (digits == 0 || q >= s.size() || s[q] != ' ') return false;
  ++q;
  if (!parse_hms(s, q, h, mi, sec)) return false;
  q += 8;
  return true;
}

// dmesg -T "[Wed Jan 27 23:04:35 2021]"
bool parse_dmesg_t(std::string_view s, size_t& p, const TextSource& src, TimeNs& t) {
  if (p + 26 > s.size() || s[p] != '[' || s[p + 4] != ' ') return false;
  size_t q = 0;
  int mo, d, h, mi, sec;
  if (!parse_month_day_hms(s, p + 5, q, mo, d, h, mi, sec)) return false;
  if (q >= s.size() || s[q] != ' ') return false;
  int y = parse_fixed_digits(s, q + 1, 4);
  if (y < 1900 || y > 2200 || q + 5 >= s.size() || s[q + 5] != ']') return false;
  t = make_time(y, mo, d, h, mi, sec, 0) - src.utc_offset_s * 1000000000LL;
  p = q + 6;
  return true;
}

// syslog "May 18 19:02:39 host"; "May  5 ..."
bool parse_syslog(std::string_view s, size_t& p, const TextSource& src, int year, TimeNs& t,
                  std::string_view& host) {
  size_t q = 0;
  int mo, d, h, mi, sec;
  if (!parse_month_day_hms(s, p, q, mo, d, h, mi, sec)) return false;
  int64_t frac = parse_fraction(s, q);
  t = year > 0 && year <= 2200 ? make_time(year, mo, d, h, mi, sec, frac) - src.utc_offset_s * 1000000000LL
               : kNoTime;
  skip_spaces(s, q);
  size_t hs = q;
  while (q < s.size() && is_host_char(s[q])) ++q;
  if (q > hs && q < s.size() && s[q] == ' ') host = s.substr(hs, q - hs);
  p = q;
  return true;
}

// glog "E0612 01:14:57.061000" (severity letter, MMDD)
bool parse_glog(std::string_view s, size_t& p, const TextSource& src, int year, TimeNs& t) {
  if (p + 14 > s.size()) return false;
  char sev = s[p];
  if (sev != 'E' && sev != 'W' && sev != 'I' && sev != 'F') return false;
  int mmdd_len = 0;
  while (mmdd_len < 4 && is_digit(s[p + 1 + mmdd_len])) ++mmdd_len;
  // torch prints E321 for March 21 on some builds, E0321 on others.
  if (mmdd_len < 3) return false;
  size_t q = p + 1 + mmdd_len;
  if (s[q] != ' ') return false;
  int mmdd = parse_fixed_digits(s, p + 1, mmdd_len);
  int mo = mmdd / 100, d = mmdd % 100;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return false;
  ++q;
  int h, mi, sec;
  if (!parse_hms(s, q, h, mi, sec)) return false;
  q += 8;
  int64_t frac = parse_fraction(s, q);
  t = year > 0 && year <= 2200 ? make_time(year, mo, d, h, mi, sec, frac) - src.utc_offset_s * 1000000000LL
               : kNoTime;
  p = q;
  return true;
}

// NCCL "host:pid:tid [" at p
bool parse_nccl_host(std::string_view s, size_t p, std::string_view& host) {
  size_t q = p;
  while (q < s.size() && is_host_char(s[q])) ++q;
  if (q == p || q >= s.size() || s[q] != ':') return false;
  size_t h_end = q;
  ++q;
  size_t d1 = q;
  while (q < s.size() && is_digit(s[q])) ++q;
  if (q == d1 || q >= s.size() || s[q] != ':') return false;
  ++q;
  size_t d2 = q;
  while (q < s.size() && is_digit(s[q])) ++q;
  if (q == d2 || q + 1 >= s.size() || s[q] != ' ' || s[q + 1] != '[') return false;
  // "00:04:58 [1,2]<stderr>:" or "10:21:33 [INFO]" is a clock time, not host "00" with pid 4 and tid 58.
  auto all_digits = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (!is_digit(s[i])) return false;
    return true;
  };
  if (h_end - p == 2 && all_digits(p, h_end) && d2 - d1 == 3 && q - d2 == 2) return false;
  host = s.substr(p, h_end - p);
  return true;
}

}  // namespace

LinePrefix parse_line_prefix(std::string_view line, const TextSource& src, int year) {
  LinePrefix out;
  size_t p = 0;
  skip_noise(line, p);
  if (skip_grep_file(line, p)) skip_noise(line, p);
  for (int round = 0; round < 4 && p < line.size(); ++round) {
    size_t before = p;
    int rank = kNoRank;
    if (parse_rank_tag(line, p, rank) || parse_mpi_tag(line, p, rank) ||
        (round == 0 && parse_srun_label(line, p, rank))) {
      if (out.rank == kNoRank) out.rank = rank;
    }
    skip_noise(line, p);
    // "(RayWorkerWrapper pid=92234, ip=172.19.24.110) "
    if (p < line.size() && line[p] == '(') {
      size_t close = line.find(") ", p);
      if (close != std::string_view::npos && close - p < 96 &&
          line.substr(p, close - p).find("pid=") != std::string_view::npos) {
        p = close + 2;
        skip_noise(line, p);
      }
    }
    // "kern:     err: [2026-...]: " (Talos / promtail)
    if (line.compare(p, 5, "kern:") == 0) {
      size_t q = line.find('[', p);
      if (q != std::string_view::npos && q - p < 24) p = q;
    }
    if (out.t == kNoTime && p < line.size()) {
      TimeNs t = kNoTime;
      std::string_view host;
      if (line[p] == '[') {
        size_t q = p + 1;
        size_t n = parse_iso_prefix(line.substr(q), src.utc_offset_s, t);
        if (n > 0 && q + n < line.size() && line[q + n] == ']') {
          p = q + n + 1;
          if (p < line.size() && line[p] == ':') ++p;
          out.t = t;
        } else if (parse_dmesg_relative(line, p, src, t) || parse_dmesg_t(line, p, src, t)) {
          out.t = t;
        } else {
          size_t g = p + 1;
          if (parse_glog(line, g, src, year, t)) {
            out.t = t;
            size_t close = line.find(']', g);
            p = close != std::string_view::npos && close - g < 200 ? close + 1 : g;
          }
        }
      } else if (is_digit(line[p])) {
        size_t n = parse_iso_prefix(line.substr(p), src.utc_offset_s, t);
        if (n > 0) {
          p += n;
          out.t = t;
          if (p < line.size() && line[p] == ':') ++p;  // "2019-06-02T16:13:44.884Z: " (mpirun --timestamp-output)
          if (src.kind == ObservationKind::kSyslog) {
            size_t q = p;
            skip_spaces(line, q);
            size_t hs = q;
            while (q < line.size() && is_host_char(line[q])) ++q;
            if (q > hs && q < line.size() && line[q] == ' ') {
              size_t r = q + 1;
              while (r < line.size() && line[r] != ' ' && line[r] != ':' && line[r] != '[') ++r;
              if (r < line.size() && (line[r] == ':' || line[r] == '[')) {
                out.host = line.substr(hs, q - hs);
                p = q;
              }
            }
          }
        }
      } else if (std::isupper(static_cast<unsigned char>(line[p]))) {
        if (parse_syslog(line, p, src, year, t, host)) {
          out.t = t;
          if (!host.empty()) out.host = host;
        } else if (parse_glog(line, p, src, year, t)) {
          out.t = t;
        }
      }
    }
    skip_noise(line, p);
    if (p == before) break;
  }
  if (out.host.empty() && p < line.size()) {
    std::string_view host;
    if (parse_nccl_host(line, p, host)) out.host = host;
  }
  return out;
}

std::string normalize_gpu(std::string_view gpu) {
  // Accept "0000:9b:00", "00000000:9B:00.0", "PCI:0000:9b:00".
  if (gpu.substr(0, 4) == "PCI:") gpu.remove_prefix(4);
  size_t c1 = gpu.find(':');
  if (c1 == std::string_view::npos || c1 < 4 || c1 > 8) return std::string(gpu);
  size_t c2 = gpu.find(':', c1 + 1);
  if (c2 == std::string_view::npos || c2 != c1 + 3) return std::string(gpu);
  if (gpu.size() < c2 + 3) return std::string(gpu);
  std::string domain(gpu.substr(c1 - 4, 4));
  for (size_t i = 0; i + 4 < c1; ++i) {
    if (gpu[i] != '0') domain = std::string(gpu.substr(0, c1));  // keep a nonzero high part
  }
  std::string out = domain + ":" + std::string(gpu.substr(c1 + 1, 2)) + ":" +
                    std::string(gpu.substr(c2 + 1, 2));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace attribution::detail
