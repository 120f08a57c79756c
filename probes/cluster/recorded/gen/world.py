"""Building blocks for the recorded scenarios in assets/scenarios.

The scenarios are data: Kubernetes objects as `kubectl get -o yaml` prints
them, Envoy admin output as Envoy prints it, logs as the containers write
them. Writing them by hand drifts (a pod IP in an EndpointSlice that no pod
has, an Envoy host list that does not match the story); this module builds
them from one description per scenario, so every cross-reference holds.
Run `python3 probes/scenario/gen/scenarios.py` from the repository root and
commit the output; the Go tests check what it wrote.
"""

import hashlib
import json
import os
import shutil
import uuid
from datetime import datetime, timedelta, timezone

import yaml

ISTIO_VERSION = "1.24.2"
PROXY_IMAGE = "docker.io/istio/proxyv2:" + ISTIO_VERSION
PILOT_IMAGE = "docker.io/istio/pilot:" + ISTIO_VERSION
DOMAIN = "cluster.local"

NODES = {
    "worker-a": {"ip": "10.0.1.11", "zone": "eu-west-1a", "cidr": "10.244.0"},
    "worker-b": {"ip": "10.0.1.12", "zone": "eu-west-1b", "cidr": "10.244.1"},
    "worker-c": {"ip": "10.0.1.13", "zone": "eu-west-1c", "cidr": "10.244.2"},
}
REGION = "eu-west-1"


