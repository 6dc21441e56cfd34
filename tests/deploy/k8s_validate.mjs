// Validates the Kubernetes manifests under deploy/k8s without a cluster.
//
// No API server can run on the test machine (Debian 12 packages none), so a server-side dry run is
// impossible. The closest real check is the API's own schema, taken from two npm packages that are
// generated from the Kubernetes OpenAPI specification:
//   - kubernetes-models: compiled JSON-schema validators per group/version/kind (required fields,
//     types, int32/quantity formats); an apiVersion/kind the API does not serve is an error;
//   - @kubernetes/client-node: the field list of every API type; a manifest is read into the typed
//     model and written back, and every field that does not survive is an unknown field (the typo
//     `replica:` or a field at the wrong level, which kubectl --validate=strict rejects).
// On top of the schema, the references a server would not check but a rollout depends on: every
// kustomization resource exists and every manifest is reachable from one, selectors select the pod
// template, Services/PDBs/HPAs point at a workload of this set, volumes and ConfigMaps referenced
// exist, HPA Pods metrics are served by a prometheus-adapter rule of prometheus/adapter-rules.yaml.
//
// usage: node k8s_validate.mjs DEPLOY_K8S_DIR OUT_DIR
// Writes for the calling script (which runs the real binaries on them): OUT_DIR/configmap-<name>-<key>
// (every ConfigMap entry), OUT_DIR/probes.tsv (container, kind, path), OUT_DIR/series.txt (the
// metric names the adapter rules query), OUT_DIR/commands.tsv (image, args joined by spaces).
// Exit 0 when everything holds; 1 with one line per problem (file, document, field) otherwise.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import YAML from "yaml";
import { ObjectSerializer } from "@kubernetes/client-node/dist/gen/models/ObjectSerializer.js";

