// The fabric topology (docs/fabric.md §1): switches, host HCA ports, links between them and NVLink
// domains, built from `ibnetdiscover` output and a small YAML, stored as a JSON document.
//
// Pure: text in, a Topology or file:line errors out. No I/O, no clocks.
// Thread-safety: values; a built Topology may be shared read-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attribution::fabric {

inline constexpr int64_t kNoValidFrom = INT64_MIN;

// An input error at file:line (line 0 = the file as a whole).
struct InputError {
  std::string file;
  int line = 0;
  std::string message;
  std::string to_string() const;  // "file:line: message"
};

struct Switch {
  std::string name;
  std::string guid;  // "0x…" (lower case), "" for a switch known only from the YAML
  std::string tier;  // leaf | spine | "" (unknown)
  int lid = 0;
  int ports = 0;     // as ibnetdiscover declares
};

struct HostPort {
  std::string hca;   // mlx5_0
  int port = 0;      // 1-based
  std::string guid;  // port GUID "0x…", "" when unknown
  int lid = 0;
  std::string iface;  // netdev bound to it (YAML), "" when unknown
};

struct Host {
  std::string host;
  std::vector<HostPort> ports;  // sorted by (hca, port)
  std::vector<std::string> ips, gids;
  std::vector<int> lids;
  std::string nvlink_domain;
};

// One end of a link: a host HCA port or a switch port.
struct LinkEnd {
  std::string host, hca;  // host end
  std::string sw;         // switch end (switch name)
  int port = 0;
  bool is_switch() const { return !sw.empty(); }
  // "gpu-a01/mlx5_0/1" or "leaf-01/7"
  std::string id() const;
};

struct Link {
  std::string id;    // "link:<end>~<end>", ends sorted
  std::string kind;  // host (host–switch) | switch (switch–switch)
  LinkEnd a, b;      // a < b by id
  std::string width, speed;
};

struct NvlinkDomain {
  std::string name;
  std::vector<std::string> hosts;  // sorted
};

struct Topology {
  int64_t id = 0;                       // store row id (0 = not stored)
  int64_t valid_from_ns = kNoValidFrom;  // ns since the epoch
  std::string imported_at;
  std::vector<std::string> sources;
  std::string digest;  // "fnv1a64:<hex>" over the canonical document
  std::vector<Switch> switches;         // sorted by name
  std::vector<Host> hosts;              // sorted by host
  std::vector<Link> links;              // sorted by id
  std::vector<NvlinkDomain> nvlink_domains;  // sorted by name

  // docs/fabric.md §1.3. `with_id` adds "id" (the stored document leaves it out).
  nlohmann::json to_json(bool with_id = true) const;
  // The inverse; false with `error` naming the field.
  static bool from_json(const nlohmann::json& j, Topology& out, std::string& error);
  // One line per switch, host and link, for `topology show -o text`.
  std::string to_text() const;
};

// Collects input files and builds one Topology. add_* return false and append to `errors` on bad
// input; build() then refuses. Input files are recognised by content (add_file).
class TopologyBuilder {
 public:
  bool add_file(const std::string& file, std::string_view text, std::vector<InputError>& errors);
  bool add_ibnetdiscover(const std::string& file, std::string_view text, std::vector<InputError>& errors);
  bool add_yaml(const std::string& file, std::string_view text, std::vector<InputError>& errors);
  // The valid_from a YAML file gave (kNoValidFrom when none).
  int64_t yaml_valid_from() const { return yaml_valid_from_; }
  // Merges everything added; false (with errors) on conflicts. Fills everything but id,
  // valid_from_ns and imported_at.
  bool build(Topology& out, std::vector<InputError>& errors) const;

 private:
  struct IbNode {
    char type = 'S';  // S switch, H CA, R router
    std::string guid;  // "0x…"
    std::string desc;
    int lid = 0, nports = 0;
    std::string file;
    int line = 0;
    struct Port {
      int port = 0;
      std::string guid;  // own port GUID (CA ports)
      int lid = 0;       // own LID (CA ports)
      std::string peer_guid;  // node GUID "0x…"
      char peer_type = 'S';
      int peer_port = 0;
      std::string peer_port_guid;
      int peer_lid = 0;
      std::string width, speed;
      int line = 0;
    };
    std::map<int, Port> ports;
  };
  struct YamlLink {
    std::string sw;
    int port = 0;
    std::string host, hca, iface, speed;
    int hca_port = 1;
    std::string peer_switch;
    int peer_port = 0;
    std::string file;
    int line = 0;
  };
  struct YamlHost {
    std::vector<std::string> ips, gids;
    std::vector<int> lids;
    std::map<std::string, std::string> ifaces;  // iface → hca
    std::string file;
    int line = 0;
  };
  std::map<std::string, IbNode> ib_nodes_;  // by node GUID
  std::map<std::string, std::pair<std::string, std::string>> switch_overrides_;  // guid or name → (name, tier)
  std::map<std::string, std::pair<std::string, std::string>> hca_overrides_;     // guid → (host, hca)
  std::map<std::string, YamlHost> yaml_hosts_;
  std::vector<NvlinkDomain> yaml_domains_;
  std::vector<YamlLink> yaml_links_;
  std::map<std::string, std::string> yaml_tiers_;
  std::vector<std::string> sources_;
  int64_t yaml_valid_from_ = kNoValidFrom;
};

// Whether `text` looks like YAML topology (first significant line "version:" or a known key).
bool looks_like_yaml(std::string_view text);

// 64-bit FNV-1a, for digests and ids.
uint64_t fnv1a64(std::string_view s);

}  // namespace attribution::fabric