def ts(t):
    """RFC 3339 seconds, as the API server prints object times."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def ms(t):
    """Milliseconds, as Envoy's access log prints START_TIME."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def us(t):
    """Microseconds, as pilot-agent and Envoy stamp their own log lines."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)


def digest(*parts, n=64):
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:n]


def uid(*parts):
    return str(uuid.UUID(digest(*parts, n=32), version=4))


class Str(str):
    """A string YAML prints as a literal block."""


def _str_presenter(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")


yaml.add_representer(Str, _str_presenter)


class KubectlDumper(yaml.SafeDumper):
    """Prints like kubectl: keys sorted, strings that need quotes in double
    quotes."""

    def ignore_aliases(self, data):
        return True

    def choose_scalar_style(self):
        style = super().choose_scalar_style()
        return '"' if style == "'" else style


KubectlDumper.add_representer(Str, _str_presenter)


def dump_docs(docs):
    return "---\n".join(yaml.dump(d, Dumper=KubectlDumper, default_flow_style=False, sort_keys=True, width=100000) for d in docs)


class World:
    """One scenario: objects, recorded admin output, logs, syncz."""

    def __init__(self, name, now, seed=None):
        self.name = name
        self.now = now
        self.files = {}  # manifest file -> [objects]
        self.envoy = {}  # (ns, pod) -> {file: text}
        self.logs = {}  # (ns, pod, container, previous) -> [lines]
        self.pods = {}  # (ns, name) -> Pod
        self.services = {}  # (ns, name) -> dict
        self.rv = 48100 + int(digest(name, n=4), 16) % 5000
        self.ip_next = {}
        self.seed = seed or name

    # --- bookkeeping -------------------------------------------------------

    def add(self, file, obj):
        self.files.setdefault(file, []).append(obj)
        return obj

    def meta(self, kind, ns, name, created, labels=None, annotations=None, owner=None, extra=None):
        self.rv += 7
        m = {"name": name, "uid": uid(self.name, kind, ns, name), "resourceVersion": str(self.rv), "creationTimestamp": ts(created)}
        if ns:
            m["namespace"] = ns
        if labels:
            m["labels"] = dict(labels)
        if annotations:
            m["annotations"] = dict(annotations)
        if owner:
            m["ownerReferences"] = [owner]
        if extra:
            m.update(extra)
        return m

    def pod_ip(self, node, host):
        return "%s.%d" % (NODES[node]["cidr"], host)

    def log(self, ns, pod, container, lines, previous=False):
        self.logs.setdefault((ns, pod, container, previous), []).extend(lines)

    # --- namespaces, mesh ----------------------------------------------------

    def namespace(self, name, created, injection="enabled", labels=None):
        lab = {"kubernetes.io/metadata.name": name}
        if injection:
            lab["istio-injection"] = injection
        lab.update(labels or {})
        return self.add("namespaces.yaml", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": self.meta("Namespace", None, name, created, labels=lab),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        })

    def control_plane(self, created, mesh, native_sidecars=False):
        self.namespace("istio-system", created, injection=None)
        self.add("istio-system.yaml", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": self.meta("ConfigMap", "istio-system", "istio", created, labels={
                "app.kubernetes.io/instance": "istiod", "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "istiod",
                "app.kubernetes.io/part-of": "istio", "app.kubernetes.io/version": ISTIO_VERSION, "helm.sh/chart": "istiod-" + ISTIO_VERSION,
                "install.operator.istio.io/owning-resource": "unknown", "istio.io/rev": "default", "operator.istio.io/component": "Pilot", "release": "istiod",
            }, annotations={"meta.helm.sh/release-name": "istiod", "meta.helm.sh/release-namespace": "istio-system"}),
            "data": {"mesh": Str(mesh.strip() + "\n"), "meshNetworks": "networks: {}"},
        })
        self.service("istio-system", "istiod", "10.96.0.15", {"app": "istiod", "istio": "pilot"}, created, ports=[
            ("grpc-xds", 15010, 15010), ("https-dns", 15012, 15012), ("https-webhook", 443, 15017), ("http-monitoring", 15014, 15014),
        ], file="istio-system.yaml", labels={"app": "istiod", "istio": "pilot", "istio.io/rev": "default", "release": "istiod"})
        env = [
            {"name": "REVISION", "value": "default"},
            {"name": "PILOT_CERT_PROVIDER", "value": "istiod"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
            {"name": "SERVICE_ACCOUNT", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.serviceAccountName"}}},
            {"name": "KUBECONFIG", "value": "/var/run/secrets/remote/config"},
            {"name": "CA_TRUSTED_NODE_ACCOUNTS", "value": "istio-system/ztunnel"},
            {"name": "PILOT_TRACE_SAMPLING", "value": "1"},
            {"name": "PILOT_ENABLE_ANALYSIS", "value": "false"},
            {"name": "CLUSTER_ID", "value": "Kubernetes"},
            {"name": "GOMEMLIMIT", "valueFrom": {"resourceFieldRef": {"divisor": "0", "resource": "limits.memory"}}},
            {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"divisor": "0", "resource": "limits.cpu"}}},
            {"name": "PLATFORM"},
        ]
        if native_sidecars:
            env.append({"name": "ENABLE_NATIVE_SIDECARS", "value": "true"})
        name = "istiod-7c9f8b6d5c-mx4qp"
        node = "worker-a"
        ip = self.pod_ip(node, 5)
        started = created + timedelta(seconds=9)
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": self.meta("Pod", "istio-system", name, created, labels={
                "app": "istiod", "install.operator.istio.io/owning-resource": "unknown", "istio": "pilot", "istio.io/dataplane-mode": "none",
                "istio.io/rev": "default", "operator.istio.io/component": "Pilot", "pod-template-hash": "7c9f8b6d5c", "sidecar.istio.io/inject": "false",
            }, annotations={"prometheus.io/port": "15014", "prometheus.io/scrape": "true", "sidecar.istio.io/inject": "false"},
                owner=self.rs_owner("istio-system", "istiod-7c9f8b6d5c")),
            "spec": {
                "containers": [{
                    "args": ["discovery", "--monitoringAddr=:15014", "--log_output_level=default:info", "--domain", DOMAIN, "--keepaliveMaxServerConnectionAge", "30m"],
                    "env": env,
                    "image": PILOT_IMAGE, "imagePullPolicy": "IfNotPresent", "name": "discovery",
                    "ports": [{"containerPort": 8080, "name": "http-debug", "protocol": "TCP"}, {"containerPort": 15010, "name": "grpc-xds", "protocol": "TCP"},
                              {"containerPort": 15017, "name": "https-webhooks", "protocol": "TCP"}],
                    "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "initialDelaySeconds": 1, "periodSeconds": 3, "successThreshold": 1, "timeoutSeconds": 5},
                    "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True, "runAsNonRoot": True},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                    "volumeMounts": [{"mountPath": "/var/run/secrets/tokens", "name": "istio-token", "readOnly": True},
                                     {"mountPath": "/var/run/secrets/istio-dns", "name": "local-certs"},
                                     {"mountPath": "/etc/cacerts", "name": "cacerts", "readOnly": True},
                                     {"mountPath": "/var/run/secrets/remote", "name": "istio-kubeconfig", "readOnly": True},
                                     {"mountPath": "/var/run/secrets/istiod/tls", "name": "istio-csr-dns-cert", "readOnly": True},
                                     {"mountPath": "/var/run/secrets/istiod/ca", "name": "istio-csr-ca-configmap", "readOnly": True}],
                }],
                "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": node, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": "istiod", "serviceAccountName": "istiod",
                "terminationGracePeriodSeconds": 30,
                "tolerations": [{"key": "cni.istio.io/not-ready", "operator": "Exists"}] + default_tolerations(),
                "volumes": [{"emptyDir": {"medium": "Memory"}, "name": "local-certs"},
                            {"name": "istio-token", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}},
                            {"name": "cacerts", "secret": {"defaultMode": 420, "optional": True, "secretName": "cacerts"}},
                            {"name": "istio-kubeconfig", "secret": {"defaultMode": 420, "optional": True, "secretName": "istio-kubeconfig"}},
                            {"name": "istio-csr-dns-cert", "secret": {"defaultMode": 420, "optional": True, "secretName": "istiod-tls"}},
                            {"configMap": {"defaultMode": 420, "name": "istio-ca-root-cert", "optional": True}, "name": "istio-csr-ca-configmap"}],
            },
            "status": {
                "conditions": conditions(created, created + timedelta(seconds=8), started + timedelta(seconds=3), ready=True),
                "containerStatuses": [container_status(self, "istio-system", name, "discovery", PILOT_IMAGE, started, ready=True)],
                "hostIP": NODES[node]["ip"], "hostIPs": [{"ip": NODES[node]["ip"]}], "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                "qosClass": "Burstable", "startTime": ts(created + timedelta(seconds=1)),
            },
        }
        self.add("istio-system.yaml", pod)

    def rs_owner(self, ns, rs):
        return {"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "ReplicaSet", "name": rs, "uid": uid(self.name, "ReplicaSet", ns, rs)}

    # --- services and endpoints ------------------------------------------------

    def service(self, ns, name, cluster_ip, selector, created, ports, file=None, labels=None):
        """ports: [(name, port, targetPort)]"""
        svc = {
            "apiVersion": "v1", "kind": "Service",
            "metadata": self.meta("Service", ns, name, created, labels=labels or {"app": name}),
            "spec": {
                "clusterIP": cluster_ip, "clusterIPs": [cluster_ip], "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": pn, "port": p, "protocol": "TCP", "targetPort": tp} for pn, p, tp in ports],
                "selector": selector, "sessionAffinity": "None", "type": "ClusterIP",
            },
            "status": {"loadBalancer": {}},
        }
        self.services[(ns, name)] = svc
        return self.add(file or "%s.yaml" % ns, svc)

    def endpoint_slice(self, ns, service, suffix, endpoints, ports, created, file=None):
        """endpoints: [(pod, ready, serving, terminating)]; ports: [(name, port)]"""
        svc = self.services[(ns, service)]
        eps = []
        for pod, ready, serving, terminating in endpoints:
            p = self.pods[(ns, pod)]
            eps.append({
                "addresses": [p.ip],
                "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
                "nodeName": p.node,
                "targetRef": {"kind": "Pod", "name": pod, "namespace": ns, "uid": p.uid},
                "zone": NODES[p.node]["zone"],
            })
        name = "%s-%s" % (service, suffix)
        return self.add(file or "%s.yaml" % ns, {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "addressType": "IPv4",
            "endpoints": eps,
            "metadata": self.meta("EndpointSlice", ns, name, created, labels={
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "kubernetes.io/service-name": service,
                **{k: v for k, v in svc["metadata"].get("labels", {}).items()},
            }, annotations={"endpoints.kubernetes.io/last-change-trigger-time": ts(created)},
                owner={"apiVersion": "v1", "blockOwnerDeletion": True, "controller": True, "kind": "Service", "name": service, "uid": svc["metadata"]["uid"]},
                extra={"generateName": service + "-"}),
            "ports": [{"name": pn, "port": p, "protocol": "TCP"} for pn, p in ports],
        })

    def istio(self, file, obj):
        return self.add(file, obj)


def default_tolerations():
    return [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]


def conditions(created, initialized, ready_at, ready=True, ready_reason=None, ready_message=None, containers_ready=None):
    cr = ready if containers_ready is None else containers_ready
    out = [
        {"lastProbeTime": None, "lastTransitionTime": ts(initialized), "status": "True", "type": "PodReadyToStartContainers"},
        {"lastProbeTime": None, "lastTransitionTime": ts(initialized), "status": "True", "type": "Initialized"},
        {"lastProbeTime": None, "lastTransitionTime": ts(ready_at), "status": "True" if ready else "False", "type": "Ready"},
        {"lastProbeTime": None, "lastTransitionTime": ts(ready_at), "status": "True" if cr else "False", "type": "ContainersReady"},
        {"lastProbeTime": None, "lastTransitionTime": ts(created), "status": "True", "type": "PodScheduled"},
    ]
    if not ready:
        out[2]["reason"] = ready_reason or "ContainersNotReady"
        if ready_message:
            out[2]["message"] = ready_message
    if not cr:
        out[3]["reason"] = ready_reason or "ContainersNotReady"
        if ready_message:
            out[3]["message"] = ready_message
    return out


def container_status(w, ns, pod, name, image, started, ready=True, restarts=0, last=None, state=None, init=False):
    s = {
        "containerID": "containerd://" + digest(w.name, ns, pod, name, restarts),
        "image": image,
        "imageID": image.split(":")[0] + "@sha256:" + digest(image),
        "lastState": {},
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "started": True,
        "state": state or {"running": {"startedAt": ts(started)}},
    }
    if last:
        s["lastState"] = {"terminated": last}
    return s


class Pod:
    """A pod as the API server reports it after the sidecar injector and the
    kubelet have done their work.

    sidecar: "classic" (a container, appended after the app unless hold),
    "native" (an init container with restartPolicy Always), or "none".
    """

    def __init__(self, w, ns, name, app, node, host, created, image, ports, version="v1",
                 sidecar="classic", hold=False, proxy_config=None, proxy_metadata=None,
                 readiness=None, app_env=None, prestop=None, rs=None, owner=None, sa=None,
                 app_started=None, app_ready=True, restarts=0, last_terminated=None,
                 proxy_started=None, proxy_ready=True, proxy_state=None, app_state=None,
                 ready=None, ready_at=None, ready_message=None, deletion=None,
                 extra_labels=None, extra_annotations=None, inject_label=None, resources=None,
                 proxy_resources=None, app_container=None, file=None, restart_policy="Always", probe=None):
        self.w, self.ns, self.name, self.app, self.node = w, ns, name, app, node
        self.ip = w.pod_ip(node, host)
        self.uid = uid(w.name, "Pod", ns, name)
        self.sidecar = sidecar
        app_container = app_container or app
        self.container = app_container
        init_done = created + timedelta(seconds=2)
        if sidecar == "none":
            init_done = created + timedelta(seconds=1)
        proxy_started = proxy_started or (init_done + timedelta(seconds=1))
        if sidecar == "native" or (sidecar == "classic" and hold):
            # The kubelet starts the app only once the native sidecar's
            # startupProbe passed, or (hold) once istio-proxy's postStart
            # `pilot-agent wait` returned.
            app_started = app_started or proxy_started + timedelta(seconds=2)
        app_started = app_started or init_done + timedelta(seconds=1)
        self.app_started, self.proxy_started = app_started, proxy_started

        labels = {"app": app, "pod-template-hash": (rs or name).rsplit("-", 1)[-1]}
        if version:
            labels["version"] = version
        if inject_label is not None:
            labels["sidecar.istio.io/inject"] = inject_label
        annotations = {}
        if sidecar != "none":
            labels["security.istio.io/tlsMode"] = "istio"
            labels["service.istio.io/canonical-name"] = app
            labels["service.istio.io/canonical-revision"] = version or "latest"
            status = {"initContainers": ["istio-init"], "containers": ["istio-proxy"],
                      "volumes": ["workload-socket", "credential-socket", "workload-certs", "istio-envoy", "istio-data", "istio-podinfo", "istio-token", "istiod-ca-cert"],
                      "imagePullSecrets": None, "revision": "default"}
            if sidecar == "native":
                status = {"initContainers": ["istio-init", "istio-proxy"], "containers": None, "volumes": status["volumes"], "imagePullSecrets": None, "revision": "default"}
            annotations.update({
                "istio.io/rev": "default",
                "kubectl.kubernetes.io/default-container": app_container,
                "kubectl.kubernetes.io/default-logs-container": app_container,
                "prometheus.io/path": "/stats/prometheus",
                "prometheus.io/port": "15020",
                "prometheus.io/scrape": "true",
                "sidecar.istio.io/status": json.dumps(status, separators=(",", ":")),
            })
            if proxy_config:
                text = yaml.dump(proxy_config, default_flow_style=False).strip()
                annotations["proxy.istio.io/config"] = Str(text + "\n") if "\n" in text else text
        labels.update(extra_labels or {})
        annotations.update(extra_annotations or {})
        self.labels = labels

        sa = sa or app
        if owner is None and rs:
            owner = w.rs_owner(ns, rs)
        kube_api = "kube-api-access-" + digest(w.name, ns, name, "kapi", n=5)

        readiness_probe = None
        probers = None
        if readiness:
            path, port = readiness
            if sidecar != "none":
                readiness_probe = {"failureThreshold": 3, "httpGet": {"path": "/app-health/%s/readyz" % app_container, "port": 15020, "scheme": "HTTP"},
                                   "initialDelaySeconds": 2, "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1}
                probers = json.dumps({"/app-health/%s/readyz" % app_container: {"httpGet": {"path": path, "port": port, "scheme": "HTTP"}, "timeoutSeconds": 1}}, separators=(",", ":"))
            else:
                readiness_probe = {"failureThreshold": 3, "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
                                   "initialDelaySeconds": 2, "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1}
        app_c = {
            "env": app_env or [],
            "image": image, "imagePullPolicy": "IfNotPresent", "name": app_container,
            "ports": [{"containerPort": p, "name": pn, "protocol": "TCP"} for pn, p in ports],
            "resources": resources or {"limits": {"memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": kube_api, "readOnly": True}],
        }
        if not app_c["env"]:
            del app_c["env"]
        if not app_c["ports"]:
            del app_c["ports"]
        if probe:
            readiness_probe = probe
        if readiness_probe:
            app_c["readinessProbe"] = readiness_probe
        if prestop:
            app_c["lifecycle"] = {"preStop": {"exec": {"command": prestop}}}

        containers = [app_c]
        init_containers = []
        volumes = [{"name": kube_api, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}}]
        if sidecar != "none":
            pod_ports = "[\n" + ",\n".join("    " + json.dumps({"name": pn, "containerPort": p, "protocol": "TCP"}, separators=(",", ":")) for pn, p in ports) + "\n]"
            proxy_env = [
                {"name": "PILOT_CERT_PROVIDER", "value": "istiod"},
                {"name": "CA_ADDR", "value": "istiod.istio-system.svc:15012"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                {"name": "INSTANCE_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                {"name": "SERVICE_ACCOUNT", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.serviceAccountName"}}},
                {"name": "HOST_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.hostIP"}}},
                {"name": "ISTIO_CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"divisor": "0", "resource": "limits.cpu"}}},
                {"name": "PROXY_CONFIG", "value": Str(json.dumps(proxy_config or {}, separators=(",", ":")) + "\n")},
                {"name": "ISTIO_META_POD_PORTS", "value": Str(pod_ports)},
                {"name": "ISTIO_META_APP_CONTAINERS", "value": app_container},
                {"name": "GOMEMLIMIT", "valueFrom": {"resourceFieldRef": {"divisor": "0", "resource": "limits.memory"}}},
                {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"divisor": "0", "resource": "limits.cpu"}}},
                {"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"},
                {"name": "ISTIO_META_NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
                {"name": "ISTIO_META_INTERCEPTION_MODE", "value": "REDIRECT"},
                {"name": "ISTIO_META_WORKLOAD_NAME", "value": app},
                {"name": "ISTIO_META_OWNER", "value": "kubernetes://apis/apps/v1/namespaces/%s/deployments/%s" % (ns, app)},
                {"name": "ISTIO_META_MESH_ID", "value": DOMAIN},
                {"name": "TRUST_DOMAIN", "value": DOMAIN},
            ]
            for k, v in (proxy_metadata or {}).items():
                proxy_env.append({"name": k, "value": v})
            if probers:
                proxy_env.append({"name": "ISTIO_KUBE_APP_PROBERS", "value": probers})
            res = proxy_resources or {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
            proxy = {
                "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local", "--proxyLogLevel=warning",
                         "--proxyComponentLogLevel=misc:error", "--log_output_level=default:info"],
                "env": proxy_env,
                "image": PROXY_IMAGE, "imagePullPolicy": "IfNotPresent", "name": "istio-proxy",
                "ports": [{"containerPort": 15090, "name": "http-envoy-prom", "protocol": "TCP"}],
                "readinessProbe": {"failureThreshold": 4, "httpGet": {"path": "/healthz/ready", "port": 15021, "scheme": "HTTP"},
                                   "periodSeconds": 15, "successThreshold": 1, "timeoutSeconds": 3},
                "resources": res,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "privileged": False, "readOnlyRootFilesystem": True,
                                    "runAsGroup": 1337, "runAsNonRoot": True, "runAsUser": 1337},
                "startupProbe": {"failureThreshold": 600, "httpGet": {"path": "/healthz/ready", "port": 15021, "scheme": "HTTP"},
                                 "periodSeconds": 1, "successThreshold": 1, "timeoutSeconds": 3},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [
                    {"mountPath": "/var/run/secrets/workload-spiffe-uds", "name": "workload-socket"},
                    {"mountPath": "/var/run/secrets/credential-uds", "name": "credential-socket"},
                    {"mountPath": "/var/run/secrets/workload-spiffe-credentials", "name": "workload-certs"},
                    {"mountPath": "/var/run/secrets/istio", "name": "istiod-ca-cert"},
                    {"mountPath": "/var/lib/istio/data", "name": "istio-data"},
                    {"mountPath": "/etc/istio/proxy", "name": "istio-envoy"},
                    {"mountPath": "/var/run/secrets/tokens", "name": "istio-token"},
                    {"mountPath": "/etc/istio/pod", "name": "istio-podinfo"},
                    {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": kube_api, "readOnly": True},
                ],
            }
            iptables = {
                "args": ["istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*",
                         "-d", "15090,15021,15020", "--log_output_level=default:info"],
                "image": PROXY_IMAGE, "imagePullPolicy": "IfNotPresent", "name": "istio-init",
                "resources": res,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]}, "privileged": False,
                                    "readOnlyRootFilesystem": False, "runAsGroup": 0, "runAsNonRoot": False, "runAsUser": 0},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": kube_api, "readOnly": True}],
            }
            init_containers.append(iptables)
            if sidecar == "native":
                proxy["restartPolicy"] = "Always"
                init_containers.append(proxy)
            elif hold:
                proxy["lifecycle"] = {"postStart": {"exec": {"command": ["pilot-agent", "wait"]}}}
                containers.insert(0, proxy)
            else:
                containers.append(proxy)
            volumes = [
                {"emptyDir": {}, "name": "workload-socket"},
                {"emptyDir": {}, "name": "credential-socket"},
                {"emptyDir": {}, "name": "workload-certs"},
                {"emptyDir": {"medium": "Memory"}, "name": "istio-envoy"},
                {"emptyDir": {}, "name": "istio-data"},
                {"downwardAPI": {"defaultMode": 420, "items": [
                    {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}, "path": "labels"},
                    {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations"}, "path": "annotations"}]}, "name": "istio-podinfo"},
                {"name": "istio-token", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}},
                {"configMap": {"defaultMode": 420, "name": "istio-ca-root-cert"}, "name": "istiod-ca-cert"},
            ] + volumes

        meta_extra = {"generateName": (rs or name.rsplit("-", 1)[0]) + "-"}
        if deletion:
            meta_extra["deletionGracePeriodSeconds"] = 30
            meta_extra["deletionTimestamp"] = ts(deletion)
        metadata = w.meta("Pod", ns, name, created, labels=labels, annotations=annotations or None, owner=owner, extra=meta_extra)
        spec = {
            "containers": containers,
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "nodeName": node, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
            "restartPolicy": restart_policy, "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": sa, "serviceAccountName": sa,
            "terminationGracePeriodSeconds": 30, "tolerations": default_tolerations(), "volumes": volumes,
        }
        if init_containers:
            spec["initContainers"] = init_containers

        # status
        statuses = []
        init_statuses = []
        if sidecar != "none":
            init_statuses.append({
                "containerID": "containerd://" + digest(w.name, ns, name, "istio-init"), "image": PROXY_IMAGE,
                "imageID": "docker.io/istio/proxyv2@sha256:" + digest(PROXY_IMAGE), "lastState": {}, "name": "istio-init",
                "ready": True, "restartCount": 0, "started": False,
                "state": {"terminated": {"containerID": "containerd://" + digest(w.name, ns, name, "istio-init"), "exitCode": 0,
                                         "finishedAt": ts(init_done), "reason": "Completed", "startedAt": ts(created + timedelta(seconds=1))}},
            })
            proxy_status = container_status(w, ns, name, "istio-proxy", PROXY_IMAGE, proxy_started, ready=proxy_ready, state=proxy_state)
            if proxy_state and "terminated" in proxy_state:
                proxy_status["started"] = False
                proxy_state["terminated"]["containerID"] = proxy_status["containerID"]
            if sidecar == "native":
                init_statuses.append(proxy_status)
            else:
                statuses.append(proxy_status)
        app_status = container_status(w, ns, name, app_container, image, app_started, ready=app_ready, restarts=restarts, last=last_terminated, state=app_state)
        statuses.append(app_status)
        statuses.sort(key=lambda s: s["name"])
        if ready is None:
            ready = app_ready and (proxy_ready or sidecar == "none")
        ready_at = ready_at or (max(app_started, proxy_started) + timedelta(seconds=3))
        status = {
            "conditions": conditions(created, init_done, ready_at, ready=ready, ready_message=ready_message,
                                     containers_ready=ready),
            "containerStatuses": statuses,
            "hostIP": NODES[node]["ip"], "hostIPs": [{"ip": NODES[node]["ip"]}],
            "phase": "Running", "podIP": self.ip, "podIPs": [{"ip": self.ip}],
            "qosClass": "Burstable", "startTime": ts(created),
        }
        if init_statuses:
            status["initContainerStatuses"] = init_statuses
        self.obj = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
        w.pods[(ns, name)] = self
        w.add(file or "%s.yaml" % ns, self.obj)

    @property
    def proxy_id(self):
        return "%s.%s" % (self.name, self.ns)


# --- istio-proxy logs ----------------------------------------------------------

def agent_startup(pod, start, ready_after=0.9, concurrency=2):
    """pilot-agent's and Envoy's first lines, up to "Envoy proxy is ready"."""
    t = start + timedelta(milliseconds=118)
    lines = []

    def at(dt_ms, level, msg):
        nonlocal t
        t = t + timedelta(milliseconds=dt_ms)
        lines.append("%s\t%s\t%s" % (us(t), level, msg))

    at(0, "info", 'FLAG: --concurrency="0"')
    at(1, "info", 'FLAG: --domain="%s.svc.cluster.local"' % pod.ns)
    at(0, "info", 'FLAG: --log_output_level="default:info"')
    at(0, "info", 'FLAG: --proxyComponentLogLevel="misc:error"')
    at(0, "info", 'FLAG: --proxyLogLevel="warning"')
    at(3, "info", "Version %s-f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c-Clean" % ISTIO_VERSION)
    at(1, "info", "Maximum file descriptors (ulimit -n): 1048576")
    at(0, "info", "Proxy role\tips=[%s] type=sidecar id=%s domain=%s.svc.cluster.local" % (pod.ip, pod.proxy_id, pod.ns))
    at(0, "info", "Apply proxy config from env {}")
    at(3, "info", "cpu limit detected as %d, setting concurrency" % concurrency)
    at(1, "info", "JWT policy is third-party-jwt")
    at(0, "info", "using credential fetcher of JWT type in %s trust domain" % DOMAIN)
    at(198, "info", "Workload SDS socket not found. Starting Istio SDS Server")
    at(0, "info", "CA Endpoint istiod.istio-system.svc:15012, provider Citadel")
    at(0, "info", "Opened SDS socket: ./var/run/secrets/workload-spiffe-uds/socket")
    at(0, "info", "Using CA istiod.istio-system.svc:15012 cert with certs: var/run/secrets/istio/root-cert.pem")
    at(1, "info", 'xdsproxy\tInitializing with upstream address "istiod.istio-system.svc:15012" and cluster "Kubernetes"')
    at(2, "info", "Pilot SAN: [istiod.istio-system.svc]")
    at(1, "info", "Starting proxy agent")
    at(0, "info", "Envoy command: [-c etc/istio/proxy/envoy-rev.json --drain-time-s 45 --drain-strategy immediate --local-address-ip-version v4 "
                  "--file-flush-interval-msec 1000 --disable-hot-restart --allow-unknown-static-fields -l warning --component-log-level misc:error --concurrency %d]" % concurrency)
    at(171, "info", "cache\tgenerated new workload certificate\tresourceName=default latency=171.73ms ttl=23h59m59.48s")
    at(0, "info", "cache\tRoot cert has changed, start rotating root cert")
    at(0, "info", "cache\treturned workload trust anchor from cache\tttl=23h59m59.48s")
    at(100, "info", "xdsproxy\tconnected to delta upstream XDS server: istiod.istio-system.svc:15012\tid=1")
    at(92, "info", "ads\tADS: new connection for node:%s-1" % pod.proxy_id)
    at(0, "info", "ads\tADS: new connection for node:%s-2" % pod.proxy_id)
    rest = max(ready_after * 1000 - (t - start).total_seconds() * 1000, 5)
    at(rest, "info", "Readiness succeeded in %.3fms" % (ready_after * 1000 + 3.5))
    at(0, "info", "Envoy proxy is ready")
    return lines, t


def agent_drain(start, drain_s=5):
    """A classic sidecar's shutdown without drain settings: pilot-agent waits
    terminationDrainDuration (5 s by default), then kills Envoy."""
    t0 = start
    end = start + timedelta(seconds=drain_s)
    return [
        "%s\tinfo\tStatus server has successfully terminated" % us(t0 + timedelta(microseconds=212)),
        "%s\tinfo\tAgent draining Proxy for termination" % us(t0 + timedelta(microseconds=377)),
        "%s\tinfo\tGraceful termination period is %ds, starting..." % (us(t0 + timedelta(microseconds=1021)), drain_s),
        "%s\tinfo\tGraceful termination period complete, terminating remaining proxies." % us(end + timedelta(microseconds=1590)),
        "%s\twarn\tAborting proxy" % us(end + timedelta(microseconds=1711)),
        "%s\tinfo\tEnvoy aborted normally" % us(end + timedelta(microseconds=9340)),
        "%s\twarn\tAborted proxy instance" % us(end + timedelta(microseconds=9422)),
        "%s\tinfo\tAgent has successfully terminated" % us(end + timedelta(microseconds=9501)),
    ]


def access(t, method, path, code, flags, details, upstream_host, cluster, dlocal, dremote, authority,
           ulocal="-", term="-", tfr="-", rx=0, tx=0, dur=3, ust=None, ua="Go-http-client/1.1", rid=None,
           sni="-", route="default", proto="HTTP/1.1", xff="-"):
    """One access-log line in Istio's default TEXT format."""
    if ust is None:
        ust = "-" if code in (0, 503, 502) and flags != "-" else str(max(dur - 1, 1))
    rid = rid or uid("rid", ms(t), path, upstream_host, dremote)
    req = '"%s %s %s"' % (method, path, proto) if method != "-" else '"- - -"'
    q = lambda s: '"%s"' % s
    return " ".join([
        "[%s]" % ms(t), req, str(code), flags, details, term, q(tfr), str(rx), str(tx), str(dur), ust,
        q(xff), q(ua if method != "-" else "-"), q(rid if method != "-" else "-"), q(authority if method != "-" else "-"),
        q(upstream_host), cluster, ulocal, dlocal, dremote, sni, route,
    ])
