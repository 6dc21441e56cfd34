// Small inline rule sets for unit tests (Falco-style: rules as raw strings in the test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attribution/rules.h"

namespace attribution::testing {

inline constexpr const char* kMiniRules = R"YAML(
version: 1
catalogs:
  - id: xid
    description: test Xids
    entries:
      "79": {label: "GPU has fallen off the bus (Xid 79)", domain: gpu, outcome: gpu.fell_off_bus, role: cause, priority: 95, action: RESTART_BM}
      "48": {label: "Double-bit ECC (Xid 48)", domain: gpu, outcome: gpu.memory_ecc, role: cause, priority: 95}
      "45": {label: "Preemptive cleanup (Xid 45)", domain: gpu, outcome: gpu.hardware, role: victim, priority: 0}
      "13": {label: "Graphics exception (Xid 13)", domain: application, outcome: application.gpu_fault, role: cause, priority: 50}
    default: {label: "Xid {xid}", domain: gpu, outcome: gpu.hardware, role: cause, priority: 60}
symptoms:
  - {id: nccl.watchdog_timeout, label: "watchdog timeout", domain: application, outcome: unknown.collective_hang, role: victim, priority: 0}
  - {id: "python.exception.*", label: "Python {exc}", domain: application, outcome: application.exception, role: cause, priority: 50}
  - {id: "python.exception.ChildFailedError", label: "ChildFailedError", domain: application, outcome: application.exception, role: victim, terminal: true}
  - {id: net.address, label: "address", domain: network, role: context}
  - {id: nccl.remote_error, label: "remote error", domain: network, outcome: network.fabric, role: victim}
  - {id: kernel.oom_kill.global, label: "global OOM kill", domain: node, outcome: node.host_oom, role: cause, priority: 80}
extractors:
  - id: extract.gpu.xid
    description: Xid
    pattern: 'NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\): (?P<xid>\d+),'
    symptom: "gpu.xid.{xid}"
    catalog: {id: xid, key: "{xid}"}
    gpu: "{pci}"
    fixtures:
      - line: "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus."
        expect: {symptom: gpu.xid.79, gpu: "0000:09:00"}
  - id: extract.torch.watchdog
    description: watchdog
    pattern: '\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, NumelIn=(?P<numel_in>\d+))?'
    symptom: nccl.watchdog_timeout
    rank: "{rank}"
    fixtures:
      - line: "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out."
        expect: {symptom: nccl.watchdog_timeout, rank: "1", seq: "469508"}
  - id: extract.python.exception
    description: exception
    precedence: -10
    # Not '^(?:\[rank\d+\]:\s*)?...': Vectorscan 5.4.9 misses most lines with that shape when
    # earlier lines end in spaces (the real rules avoid it; see tests/core/scanner_test.cc).
    pattern: '(?:^|[\s:\]])(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.*)'
    symptom: "python.exception.{exc}"
    fixtures:
      - line: "ValueError: bad shape"
        expect: {symptom: python.exception.ValueError}
  - id: extract.nccl.remote
    description: remote error with peer
    precedence: 5
    pattern: 'Call to recv from (?P<peer>[0-9.]+)<\d+> failed'
    symptom: nccl.remote_error
    fixtures:
      - line: "misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.3<58355> failed : Broken pipe"
        expect: {symptom: nccl.remote_error, peer: "10.0.0.3"}
  - id: extract.nccl.oob
    description: address of a host
    pattern: 'NET/IB : Using \[0\]\S+ ; OOB \w+:(?P<ip>[0-9.]+)<0>'
    symptom: net.address
    fixtures:
      - line: "gpu-b:123:456 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.3<0>"
        expect: {symptom: net.address, ip: "10.0.0.3"}
  - id: extract.kernel.oom
    description: global OOM
    pattern: 'Out of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)'
    symptom: kernel.oom_kill.global
    fixtures:
      - line: "Out of memory: Killed process 123 (python) total-vm:123456kB"
        expect: {symptom: kernel.oom_kill.global}
refiners:
  - {id: refine.xid-followups, phase: EARLY, builtin: xid_followups, description: follow-ups}
  - id: refine.collective-after-gpu-loss
    description: NCCL timeouts after a GPU was lost
    cause: ["gpu.xid.79", "gpu.xid.48"]
    explains: ["nccl.*", "python.exception.*"]
    within: 30m
  - {id: refine.peer, phase: DEFAULT, builtin: peer_convergence, description: peers}
  - {id: refine.straggler, phase: LATE, builtin: seqnum_straggler, description: straggler}
  - {id: refine.scheduler-state, phase: EARLY, builtin: scheduler_state, description: state}
)YAML";

inline std::shared_ptr<const RuleSet> load_or_die(const std::string& text, const std::string& name = "test.yaml") {
  LoadResult r = load_rules({{name, text}});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.rules;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shipped catalogue (ATTRIBUTION_SOURCE_DIR/rules), loaded as `analyze --rules rules/` loads it
// (top-level rule files and rule data, not the message inventory). Load errors fail the test.
inline std::shared_ptr<const RuleSet> load_catalogue() {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(ATTRIBUTION_SOURCE_DIR) / "rules";
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), dir).generic_string();
    if (rel.rfind("inventory/", 0) == 0) continue;
    std::string ext = e.path().extension().string();
    if (ext == ".yaml" || ext == ".yml" || is_rule_data_file(e.path().filename().string())) paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<RuleText> files;
  for (const auto& p : paths) files.push_back({"rules/" + fs::relative(p, dir).generic_string(), read_file(p)});
  LoadResult r = load_rules(files);
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return r.rules;
}

}  // namespace attribution::testing
