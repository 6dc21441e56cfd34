// Resolution of port-level evidence to fabric components (docs/fabric.md §2 "Resolution") and of a
// run's hosts to the components it crosses (§3).
//
// Components are interned: an index into components(); ids are the strings of docs/fabric.md §1.3.
// Thread-safety: a built TopologyIndex is immutable; share it read-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fabric/topology.h"

namespace attribution::fabric {

struct Component {
  std::string id;    // link:… | switch:… | nvlink_domain:…
  std::string kind;  // link | switch | nvlink_domain
  int link = -1;     // index into topology.links for kind link
  // Components that share a null rate in the fleet test: link/host, link/switch, switch/<tier>,
  // nvlink_domain (a spine is crossed by every multi-leaf run, a leaf by its hosts' runs only).
  std::string group;
};

// One piece of located evidence: the verdict's fabric.evidence[i] (node + location fields).
struct Location {
  std::string node;
  std::map<std::string, std::string> fields;  // hca, hca_port, iface, peer, peer_gid, peer_lid, switch_guid, ...
};

class TopologyIndex {
 public:
  explicit TopologyIndex(Topology topology);

  const Topology& topology() const { return topology_; }
  const std::vector<Component>& components() const { return components_; }
  int find(std::string_view component_id) const;

  // The components a run on `hosts` crosses: their host links, their leaves, their NVLink domains;
  // with hosts under ≥ 2 switches, those switches' uplinks and the switches at the other end.
  // Appends sorted, distinct indices to `out` (cleared first).
  void crossed(const std::vector<std::string>& hosts, std::vector<int>& out) const;
  // The components one piece of evidence points at (sorted, distinct, appended to `out`). A peer
  // address is resolved among all hosts of the topology. `direct`, when given, receives the
  // subset named by the evidence itself (a local HCA port or netdev, a switch port, an NVSwitch)
  // as opposed to inferred from a peer's path or from the host alone. A local HCA named together
  // with a peer (a completion error) is on the path, not named: it is not direct.
  void touched(const Location& loc, std::vector<int>& out, std::vector<int>* direct = nullptr) const;
  // Components attached to one host (its links, their switches, its NVLink domain): the fleet
  // context lookup ("does this job's host share a component with an open finding").
  void attached(const std::string& host, std::vector<int>& out) const;
  // The host a peer address (IP, GID, LID or host name as printed) belongs to; "" when unknown.
  std::string host_of_peer(std::string_view peer) const;
  bool knows_host(const std::string& host) const { return host_links_.count(host) > 0 || host_domain_.count(host) > 0; }

 private:
  int intern(const std::string& id, const std::string& kind, int link);
  void add_host_path(const std::string& host, std::vector<int>& out) const;

  Topology topology_;
  std::vector<Component> components_;
  std::unordered_map<std::string, int> by_id_;
  std::unordered_map<std::string, std::vector<int>> host_links_;        // host → link component indices
  std::unordered_map<std::string, std::vector<int>> host_switches_;     // host → switch components (leaves)
  std::unordered_map<std::string, int> host_domain_;                    // host → nvlink_domain component
  std::unordered_map<std::string, int> hca_port_link_;                  // "host/hca/port" → link component
  std::unordered_map<std::string, std::vector<int>> hca_links_;         // "host/hca" → link components
  std::unordered_map<std::string, std::vector<int>> iface_links_;       // "host/iface" → link components
  std::unordered_map<std::string, int> switch_port_link_;               // "switch/port" → link component
  std::unordered_map<std::string, std::string> switch_by_guid_;         // guid → name
  std::unordered_map<std::string, std::vector<int>> switch_uplinks_;    // switch name → switch-link components
  std::unordered_map<std::string, std::vector<int>> switch_far_;        // switch name → switches its uplinks reach
  std::unordered_map<std::string, std::string> peer_host_;              // ip / gid / lid / host → host
};

// "10.0.1.2", "fe80::1%ib0" → without the scope; "::ffff:10.0.1.2" → "10.0.1.2".
std::string normalize_address(std::string_view a);

}  // namespace attribution::fabric
