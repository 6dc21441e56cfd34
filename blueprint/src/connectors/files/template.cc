#include "connectors/files/template.h"

#include <fmt/format.h>

#include <ctime>

#include "attribution/codec.h"

namespace attribution::blueprint {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '/';
}

// Finds the placeholder starting at tmpl[i] == '{': returns its name and optional format, and the
// index after '}'. False when it is not a placeholder shape.
bool parse_placeholder(std::string_view tmpl, size_t i, std::string_view& name, std::string_view& format,
                       size_t& after) {
  size_t j = i + 1;
  while (j < tmpl.size() && is_name_char(tmpl[j])) ++j;
  if (j == i + 1 || j >= tmpl.size()) return false;
  name = tmpl.substr(i + 1, j - i - 1);
  format = {};
  if (tmpl[j] == ':') {
    size_t close = tmpl.find('}', j);
    if (close == std::string_view::npos) return false;
    format = tmpl.substr(j + 1, close - j - 1);
    after = close + 1;
    return true;
  }
  if (tmpl[j] != '}') return false;
  after = j + 1;
  return true;
}

std::string strftime_utc(TimeNs t, std::string_view format) {
  if (t == kNoTime) return "";
  std::time_t s = static_cast<std::time_t>(t / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[256];
  std::string f(format);
  size_t n = std::strftime(buf, sizeof buf, f.c_str(), &tm);
  return std::string(buf, n);
}

std::string ns_to_string(TimeNs t, int64_t div) {
  if (t == kNoTime) return "";
  return std::to_string(t / div);
}

}  // namespace

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string quote_escape(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

bool template_uses(std::string_view tmpl, std::string_view name) {
  for (size_t i = tmpl.find('{'); i != std::string_view::npos; i = tmpl.find('{', i + 1)) {
    std::string_view n, f;
    size_t after = 0;
    if (parse_placeholder(tmpl, i, n, f, after) && n == name) return true;
  }
  return false;
}

std::vector<TemplateBinding> template_bindings(std::string_view tmpl, const ExecutionContext& context) {
  std::vector<TemplateBinding> out;
  if (template_uses(tmpl, "rank")) {
    for (const auto& [rank, node] : context.ranks) out.push_back({node, rank, ""});
  } else if (template_uses(tmpl, "node")) {
    for (const auto& node : context.nodes) out.push_back({node, kNoRank, ""});
  } else {
    out.push_back({});
  }
  if (template_uses(tmpl, "day") && context.start != kNoTime) {
    TimeNs end = context.end == kNoTime ? context.start : context.end;
    constexpr TimeNs kDay = 86400LL * 1000000000LL;
    std::vector<TemplateBinding> by_day;
    for (const auto& b : out) {
      TimeNs d = context.start - (context.start % kDay);
      for (int guard = 0; d <= end && guard < 366; d += kDay, ++guard) {
        TemplateBinding x = b;
        x.day = strftime_utc(d, "%Y-%m-%d");
        by_day.push_back(std::move(x));
      }
    }
    out = std::move(by_day);
  }
  return out;
}

std::optional<std::string> expand_template(std::string_view tmpl, const ExecutionContext& context,
                                           const TemplateBinding& binding, TemplateEscape escape,
                                           std::string& error, bool strict) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    size_t open = tmpl.find('{', i);
    if (open == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    std::string_view name, format;
    size_t after = 0;
    if (!parse_placeholder(tmpl, open, name, format, after)) {
      out += '{';
      i = open + 1;
      continue;
    }
    std::optional<std::string> value;
    auto join = [&](bool as_regex) {
      std::string s;
      for (size_t k = 0; k < context.nodes.size(); ++k) {
        if (k) s += as_regex ? "|" : ",";
        s += as_regex ? regex_escape(context.nodes[k]) : context.nodes[k];
      }
      return s;
    };
    if (name == "start" || name == "end") {
      TimeNs t = name == "start" ? context.start : context.end;
      value = format.empty() ? (t == kNoTime ? std::string() : format_rfc3339(t)) : strftime_utc(t, format);
    } else if (!format.empty()) {
      value.reset();
    } else if (name == "job" || name == "id") {
      value = context.id;
    } else if (name == "name") {
      value = context.name;
    } else if (name == "user") {
      value = context.user;
    } else if (name == "queue") {
      value = context.queue;
    } else if (name == "cluster") {
      value = context.cluster;
    } else if (name == "step") {
      value = context.step;
    } else if (name == "attempt") {
      value = std::to_string(context.attempt);
    } else if (name == "node") {
      value = binding.node;
    } else if (name == "rank") {
      value = binding.rank == kNoRank ? std::string() : std::to_string(binding.rank);
    } else if (name == "day") {
      value = binding.day;
    } else if (name == "start_s" || name == "end_s") {
      value = ns_to_string(name == "start_s" ? context.start : context.end, 1000000000);
    } else if (name == "start_ns" || name == "end_ns") {
      value = ns_to_string(name == "start_ns" ? context.start : context.end, 1);
    } else if (name == "nodes") {
      value = join(false);
    } else if (name == "nodes_regex") {
      value = join(true);
    } else if (name == "namespace") {
      auto it = context.labels.find("namespace");
      value = it == context.labels.end() ? std::string() : it->second;
    } else if (name.starts_with("label.")) {
      auto it = context.labels.find(std::string(name.substr(6)));
      value = it == context.labels.end() ? std::string() : it->second;
    }
    if (!value) {
      if (strict) {
        error = fmt::format("unknown template variable {{{}}}", name);
        return std::nullopt;
      }
      out.append(tmpl.substr(open, after - open));
    } else {
      out += escape == TemplateEscape::kQuotedString ? quote_escape(*value) : *value;
    }
    i = after;
  }
  return out;
}

}  // namespace attribution::blueprint
