"""The shop: the small mesh every scenario starts from, and the helpers that
turn a scenario's story into traffic, Envoy state and files."""

import os
import random
import shutil
from datetime import timedelta

import yaml

import envoy as E
from world import DOMAIN, ISTIO_VERSION, NODES, Pod, Str, World, access, agent_startup, digest, dump_docs, ms, ts, uid, us

MESH_BASE = """
accessLogFile: /dev/stdout
defaultConfig:
  discoveryAddress: istiod.istio-system.svc:15012
{extra_default}  proxyStatsMatcher:
    inclusionPrefixes:
    - cluster.outbound
defaultProviders:
  metrics:
  - prometheus
enablePrometheusMerge: true
{extra}rootNamespace: istio-system
trustDomain: cluster.local
"""


def mesh(hold=False, drain=None, registry_only=False):
    extra_default = ""
    if hold:
        extra_default += "  holdApplicationUntilProxyStarts: true\n"
    if drain:
        extra_default += "  terminationDrainDuration: %s\n" % drain
    extra = ""
    if registry_only:
        extra += "outboundTrafficPolicy:\n  mode: REGISTRY_ONLY\n"
    return MESH_BASE.format(extra_default=extra_default, extra=extra)


SVC_IPS = {"web": "10.96.31.7", "orders": "10.96.14.20", "orders-api": "10.96.14.20", "postgres": "10.96.0.20", "checkout": "10.96.22.41", "catalog": "10.96.18.3"}
IMAGES = {
    "web": "registry.shop.example.com/web:1.8.3",
    "orders": "registry.shop.example.com/orders:2.14.0",
    "orders-api": "registry.shop.example.com/orders-api:3.2.1",
    "checkout": "registry.shop.example.com/checkout:4.0.7",
    "catalog": "registry.shop.example.com/catalog:1.3.0",
    "postgres": "docker.io/library/postgres:16.4",
}


class Ghost:
    """A pod that is gone: its address lingers in some proxy's EDS."""

    def __init__(self, ip, name, app="orders", ns="shop"):
        self.ip, self.name, self.app, self.ns = ip, name, app, ns
        self.sidecar = "none"  # nothing of it logs any more
        self.node = None


