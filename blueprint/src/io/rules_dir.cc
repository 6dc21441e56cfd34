#include "io/rules_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace attribution::blueprint {
namespace fs = std::filesystem;

std::string default_rules_location() {
  if (const char* env = std::getenv("ATTRIBUTION_RULES_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "attribution" / "rules";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return ATTRIBUTION_SOURCE_RULES_DIR;
}

bool read_rule_files(const std::string& location, std::vector<RuleText>& out, std::string& error) {
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(location, ec)) {
    for (auto it = fs::recursive_directory_iterator(location, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file() && (it->path().extension() == ".yaml" || it->path().extension() == ".yml"))
        files.push_back(it->path());
    }
    if (ec) {
      error = fmt::format("{}: {}", location, ec.message());
      return false;
    }
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(location, ec)) {
    files.push_back(location);
  } else {
    error = fmt::format("{}: no such rules file or directory", location);
    return false;
  }
  if (files.empty()) {
    error = fmt::format("{}: no *.yaml rule files", location);
    return false;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      error = fmt::format("{}: cannot read", f.string());
      return false;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    out.push_back({f.string(), ss.str()});
  }
  return true;
}

std::shared_ptr<const RuleSet> load_rules_from(const std::string& location, std::vector<std::string>& errors,
                                               std::vector<std::string>* warnings) {
  std::vector<RuleText> files;
  std::string error;
  if (!read_rule_files(location, files, error)) {
    errors.push_back(error);
    return nullptr;
  }
  LoadResult r = load_rules(files);
  for (const auto& e : r.errors) errors.push_back(e.to_string());
  if (warnings != nullptr) {
    for (const auto& w : r.warnings) warnings->push_back(w.to_string());
  }
  return r.rules;
}

}  // namespace attribution::blueprint
