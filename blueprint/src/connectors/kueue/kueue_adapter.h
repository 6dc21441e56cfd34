// The Kueue adapter (SPEC §9, FORMATS §8): Workload objects (kueue.x-k8s.io/v1beta1) and their
// pods via kubectl → one WorkloadAttempt per Workload.
//
//   id         Workload name             name   the owner job's name (ownerReferences[0])
//   queue      spec.queueName            attempt status.requeueState.count (0 if never requeued)
//   nodes      the pods' spec.nodeName    start  Admitted (else QuotaReserved) transition time,
//   state      Evicted | Failed | Succeeded | Admitted | Pending (from the conditions)
//   end        Finished/Evicted transition time, else the latest container finishedAt
//   exit_code  first non-zero container exit code; reason: Evicted/Finished reason or the
//              container's terminated reason (OOMKilled, Error)
//   labels     namespace, pods (comma-separated), cluster_queue, queue-name
// Evidence: the Workload and each pod as one-line JSON, and the events about them rendered as
// lines, written under `evidence_dir` (default $TMPDIR/attribution-kueue) and returned as
// evidence files of kind k8s_event — what the rules' kueue/k8s extractors read.
//
// Pods of a Workload: pods whose ownerReferences or labels (`pod_owner_labels`) name the
// Workload's owner job, or that carry the label kueue.x-k8s.io/workload-name / annotation
// kueue.x-k8s.io/workload = the Workload name.
//
// Config (adapters.kueue):
//   kubectl: kubectl                  # binary; context / kubeconfig / timeout_s as for k8s_logs
//   namespace: llm-train              # default: all namespaces (-A)
//   cluster: h100-east
//   evidence_dir: /var/lib/attribution/kueue
//   pod_owner_labels: [training.kubeflow.org/job-name, batch.kubernetes.io/job-name,
//                      jobset.sigs.k8s.io/jobset-name, job-name]
#pragma once

#include <string>
#include <vector>

#include "connectors/connector.h"
#include "connectors/k8s/kube.h"

namespace attribution::blueprint {

struct KueueAdapterConfig {
  KubectlOptions kubectl;
  std::string namespace_;
  std::string cluster;
  std::string evidence_dir;
  std::vector<std::string> pod_owner_labels = {"training.kubeflow.org/job-name", "batch.kubernetes.io/job-name",
                                               "jobset.sigs.k8s.io/jobset-name", "job-name"};
};

bool parse_kueue_config(const YAML::Node& config, KueueAdapterConfig& out, std::string& error);

class KueueAdapter : public Adapter {
 public:
  explicit KueueAdapter(KueueAdapterConfig config) : config_(std::move(config)) {}
  std::string name() const override { return "kueue"; }
  bool by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) override;
  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) override;

 private:
  bool list(std::vector<nlohmann::json>& workloads, std::string& error);
  bool attempt_for(const nlohmann::json& workload, WorkloadAttempt& out, std::string& error);
  KueueAdapterConfig config_;
};

}  // namespace attribution::blueprint