class Shop:
    """A scenario world with the shop's conventions."""

    def __init__(self, name, now, mesh_config, native=False, server_version="v1.30.4"):
        self.w = World(name, now)
        self.now = now
        self.native = native
        self.server_version = server_version
        self.rng = random.Random(name)
        self.version = "%s/%d" % (ts(now - timedelta(minutes=14)), 40 + self.rng.randrange(30))
        created = now - timedelta(days=61, hours=3)
        self.w.control_plane(now - timedelta(days=9, hours=2, minutes=17), mesh_config, native_sidecars=native)
        self.shop_created = created
        self.sidecars = []  # (pod, Sidecar) recorded
        self.requests = []  # (src pod, t, code, flags, svc, ns, upstream pod)
        self.history = {}  # src proxy id -> {(code, flags): count before the log window}
        self.syncz = {}  # proxy id -> overrides

    # --- objects ---------------------------------------------------------

    def namespace(self, name="shop", injection="enabled", created=None):
        return self.w.namespace(name, created or self.shop_created, injection=injection)

    def service(self, name, ns="shop", port=8080, target=8080, port_name="http", selector=None, created=None):
        return self.w.service(ns, name, SVC_IPS.get(name, "10.96.40.%d" % (10 + len(self.w.services))), selector or {"app": name},
                              created or self.shop_created + timedelta(minutes=3), [(port_name, port, target)])

    def pod(self, ns, name, app, node, host, created, **kw):
        kw.setdefault("sidecar", "native" if self.native else "classic")
        kw.setdefault("image", IMAGES.get(app, "registry.shop.example.com/%s:1.0.0" % app))
        kw.setdefault("ports", [("http", 8080)])
        kw.setdefault("readiness", ("/healthz/ready", 8080))
        kw.setdefault("rs", name.rsplit("-", 1)[0])
        return Pod(self.w, ns, name, app, node, host, created, **kw)

    def slice(self, service, endpoints, ns="shop", port=8080, port_name="http", created=None, suffix=None):
        eps = []
        for e in endpoints:
            if isinstance(e, str):
                eps.append((e, True, True, False))
            else:
                eps.append(e)
        return self.w.endpoint_slice(ns, service, suffix or digest(self.w.name, service, "slice", n=5)[:5].replace("0", "x"), eps,
                                     [(port_name, port)], created or self.now - timedelta(minutes=20))

    # --- envoy -----------------------------------------------------------

    def outbound(self, svc, pods, port=8080, ns="shop", subset="", tls="auto", sa=None, target_port=None, **kw):
        """An outbound EDS cluster; pods become hosts at podIP:targetPort
        (EDS carries endpoint ports, not service ports)."""
        name = "outbound|%d|%s|%s.%s.svc.%s" % (port, subset, svc, ns, DOMAIN)
        hosts = []
        for p in pods:
            if isinstance(p, E.Host):
                hosts.append(p)
            else:
                hosts.append(E.Host(p.ip, target_port or port, node=p.node,
                                    cx_total=3 + self.rng.randrange(20), rq_success=400 + self.rng.randrange(2000), cx_active=1 + self.rng.randrange(3),
                                    tls_istio=p.sidecar != "none"))
        return E.Cluster(name, hosts, tls=tls, sa=sa or svc, service=(ns, svc), port=port, **kw)

    def background_clusters(self, src):
        """What every sidecar carries besides the scenario's own clusters."""
        cl = [
            E.Cluster("BlackHoleCluster", [], kind="STATIC", tls="none"),
            E.Cluster("InboundPassthroughCluster", [], kind="ORIGINAL_DST", tls="none"),
            E.Cluster("PassthroughCluster", [], kind="ORIGINAL_DST", tls="none"),
            E.Cluster("agent", [E.Host("127.0.0.1", 15020, rq_success=412)], kind="STATIC_BOOT", tls="none", config=False),
            E.Cluster("outbound|443||kubernetes.default.svc.cluster.local",
                      [E.Host("10.0.1.10", 6443, tls_istio=False)], tls="auto", service=("default", "kubernetes"), port=443, config=False),
            E.Cluster("outbound|53||kube-dns.kube-system.svc.cluster.local",
                      [E.Host("10.244.0.2", 53, node="worker-a", tls_istio=False), E.Host("10.244.1.2", 53, node="worker-b", tls_istio=False)],
                      tls="auto", service=("kube-system", "kube-dns"), port=53, config=False),
            E.Cluster("outbound|15010||istiod.istio-system.svc.cluster.local",
                      [E.Host("10.244.0.5", 15010, node="worker-a", tls_istio=False)], tls="auto", service=("istio-system", "istiod"), port=15010, config=False),
            E.Cluster("outbound|15012||istiod.istio-system.svc.cluster.local",
                      [E.Host("10.244.0.5", 15012, node="worker-a", tls_istio=False)], tls="auto", service=("istio-system", "istiod"), port=15012, config=False),
            E.Cluster("outbound|15014||istiod.istio-system.svc.cluster.local",
                      [E.Host("10.244.0.5", 15014, node="worker-a", tls_istio=False)], tls="auto", service=("istio-system", "istiod"), port=15014, config=False),
            E.Cluster("prometheus_stats", [E.Host("127.0.0.1", 15000, rq_success=97)], kind="STATIC_BOOT", tls="none", config=False),
            E.Cluster("sds-grpc", [E.Host(None, pipe="./var/run/secrets/workload-spiffe-uds/socket", rq_success=2)], kind="STATIC_BOOT", tls="none", config=False),
            E.Cluster("xds-grpc", [E.Host(None, pipe="./etc/istio/proxy/XDS", rq_success=1)], kind="STATIC_BOOT", tls="none", config=False),
        ]
        return cl

    def listeners(self, http_ports=(8080,), extra=()):
        ls = [E.Listener("10.96.0.1_443", "10.96.0.1", 443), E.Listener("10.96.0.10_53", "10.96.0.10", 53),
              E.Listener("0.0.0.0_15010", "0.0.0.0", 15010), E.Listener("10.96.0.15_15012", "10.96.0.15", 15012),
              E.Listener("10.96.0.15_443", "10.96.0.15", 443), E.Listener("0.0.0.0_15014", "0.0.0.0", 15014)]
        for p in http_ports:
            ls.append(E.Listener("0.0.0.0_%d" % p, "0.0.0.0", p))
        ls += list(extra)
        ls += [E.Listener("virtualOutbound", "0.0.0.0", 15001), E.Listener("virtualInbound", "0.0.0.0", 15006)]
        return ls

    def record_sidecar(self, pod, clusters, listeners=None, routes=None, server_stats=None):
        sc = E.Sidecar(pod, self.now, self.version, clusters + self.background_clusters(pod), listeners or self.listeners(), routes=routes, server_stats=server_stats)
        self.sidecars.append((pod, sc))
        return sc

    # --- logs -------------------------------------------------------------

    def proxy_log(self, pod, lines_after_start=(), ready_after=0.9):
        start_lines, ready = agent_startup(pod, pod.proxy_started, ready_after=ready_after)
        self.w.log(pod.ns, pod.name, "istio-proxy", start_lines + list(lines_after_start))
        return ready

    def app_log(self, pod, lines, previous=False):
        self.w.log(pod.ns, pod.name, pod.container, lines, previous=previous)

    # --- traffic -----------------------------------------------------------

    def call(self, src, svc, t, upstream, code=200, flags="-", details="via_upstream", method="GET", path=None, port=8080,
             ns="shop", subset="", tfr="-", dur=None, inbound=True, inbound_code=None, inbound_flags="-", inbound_details="via_upstream",
             inbound_tfr="-", target_port=None, cluster=None, authority=None, tx=None, term="-", route="default", ua="Go-http-client/1.1",
             inbound_term="-", remote=None):
        """One request from src's app through its sidecar to svc: the source
        sidecar's outbound line and, when the request reached an upstream
        sidecar, that sidecar's inbound line."""
        rng = self.rng
        path = path or rng.choice(["/api/orders?customer=%d" % rng.randrange(10000, 99999), "/api/orders/%d" % rng.randrange(100000, 999999)])
        if dur is None:
            dur = 2 + rng.randrange(14) if code == 200 else 1 + rng.randrange(3)
        if tx is None:
            # Envoy's local replies: "no healthy upstream", "upstream connect
            # error or disconnect/reset before headers. reset reason: ...".
            tx = 400 + rng.randrange(900) if code == 200 else {"UH": 19, "UC": 95, "UO": 81, "UF,URX": 152, "UF": 145}.get(flags, 95)
        cluster = cluster or "outbound|%d|%s|%s.%s.svc.%s" % (port, subset, svc, ns, DOMAIN)
        authority = authority or ("%s:%d" % (svc, port) if src is None or src.ns == ns else "%s.%s:%d" % (svc, ns, port))
        target_port = target_port or port
        uhost = "%s:%d" % (upstream.ip, target_port) if upstream is not None else "-"
        rid = uid(self.w.name, "rid", ms(t), path, rng.random())
        eph = 30000 + rng.randrange(30000)
        lines = {}
        if src is not None and src.sidecar != "none":
            self.requests.append((src, t, code, flags, svc, ns, upstream))
            ust = "-" if flags != "-" else str(max(dur - 1, 1))
            lines[(src.ns, src.name)] = access(
                t, method, path, code, flags, details, uhost, cluster, "%s:%d" % (SVC_IPS.get(svc, "10.96.40.9"), port), "%s:%d" % (src.ip, eph), authority,
                ulocal=("%s:%d" % (src.ip, 30000 + rng.randrange(30000)) if upstream is not None and flags in ("-", "URX") else "-"),
                term=term, tfr=tfr, rx=0 if method == "GET" else 212, tx=tx, dur=dur, ust=ust, rid=rid, route=route, ua=ua)
        if inbound and upstream is not None and upstream.sidecar != "none":
            icode = inbound_code if inbound_code is not None else code
            idur = max(dur - 1, 1)
            iust = "-" if inbound_flags != "-" else str(max(idur - 1, 1))
            itx = tx if icode == code else 19
            remote_ip = remote or (src.ip if src is not None else "10.244.2.41")
            lines[(upstream.ns, upstream.name)] = access(
                t + timedelta(milliseconds=1), method, path, icode, inbound_flags, inbound_details, "%s:%d" % (upstream.ip, target_port), "inbound|%d||" % target_port,
                "%s:%d" % (upstream.ip, target_port), "%s:%d" % (remote_ip, eph + 7), authority,
                ulocal=("127.0.0.6:%d" % (30000 + rng.randrange(30000)) if inbound_flags in ("-",) else "-"), tfr=inbound_tfr, term=inbound_term,
                rx=0 if method == "GET" else 212, tx=itx, dur=idur, ust=iust, rid=rid,
                sni="outbound_.%d_.%s_.%s.%s.svc.%s" % (port, subset, svc, ns, DOMAIN), route="default", ua=ua)
        for (pns, pname), line in lines.items():
            self.w.log(pns, pname, "istio-proxy", [line])
        return lines

    def traffic(self, start, end, every_ms, fn):
        """Calls fn(t, i) for request times from start to end, jittered."""
        t, i = start, 0
        while t < end:
            fn(t, i)
            i += 1
            t = t + timedelta(milliseconds=every_ms * (0.5 + self.rng.random()))

    # --- syncz and files ------------------------------------------------------

    def nonce(self, at):
        """istiod's nonce: the push version (time/counter) and a UUID."""
        return "%s/%d%s" % (ts(at), 40 + (int(at.timestamp()) // 60) % 30, uid(self.w.name, "nonce", at, self.rng.random()))

    def syncz_entries(self):
        out = []
        for (ns, name), p in sorted(self.w.pods.items()):
            if p.sidecar == "none" or ns == "istio-system":
                continue
            if p.obj["status"]["containerStatuses"] and any(
                    c["name"] == "istio-proxy" and "terminated" in c["state"] for c in p.obj["status"]["containerStatuses"]):
                continue
            at = self.now - timedelta(minutes=3, seconds=self.rng.randrange(50))
            e = {"cluster_id": "Kubernetes", "proxy": p.proxy_id, "proxy_type": "sidecar", "istio_version": ISTIO_VERSION}
            for typ in ("cluster", "listener", "route", "endpoint"):
                n = self.nonce(at)
                e[typ + "_sent"], e[typ + "_acked"] = n, n
            e.update(self.syncz.get(p.proxy_id, {}))
            out.append(e)
        return out

    def write(self, root, header):
        d = os.path.join(root, self.w.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(os.path.join(d, "manifests"))
        with open(os.path.join(d, "scenario.yaml"), "w") as f:
            f.write(yaml.dump(header, sort_keys=False, default_flow_style=False, width=100))
        order = ["namespaces.yaml", "istio-system.yaml"]
        files = sorted(self.w.files, key=lambda n: (order.index(n) if n in order else 9, n))
        for i, fname in enumerate(files):
            with open(os.path.join(d, "manifests", "%02d-%s" % (i, fname)), "w") as f:
                f.write(dump_docs(self.w.files[fname]))
        for pod, sc in self.sidecars:
            pd = os.path.join(d, "envoy", pod.ns, pod.name)
            os.makedirs(pd)
            files = sc.files()
            files["stats_prometheus.txt"] = prometheus(self, pod, sc, self.now - timedelta(seconds=5))
            files["stats_prometheus.2.txt"] = prometheus(self, pod, sc, self.now)
            for fname, text in files.items():
                with open(os.path.join(pd, fname), "w") as f:
                    f.write(text)
        for (ns, pod, container, prev), lines in sorted(self.w.logs.items()):
            pd = os.path.join(d, "logs", ns, pod)
            os.makedirs(pd, exist_ok=True)
            lines = sorted(lines, key=line_time)
            with open(os.path.join(pd, container + (".previous.log" if prev else ".log")), "w") as f:
                f.write("\n".join(lines) + "\n")
        entries = self.syncz_entries()
        if entries:
            os.makedirs(os.path.join(d, "istiod"))
            with open(os.path.join(d, "istiod", "syncz.json"), "w") as f:
                import json
                f.write(json.dumps(entries, indent=2) + "\n")


def line_time(line):
    s = line[1:] if line.startswith("[") else line
    return s[:27].split("]")[0].split("\t")[0].split(" ")[0].rstrip("Z").ljust(26, "0")


def digest_int(*parts):
    return int(digest(*parts, n=8), 16)


def _labels(d):
    return "{" + ",".join('%s="%s"' % (k, v) for k, v in d.items()) + "}"


def prometheus(shop, pod, sidecar, at):
    """The sidecar's /stats/prometheus at time at: istio_requests_total as
    the stats plugin reports it (reporter="source" for the calls pod made),
    plus the Envoy cluster counters the metrics probe reads."""
    series = {}
    hist = shop.history.get(pod.proxy_id, {})
    for (code, flags, svc, ns, up), n in hist.items():
        series[(code, flags, svc, ns, up)] = n
    for src, t, code, flags, svc, ns, up in shop.requests:
        if src is pod and t <= at:
            key = (code, flags, svc, ns, up.app if up is not None else None)
            series[key] = series.get(key, 0) + 1
    out = ["# TYPE envoy_server_live gauge", "envoy_server_live{} 1",
           "# TYPE istio_build gauge", 'istio_build{component="proxy",tag="%s"} 1' % ISTIO_VERSION]
    for key in list(series):
        code, flags, svc, ns, up = key
        if code == 200 and (200, "-", svc, ns, up) not in hist:
            series[key] += 38000 + digest_int(pod.name, svc) % 20000
    out.append("# TYPE istio_requests_total counter")
    for (code, flags, svc, ns, up_app), n in sorted(series.items(), key=lambda kv: (str(kv[0]))):
        known = up_app is not None
        labels = {
            "reporter": "source",
            "source_workload": pod.app, "source_canonical_service": pod.app, "source_canonical_revision": pod.labels.get("version", "latest"),
            "source_workload_namespace": pod.ns, "source_principal": "spiffe://%s/ns/%s/sa/%s" % (DOMAIN, pod.ns, pod.app),
            "source_app": pod.app, "source_version": pod.labels.get("version", "unknown"), "source_cluster": "Kubernetes",
            "destination_workload": up_app if known else "unknown", "destination_workload_namespace": ns if known else "unknown",
            "destination_principal": "spiffe://%s/ns/%s/sa/%s" % (DOMAIN, ns, up_app) if known else "unknown",
            "destination_app": up_app if known else "unknown", "destination_version": "v1" if known else "unknown",
            "destination_service": "%s.%s.svc.%s" % (svc, ns, DOMAIN) if "." not in svc else svc,
            "destination_canonical_service": up_app if known else "unknown", "destination_canonical_revision": "v1" if known else "latest",
            "destination_service_name": svc, "destination_service_namespace": ns if "." not in svc else "unknown", "destination_cluster": "Kubernetes" if known else "unknown",
            "request_protocol": "http" if code else "tcp", "response_code": str(code), "grpc_response_status": "", "response_flags": flags,
            "connection_security_policy": "unknown",
        }
        out.append("istio_requests_total%s %d" % (_labels(labels), n))
    out.append("# TYPE envoy_cluster_upstream_cx_connect_fail counter")
    for c in sidecar.clusters:
        if c.name.startswith("outbound|") and c.kind == "EDS":
            total = c.stats.get("cx_connect_fail", sum(h.cx_connect_fail for h in c.hosts))
            out.append('envoy_cluster_upstream_cx_connect_fail{cluster_name="%s"} %d' % (c.name, total))
    out.append("# TYPE envoy_cluster_upstream_rq_pending_overflow counter")
    for c in sidecar.clusters:
        if c.name.startswith("outbound|") and c.kind == "EDS":
            out.append('envoy_cluster_upstream_rq_pending_overflow{cluster_name="%s"} %d' % (c.name, c.stats.get("rq_pending_overflow", 0)))
    return "\n".join(out) + "\n"