const require = createRequire(import.meta.url);
const clientModels = path.dirname(require.resolve("@kubernetes/client-node/dist/gen/models/ObjectSerializer.js"));
const [root, outDir] = process.argv.slice(2);
if (!root || !outDir) {
  console.error("usage: node k8s_validate.mjs DEPLOY_K8S_DIR OUT_DIR");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
const problems = [];
const problem = (where, msg) => problems.push(`${where}: ${msg}`);

// ---- kustomizations: every resource exists, every manifest is reachable
const manifests = new Map();  // file -> [docs]
const kustomizations = [];
function readYamlDocs(file) {
  const text = fs.readFileSync(file, "utf8");
  const docs = YAML.parseAllDocuments(text);
  const out = [];
  for (const d of docs) {
    if (d.errors.length) problem(file, `YAML: ${d.errors[0].message}`);
    const v = d.toJSON();
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}
function walkKustomization(dir, seen = new Set()) {
  const file = path.join(dir, "kustomization.yaml");
  if (seen.has(file)) return;
  seen.add(file);
  if (!fs.existsSync(file)) {
    problem(dir, "listed as a kustomization resource but has no kustomization.yaml");
    return;
  }
  kustomizations.push(file);
  const [k] = readYamlDocs(file);
  if (!k || k.kind !== "Kustomization" || k.apiVersion !== "kustomize.config.k8s.io/v1beta1")
    problem(file, "not a kustomize.config.k8s.io/v1beta1 Kustomization");
  const known = new Set(["apiVersion", "kind", "namespace", "resources", "labels", "commonLabels",
                         "commonAnnotations", "images", "patches", "configMapGenerator", "secretGenerator",
                         "namePrefix", "nameSuffix", "components", "replicas"]);
  for (const key of Object.keys(k ?? {})) if (!known.has(key)) problem(file, `unknown kustomization field ${key}`);
  for (const r of k?.resources ?? []) {
    const p = path.resolve(dir, r);
    if (!fs.existsSync(p)) { problem(file, `resource ${r} does not exist`); continue; }
    if (fs.statSync(p).isDirectory()) walkKustomization(p, seen);
    else if (!manifests.has(p)) manifests.set(p, readYamlDocs(p));
  }
}
const seen = new Set();
walkKustomization(path.resolve(root), seen);
for (const d of fs.readdirSync(root, { withFileTypes: true })) {
  const sub = path.resolve(root, d.name);
  if (d.isDirectory() && fs.existsSync(path.join(sub, "kustomization.yaml"))) walkKustomization(sub, seen);
}
function listYaml(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.resolve(dir, e.name);
    if (e.isDirectory()) return listYaml(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}
const prometheusDir = path.resolve(root, "prometheus");  // configuration for the site's Prometheus, not objects
const adapterRulesFile = path.join(prometheusDir, "adapter-rules.yaml");
for (const f of listYaml(root)) {
  if (path.basename(f) === "kustomization.yaml" || f.startsWith(prometheusDir + path.sep)) continue;
  if (!manifests.has(f)) problem(f, "not reachable from any kustomization.yaml");
}

// ---- schema: kubernetes-models validators + client-node field lists
function modelsModule(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const spec = group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`;
  try { return require(spec); } catch { return null; }
}
function unknownFields(input, output, at, out) {
  if (Array.isArray(input)) {
    input.forEach((v, i) => unknownFields(v, Array.isArray(output) ? output[i] : undefined, `${at}[${i}]`, out));
  } else if (input && typeof input === "object") {
    for (const [k, v] of Object.entries(input)) {
      const o = output && typeof output === "object" ? output[k] : undefined;
      if (o === undefined) out.push(`${at}.${k}`);
      else unknownFields(v, o, `${at}.${k}`, out);
    }
  }
}
const objects = [];  // {file, doc, where}
for (const [file, docs] of manifests) {
  docs.forEach((doc, i) => {
    const where = `${path.relative(root, file)}#${i + 1} ${doc?.kind ?? "?"}/${doc?.metadata?.name ?? "?"}`;
    if (!doc || typeof doc !== "object" || !doc.apiVersion || !doc.kind) {
      problem(where, "not a Kubernetes object (apiVersion and kind required)");
      return;
    }
    objects.push({ file, doc, where });
    const mod = modelsModule(doc.apiVersion);
    const Model = mod?.[doc.kind];
    if (!Model) {
      problem(where, `the Kubernetes API has no kind ${doc.kind} in ${doc.apiVersion}`);
      return;
    }
    try {
      new Model(doc).validate();
    } catch (e) {
      problem(where, `schema: ${e.message}`);
    }
    const version = doc.apiVersion.split("/").pop();
    const typeName = version.charAt(0).toUpperCase() + version.slice(1) + doc.kind;
    if (!fs.existsSync(path.join(clientModels, `${typeName}.js`))) {
      problem(where, `the Kubernetes API has no type ${typeName} (apiVersion removed or misspelt)`);
      return;
    }
    const round = ObjectSerializer.serialize(ObjectSerializer.deserialize(doc, typeName), typeName);
    const unknown = [];
    unknownFields(doc, round, "", unknown);
    for (const u of unknown) problem(where, `unknown field ${u.slice(1)}`);
  });
}

// ---- references between the objects
const byKind = (k) => objects.filter((o) => o.doc.kind === k);
const labelsMatch = (selector, labels) =>
  selector && Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const podSpecOf = (doc) =>
  doc.kind === "CronJob" ? doc.spec?.jobTemplate?.spec?.template?.spec
                         : doc.spec?.template?.spec;
const workloads = objects.filter((o) => ["Deployment", "StatefulSet", "DaemonSet", "CronJob"].includes(o.doc.kind));
const configMaps = new Map(byKind("ConfigMap").map((o) => [o.doc.metadata.name, o.doc]));
const serviceAccounts = new Set(byKind("ServiceAccount").map((o) => o.doc.metadata.name));
const probes = [];
const commands = [];
for (const { doc, where } of workloads) {
  if (doc.kind !== "CronJob") {
    if (!labelsMatch(doc.spec?.selector?.matchLabels, doc.spec?.template?.metadata?.labels))
      problem(where, "spec.selector.matchLabels does not select spec.template.metadata.labels");
  }
  const pod = podSpecOf(doc) ?? {};
  if (pod.serviceAccountName && !serviceAccounts.has(pod.serviceAccountName))
    problem(where, `serviceAccountName ${pod.serviceAccountName} is not defined here`);
  if (pod.securityContext?.runAsNonRoot !== true) problem(where, "pod must set securityContext.runAsNonRoot: true");
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  for (const v of volumes.values()) {
    if (v.configMap && !configMaps.has(v.configMap.name))
      problem(where, `volume ${v.name}: ConfigMap ${v.configMap.name} is not defined here`);
  }
  for (const c of pod.containers ?? []) {
    const cw = `${where} container ${c.name}`;
    if (c.securityContext?.allowPrivilegeEscalation !== false) problem(cw, "allowPrivilegeEscalation must be false");
    if (c.securityContext?.readOnlyRootFilesystem !== true) problem(cw, "readOnlyRootFilesystem must be true");
    if (!c.resources?.requests || !c.resources?.limits?.memory) problem(cw, "needs resource requests and a memory limit");
    for (const m of c.volumeMounts ?? []) {
      const v = volumes.get(m.name);
      if (!v) { problem(cw, `volumeMount ${m.name} has no volume`); continue; }
      if (m.subPath && v.configMap && !(m.subPath in (configMaps.get(v.configMap.name)?.data ?? {})))
        problem(cw, `volumeMount ${m.name}: ConfigMap ${v.configMap.name} has no key ${m.subPath}`);
    }
    for (const kind of ["livenessProbe", "readinessProbe", "startupProbe"]) {
      const p = c[kind]?.httpGet;
      if (!p) continue;
      if (typeof p.port === "string" && !(c.ports ?? []).some((pt) => pt.name === p.port))
        problem(cw, `${kind} port ${p.port} is not a named container port`);
      probes.push([doc.metadata.name, kind, p.path]);
    }
    commands.push([doc.metadata.name, c.image, (c.args ?? []).join(" ")]);
  }
}
const deployments = new Map(byKind("Deployment").map((o) => [o.doc.metadata.name, o.doc]));
for (const { doc, where } of byKind("Service")) {
  const hit = [...deployments.values()].some((d) => labelsMatch(doc.spec?.selector, d.spec.template.metadata.labels));
  if (!hit) problem(where, "spec.selector selects no Deployment's pods");
  for (const p of doc.spec?.ports ?? []) {
    const target = p.targetPort;
    const named = [...deployments.values()].some((d) =>
      (d.spec.template.spec.containers ?? []).some((c) => (c.ports ?? []).some((cp) => cp.name === target || cp.containerPort === target)));
    if (!named) problem(where, `targetPort ${target} is no container port`);
  }
}
for (const { doc, where } of byKind("PodDisruptionBudget")) {
  const hit = [...deployments.values()].filter((d) => labelsMatch(doc.spec?.selector?.matchLabels, d.spec.template.metadata.labels));
  if (hit.length === 0) problem(where, "selector selects no Deployment's pods");
  for (const d of hit) {
    const minReplicas = byKind("HorizontalPodAutoscaler").find((h) => h.doc.spec.scaleTargetRef.name === d.metadata.name)?.doc.spec.minReplicas ?? d.spec.replicas;
    if (doc.spec.maxUnavailable !== undefined && doc.spec.maxUnavailable >= minReplicas)
      problem(where, `maxUnavailable ${doc.spec.maxUnavailable} lets every replica of ${d.metadata.name} go`);
  }
}
let adapterNames = new Set();
const series = [];
if (fs.existsSync(adapterRulesFile)) {
  const [rules] = readYamlDocs(adapterRulesFile);
  for (const [i, r] of (rules?.rules ?? []).entries()) {
    const m = /^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(r.seriesQuery ?? "");
    if (!m) { problem(adapterRulesFile, `rules[${i}].seriesQuery names no metric`); continue; }
    series.push(m[1]);
    const re = new RegExp(r.name?.matches ?? "^(.*)$");
    const mm = re.exec(m[1]);
    if (!mm) { problem(adapterRulesFile, `rules[${i}].name.matches does not match ${m[1]}`); continue; }
    adapterNames.add((r.name?.as ?? "${1}").replace(/\$\{(\d+)\}/g, (_, n) => mm[Number(n)] ?? ""));
    if (!/<<\.Series>>/.test(r.metricsQuery ?? "") || !/<<\.LabelMatchers>>/.test(r.metricsQuery ?? ""))
      problem(adapterRulesFile, `rules[${i}].metricsQuery must use <<.Series>> and <<.LabelMatchers>>`);
  }
}
for (const { doc, where } of byKind("HorizontalPodAutoscaler")) {
  const t = doc.spec.scaleTargetRef;
  if (t.kind !== "Deployment" || !deployments.has(t.name)) problem(where, `scaleTargetRef ${t.kind}/${t.name} is not a Deployment here`);
  if (!(doc.spec.metrics ?? []).some((m) => m.type === "Pods"))
    problem(where, "no Pods metric (the request rate)");
  for (const m of doc.spec.metrics ?? []) {
    const name = m.pods?.metric?.name ?? m.external?.metric?.name;
    if (name && !adapterNames.has(name)) problem(where, `metric ${name} is served by no rule of prometheus/adapter-rules.yaml`);
  }
}

// ---- hand-offs to the calling script
for (const [name, cm] of configMaps)
  for (const [key, text] of Object.entries(cm.data ?? {})) fs.writeFileSync(path.join(outDir, `configmap-${name}-${key}`), text);
fs.writeFileSync(path.join(outDir, "probes.tsv"), probes.map((p) => p.join("\t")).join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "series.txt"), series.join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "commands.tsv"), commands.map((c) => c.join("\t")).join("\n") + "\n");

const count = [...manifests.values()].reduce((n, d) => n + d.length, 0);
if (problems.length) {
  for (const p of problems) console.error(`FAIL ${p}`);
  console.error(`${problems.length} problem(s) in ${count} objects`);
  process.exit(1);
}
console.log(`ok: ${count} objects in ${manifests.size} files from ${kustomizations.length} kustomizations ` +
            `valid against the Kubernetes API schema; references hold`);
