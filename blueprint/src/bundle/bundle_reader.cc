#include "bundle/bundle_reader.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string_view>

#include "io/timezone.h"

namespace attribution::blueprint {
namespace fs = std::filesystem;

namespace {

int rank_from_name(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t p = lower.find("rank");
  while (p != std::string::npos) {
    size_t q = p + 4;
    if (q < lower.size() && (lower[q] == '_' || lower[q] == '-' || lower[q] == '.')) ++q;
    size_t start = q;
    while (q < lower.size() && std::isdigit(static_cast<unsigned char>(lower[q])) && q - start < 7) ++q;
    if (q > start) return std::stoi(lower.substr(start, q - start));
    p = lower.find("rank", p + 4);
  }
  return kNoRank;
}

// Node names grouped by length, longest first, each group sorted.
using NodeNamesByLength = std::vector<std::pair<size_t, std::vector<std::string>>>;

NodeNamesByLength group_node_names(const std::vector<std::string>& sorted_names) {
  std::map<size_t, std::vector<std::string>, std::greater<>> by_len;
  for (const auto& n : sorted_names)
    if (!n.empty()) by_len[n.size()].push_back(n);  // stays sorted within a length
  return {by_len.begin(), by_len.end()};
}

// The longest node name that occurs in `rel`, the smallest of those of that length: each
// substring of `rel` of a name's length is looked up (not every name searched in `rel`, which is
// files x nodes string searches on a 16,384-rank bundle).
std::string node_from_path(const std::string& rel, const NodeNamesByLength& nodes) {
  std::string_view r(rel);
  for (const auto& [len, names] : nodes) {
    if (len > r.size()) continue;
    const std::string* best = nullptr;
    for (size_t i = 0; i + len <= r.size(); ++i) {
      std::string_view sub = r.substr(i, len);
      auto it = std::lower_bound(names.begin(), names.end(), sub,
                                 [](const std::string& a, std::string_view b) { return std::string_view(a) < b; });
      if (it != names.end() && std::string_view(*it) == sub && (!best || *it < *best)) best = &*it;
    }
    if (best) return *best;
  }
  return "";
}

int year_of(TimeNs t) {
  if (t == kNoTime) return 0;
  return std::stoi(format_rfc3339(t).substr(0, 4));
}

}  // namespace

bool read_bundle(const std::string& dir, Bundle& b, std::string& error) {
  b.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    error = fmt::format("{}: not a bundle directory", dir);
    return false;
  }
  fs::path manifest_path = fs::path(dir) / "workload.yaml";
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read (a bundle needs workload.yaml)", manifest_path.string());
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  auto parsed = parse_bundle_manifest(ss.str(), manifest_path.string());
  if (!parsed.ok()) {
    error = parsed.error;
    return false;
  }
  b.manifest = std::move(parsed.value);
  const ExecutionContext& ctx = b.manifest.context;
  fs::path root = fs::weakly_canonical(dir, ec);
  // Distinct node names, longest first, computed once (rank maps repeat each node many times).
  std::vector<std::string> node_names = ctx.nodes;
  for (const auto& [r, n] : ctx.ranks) node_names.push_back(n);
  std::sort(node_names.begin(), node_names.end());
  node_names.erase(std::unique(node_names.begin(), node_names.end()), node_names.end());
  const NodeNamesByLength nodes_by_length = group_node_names(node_names);
  // weakly_canonical of each match's directory, computed once per directory.
  std::map<std::string, fs::path> canonical_dirs;
  for (size_t si = 0; si < b.manifest.sources.size(); ++si) {
    const BundleSource& s = b.manifest.sources[si];
    Bundle::SourceStatus status{s.path, 0, ""};
    if (fs::path(s.path).is_absolute() || s.path.find("..") != std::string::npos) {
      status.error = fmt::format("{}:{}: path '{}' leaves the bundle", manifest_path.string(), s.manifest_line, s.path);
      b.statuses.push_back(status);
      continue;
    }
    int64_t offset = 0;
    if (!s.timezone.empty() && !utc_offset_at(s.timezone, ctx.start, offset)) {
      error = fmt::format("{}:{}: unknown timezone '{}'", manifest_path.string(), s.manifest_line, s.timezone);
      return false;
    }
    glob_t g{};
    std::string pattern = (fs::path(dir) / s.path).string();
    int rc = glob(pattern.c_str(), GLOB_NOSORT | GLOB_ERR, nullptr, &g);
    std::vector<std::string> matches;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    std::sort(matches.begin(), matches.end());
    b.text_files.reserve(b.text_files.size() + matches.size());  // one allocation, no doubling slack
    for (const auto& m : matches) {
      // A file that is not itself a symlink resolves to its resolved directory plus its name;
      // the directory is resolved once (not a realpath per file of a 16,384-file bundle).
      fs::path mp(m);
      fs::path real;
      bool fast = false;
      std::string fname = mp.filename().string();
      fs::file_status own = fs::symlink_status(mp, ec);
      if (!fname.empty() && fname != "." && fname != ".." && !fs::is_symlink(own) && !ec) {
        std::string parent = mp.parent_path().string();
        auto cd = canonical_dirs.find(parent);
        if (cd == canonical_dirs.end()) {
          std::error_code pec;
          fs::path pc = fs::weakly_canonical(mp.parent_path(), pec);
          if (!pec) cd = canonical_dirs.emplace(parent, pc).first;
        }
        if (cd != canonical_dirs.end()) {
          real = cd->second / fname;
          fast = true;
        }
      }
      if (!fast) real = fs::weakly_canonical(m, ec);
      std::string real_s = real.string();
      if (ec || real_s.compare(0, root.string().size(), root.string()) != 0) {
        status.error = fmt::format("{}: resolves outside the bundle; skipped", m);
        continue;
      }
      // Not a symlink: its own status is the resolved file's (no second stat per file).
      if (!(fast ? fs::is_regular_file(own) : fs::is_regular_file(real, ec))) continue;
      BundleFile f;
      f.path = m;
      f.relative = (fast && !root.empty() ? real.lexically_relative(root) : fs::relative(m, dir, ec)).string();
      f.source = s.defaults;
      f.source.name = f.relative;
      f.source.utc_offset_s = offset;
      f.source.default_year = year_of(ctx.start != kNoTime ? ctx.start : ctx.end);
      f.source_index = si;
      if (f.source.rank == kNoRank && matches.size() > 1) f.source.rank = rank_from_name(fs::path(m).filename().string());
      if (f.source.rank == kNoRank && matches.size() == 1 && s.path.find('*') != std::string::npos)
        f.source.rank = rank_from_name(fs::path(m).filename().string());
      if (f.source.node.empty()) {
        f.source.node = node_from_path(f.relative, nodes_by_length);
        if (f.source.node.empty() && f.source.rank != kNoRank) {
          auto it = ctx.ranks.find(f.source.rank);
          if (it != ctx.ranks.end()) f.source.node = it->second;
        }
      }
      status.files++;
      if (f.source.kind == ObservationKind::kNodeMetrics) b.metric_files.push_back(std::move(f));
      else b.text_files.push_back(std::move(f));
    }
    if (status.files == 0 && status.error.empty()) status.error = fmt::format("no file matches '{}'", s.path);
    b.statuses.push_back(status);
  }
  return true;
}

}  // namespace attribution::blueprint
