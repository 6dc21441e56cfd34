// The Kubernetes pod-logs collector (SPEC §9): `kubectl logs --timestamps` of every container of
// the workload's pods, and `--previous` for containers that restarted (the crashed instance's
// log is usually the one that says why). Optionally the pods' status JSON and the namespace's
// events as k8s_event lines (off by default: the kueue adapter already supplies them).
//
// Pods: `kubectl get pods -n NS -l SELECTOR -o json` when `selector` is set, else the pods named
// in the context label "pods" (comma-separated, set by the kueue adapter).
//
// Config (collector block):
//   type: k8s_logs
//   name: k8s/pods                    # report name (default "k8s_logs")
//   kubectl: /usr/bin/kubectl         # binary (default "kubectl" on PATH)
//   context: prod-a3                  # --context; kubeconfig: --kubeconfig
//   namespace: "{namespace}"          # template (default: the context label "namespace")
//   selector: "training.kubeflow.org/job-name={name}"   # label selector template (optional)
//   previous: true                    # also the previous container instance when restarted
//   timestamps: true
//   pod_status: false                 # emit each pod's status JSON (one line, kind k8s_event)
//   events: false                     # emit the namespace's events about these pods/nodes
//   kind: applog
//   timeout_s: 60
//   max_bytes_per_container: 268435456
#pragma once

#include <string>

#include "connectors/connector.h"
#include "connectors/k8s/kube.h"

namespace attribution::blueprint {

struct K8sLogsConfig {
  std::string name = "k8s_logs";
  KubectlOptions kubectl;
  std::string namespace_template = "{namespace}";
  std::string selector;
  bool previous = true;
  bool timestamps = true;
  bool pod_status = false;
  bool events = false;
  ObservationKind kind = ObservationKind::kAppLog;
};

bool parse_k8s_logs_config(const YAML::Node& config, K8sLogsConfig& out, std::string& error);

class K8sLogsCollector : public Collector {
 public:
  explicit K8sLogsCollector(K8sLogsConfig config) : config_(std::move(config)) {}
  std::string name() const override { return config_.name; }
  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override;

 private:
  K8sLogsConfig config_;
};

}  // namespace attribution::blueprint
