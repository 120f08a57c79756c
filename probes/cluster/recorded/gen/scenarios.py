#!/usr/bin/env python3
"""Writes assets/scenarios/*: one recorded incident per function below.

Each function tells its story in objects, Envoy state and log lines, and
states the cause IDs the unattended check must find (architecture.md's
catalogue). Run from the repository root:

    python3 probes/scenario/gen/scenarios.py

then `go test ./probes/scenario/` (which loads and diagnoses every one).
"""

import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envoy as E  # noqa: E402
from common import SVC_IPS, Ghost, Shop, mesh  # noqa: E402
from world import DOMAIN, Str, access, digest, ms, parse, ts, uid, us  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "assets", "scenarios")
SCENARIOS = []

# One line each, for `meshtriage demo`'s list: the story as the on-call
# would tell it in the incident channel.
SUMMARIES = {
    "healthy": "web -> orders with native sidecars, STRICT mTLS, all SYNCED: nothing for the check to find",
    "mtls-plaintext-to-strict": "a cron job without sidecar calls orders after shop went STRICT: connection reset",
    "mtls-to-pod-without-sidecar": "DR says ISTIO_MUTUAL, orders redeployed with inject false: 503 UF WRONG_VERSION_NUMBER",
    "startup-race": "orders-api dials postgres before Envoy is up: connection refused, one restart per pod",
    "rollout-shutdown-503": "503 UC/UF bursts while orders rolls out: the sidecar exits before the app drains",
    "port-mismatch": "orders 3.0 listens on 8000, the Service still targets 8080: 503 UF connection refused",
    "no-ready-endpoints": "orders pods Running but never Ready (migration stuck): 503 UH no_healthy_upstream",
    "subset-no-pods": "VirtualService keeps 10% on subset v2 after the canary was scaled to zero: 503 UH",
    "vs-undefined-subset": "VirtualService routes 20% to subset canary, the DestinationRule lost it: 503 NC",
    "outlier-all-ejected": "consecutive5xxErrors 1 + maxEjectionPercent 100: one DB blip ejected every host",
    "circuit-breaker-overflow": "maxConnections 1 / http1MaxPendingRequests 1 from a tutorial: 503 UO at peak",
    "missing-serviceentry": "REGISTRY_ONLY, checkout calls api.payments.example.com, no ServiceEntry: BlackHoleCluster",
    "stale-xds": "web's throttled sidecar has not ACKed CDS/EDS for 20 min: routes to pods that are gone",
    "idle-timeout-uc": "Node.js keepAliveTimeout 5 s vs Envoy's 1 h idle timeout: sporadic 503 UC, no rollout",
}


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


def istio_obj(s, api, kind, ns, name, created, spec, labels=None, file=None):
    m = s.w.meta(kind, ns, name, created, labels=labels, extra={"generation": 1})
    return s.w.add(file or "%s-istio.yaml" % ns, {"apiVersion": api, "kind": kind, "metadata": m, "spec": spec})


def dr(s, name, spec, created, ns="shop"):
    return istio_obj(s, "networking.istio.io/v1", "DestinationRule", ns, name, created, spec)


def vs(s, name, spec, created, ns="shop"):
    return istio_obj(s, "networking.istio.io/v1", "VirtualService", ns, name, created, spec)


def pa(s, name, spec, created, ns="shop"):
    return istio_obj(s, "security.istio.io/v1", "PeerAuthentication", ns, name, created, spec)


def header(s, title, description, target, expect, source=None, port=8080, ns="shop", summary=""):
    t = {"namespace": ns, "service": target, "port": port}
    if source is not None:
        t["source"] = {"namespace": source.ns, "name": source.name}
    return {
        "name": s.w.name,
        "title": title,
        "summary": SUMMARIES[s.w.name],
        "description": Str(description.strip() + "\n"),
        "context": "prod-eu-west-1",
        "serverVersion": s.server_version,
        "target": t,
        "expect": expect,
    }


def app_lines(t, lines):
    """App log lines "TIME LEVEL message" at offsets (seconds) from t."""
    out = []
    for off, level, msg in lines:
        at = t + timedelta(seconds=off)
        out.append("%s %-5s %s" % (at.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (at.microsecond // 1000), level, msg))
    return out


def orders_app_start(t, port=8080, extra=()):
    return app_lines(t, [
        (0.21, "INFO", "orders starting version=2.14.0 commit=9f3c2e1"),
        (0.30, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"),
        (0.36, "INFO", "database connected pool=10"),
        (0.41, "INFO", "listening on :%d" % port),
    ] + list(extra))


def web_pod(s, created, **kw):
    kw.setdefault("readiness", ("/healthz", 8080))
    return s.pod("shop", "web-5b7d9c6f4-q8w2e", "web", "worker-a", 9, created, rs="web-5b7d9c6f4", **kw)


def orders_pods(s, created, names=("orders-6d8f7c9b5-2kq8v", "orders-6d8f7c9b5-7xw4n", "orders-6d8f7c9b5-m9p2d"), **kw):
    nodes = [("worker-b", 17), ("worker-c", 18), ("worker-a", 21)]
    out = []
    for i, n in enumerate(names):
        node, host = nodes[i % 3]
        out.append(s.pod("shop", n, "orders", node, host + 10 * (i // 3), created + timedelta(seconds=i * 14), rs=n.rsplit("-", 1)[0], **kw))
    return out


def standard_logs(s, src, upstreams, since, until, every_ms=5000, fn=None):
    """Startup lines for every sidecar and the app, then src calling the
    upstream service; fn(t, i) may replace a call."""
    for p in [src] + list(upstreams):
        if p.sidecar != "none":
            s.proxy_log(p)
    s.app_log(src, app_lines(src.app_started, [(0.2, "INFO", "web starting version=1.8.3"), (0.3, "INFO", "listening on :8080")]))
    for p in upstreams:
        s.app_log(p, orders_app_start(p.app_started))

    def default(t, i):
        s.call(src, "orders", t, upstreams[i % len(upstreams)])

    s.traffic(since, until, every_ms, fn or default)


# ---------------------------------------------------------------------------


@scenario
def healthy():
    now = parse("2026-12-02T09:42:10")
    s = Shop("healthy", now, mesh(), native=True)
    s.namespace()
    pa(s, "default", {"mtls": {"mode": "STRICT"}}, now - timedelta(days=9), ns="istio-system")
    s.service("web")
    s.service("orders")
    created = now - timedelta(days=3, hours=5, minutes=12)
    web = web_pod(s, created - timedelta(hours=2), proxy_started=None)
    orders = orders_pods(s, created)
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "trafficPolicy": {
        "outlierDetection": {"consecutive5xxErrors": 5, "interval": "30s", "baseEjectionTime": "30s", "maxEjectionPercent": 50}}},
        now - timedelta(days=40))
    out = {"consecutive_5xx": 5, "interval": "30s", "base_ejection_time": "30s", "max_ejection_percent": 50}
    s.record_sidecar(web, [
        s.outbound("orders", orders, outlier=out, stats={"outlier": {}}),
        s.outbound("web", [web]),
    ])
    standard_logs(s, web, orders, now - timedelta(minutes=12), now - timedelta(seconds=4))
    s.write(ROOT, header(s, "Healthy: orders answers 200s",
                         """
web calls orders in namespace shop. Both run Istio 1.24 native sidecars (ENABLE_NATIVE_SIDECARS on
Kubernetes 1.30), mesh-wide mTLS is STRICT and every proxy is SYNCED. All three orders endpoints are
ready and healthy in web's Envoy, the DestinationRule's outlier detection is moderate
(consecutive5xxErrors 5, maxEjectionPercent 50) and the access logs show only 200s. The check must
find nothing: this is what a service looks like when the mesh is not the problem.
""", "orders", [], source=web))



def web_upstream_logs(s, web, pods, app_start=orders_app_start):
    for p in [web] + list(pods):
        if p.sidecar != "none":
            s.proxy_log(p)
    s.app_log(web, app_lines(web.app_started, [(0.2, "INFO", "web starting version=1.8.3"), (0.3, "INFO", "listening on :8080")]))
    for p in pods:
        s.app_log(p, app_start(p.app_started))


def ok(s, web, pods, start, end, every_ms=5000, svc="orders"):
    s.traffic(start, end, every_ms, lambda t, i: s.call(web, svc, t, pods[i % len(pods)]))


@scenario
def mtls_plaintext_to_strict():
    now = parse("2026-12-02T03:24:40")
    s = Shop("mtls-plaintext-to-strict", now, mesh(hold=True))
    s.namespace()
    s.namespace("batch", injection="disabled", created=s.shop_created + timedelta(days=2))
    s.service("web")
    s.service("orders")
    created = now - timedelta(days=2, hours=7)
    web = web_pod(s, created - timedelta(hours=3), hold=True)
    orders = orders_pods(s, created, hold=True)
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    pa(s, "default", {"mtls": {"mode": "STRICT"}}, now - timedelta(minutes=21, seconds=12))
    job = "report-cron-29459000"
    cron = s.pod("batch", job + "-7kq2x", "report-cron", "worker-c", 41, now - timedelta(minutes=4, seconds=40), sidecar="none",
                 image="registry.shop.example.com/report-cron:0.9.2", ports=[], readiness=None, restart_policy="OnFailure",
                 version=None, rs=job,
                 owner={"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True, "kind": "Job", "name": job, "uid": uid(s.w.name, "Job", "batch", job)},
                 extra_labels={"batch.kubernetes.io/controller-uid": uid(s.w.name, "Job", "batch", job), "batch.kubernetes.io/job-name": job,
                               "controller-uid": uid(s.w.name, "Job", "batch", job), "job-name": job})
    del cron.obj["metadata"]["labels"]["pod-template-hash"]
    web_upstream_logs(s, web, orders)
    ok(s, web, orders, now - timedelta(minutes=14), now - timedelta(seconds=2), every_ms=4000)
    # The job's app speaks plaintext HTTP; the orders sidecars now accept only
    # mTLS, find no filter chain for it and close the connection.
    lines = [(0.8, "INFO", "report-cron 0.9.2: exporting orders since 2026-12-02T03:15:00Z to s3://shop-reports/daily/")]
    t = 1.1
    for attempt in range(1, 6):
        up = orders[attempt % 3]
        eph = 38712 + attempt * 17
        jitter = s.rng.randrange(900) / 1000
        at = cron.app_started + timedelta(seconds=t + jitter)
        s.w.log("shop", up.name, "istio-proxy", [E_access_tcp_nr(at, up.ip, cron.ip, eph)])
        lines.append((t + jitter + 0.002, "WARN", 'GET http://orders.shop:8080/api/orders?since=2026-12-02T03:15:00Z failed: read tcp %s:%d->%s:8080: read: connection reset by peer (attempt %d/5)'
                      % (cron.ip, eph, SVC_IPS["orders"], attempt)))
        t += 2 ** attempt
    lines.append((t, "ERROR", "export failed after 5 attempts: orders API unreachable; exiting 1"))
    lines.append((t + 0.01, "INFO", "restarting in-process loop (restartPolicy OnFailure keeps this pod); next attempt in 30s"))
    for k in range(4):
        jitter = s.rng.randrange(900) / 1000
        at = cron.app_started + timedelta(seconds=t + 30 + k * 40 + jitter)
        up = orders[k % 3]
        s.w.log("shop", up.name, "istio-proxy", [E_access_tcp_nr(at, up.ip, cron.ip, 40100 + k)])
        lines.append((t + 30 + k * 40 + jitter + 0.002, "WARN", "GET http://orders.shop:8080/api/orders?since=2026-12-02T03:15:00Z failed: read tcp %s:%d->%s:8080: read: connection reset by peer"
                      % (cron.ip, 40100 + k, SVC_IPS["orders"])))
    s.app_log(cron, app_lines(cron.app_started, lines))
    s.write(ROOT, header(s, "Plaintext client after a namespace went STRICT",
                         """
Twenty minutes ago someone applied a namespace-wide PeerAuthentication STRICT in shop. The nightly
report-cron job runs in namespace batch, which has injection disabled: it has no sidecar and calls
orders in plaintext. The orders sidecars now accept only mTLS; each plaintext connection matches no
filter chain (NR filter_chain_not_found in their inbound log) and is closed, so the job sees
"connection reset by peer". Meshed callers such as web are unaffected: their 200s are in the same
logs. Triage from the job's pod (it has no Envoy to read, which is itself the clue).
""", "orders", ["mtls.plaintext-to-strict"], source=cron))


def E_access_tcp_nr(at, ip, remote, eph):
    """The inbound listener's line for a connection no filter chain takes."""
    from world import access as acc
    return acc(at, "-", "-", 0, "NR", "filter_chain_not_found", "-", "-", "%s:8080" % ip, "%s:%d" % (remote, eph), "-", dur=0, ust="-", route="-")


@scenario
def mtls_to_pod_without_sidecar():
    now = parse("2026-12-02T11:05:30")
    s = Shop("mtls-to-pod-without-sidecar", now, mesh())
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=1, hours=4))
    created = now - timedelta(minutes=24, seconds=7)
    orders = orders_pods(s, created, names=("orders-5f7b8c9d6-hq2zx", "orders-5f7b8c9d6-vb7kp"), sidecar="none", inject_label="false",
                         extra_annotations={"sidecar.istio.io/inject": "false"})
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL"}}}, now - timedelta(days=120))
    fails = {}

    def call(t, i):
        up = orders[i % 2]
        fails[up.ip] = fails.get(up.ip, 0) + 3
        s.call(web, "orders", t, up, code=503, flags="UF,URX",
               details="upstream_reset_before_response_started{connection_failure,TLS_error:|268435703:SSL_routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end}",
               tfr="TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end", dur=3)

    web_upstream_logs(s, web, orders)
    ok(s, web, orders, now - timedelta(minutes=29), created + timedelta(seconds=5), every_ms=5000)
    s.traffic(created + timedelta(seconds=30), now - timedelta(seconds=1), 4000, call)
    hosts = [E.Host(p.ip, 8080, node=p.node, cx_total=fails[p.ip], cx_connect_fail=fails[p.ip], rq_error=fails[p.ip] // 3, tls_istio=False) for p in orders]
    n = sum(fails.values())
    s.record_sidecar(web, [
        s.outbound("orders", hosts, tls="istio", stats={"cx_connect_fail": n, "ssl_connection_error": n, "ssl_handshake": 0, "rq_retry": n * 2 // 3,
                                                     "rq_retry_limit_exceeded": n // 3, "cx_total": n, "cx_destroy": n, "cx_destroy_remote": 0, "cx_destroy_local": n}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "mTLS sent to pods that have no sidecar",
                         """
A DestinationRule for orders, copied from a "secure defaults" template months ago, sets tls mode
ISTIO_MUTUAL. This morning the orders team redeployed with sidecar.istio.io/inject: "false" to rule
the proxy out of a latency investigation. web's sidecar still originates Istio mTLS to the new pods,
whose app answers the TLS ClientHello with plain HTTP: every call is 503 UF,URX with transport failure
WRONG_VERSION_NUMBER, although Kubernetes shows both endpoints ready and Envoy's EDS calls them
HEALTHY.
""", "orders", ["sidecar.missing-upstream"], source=web))


@scenario
def startup_race():
    now = parse("2026-12-02T03:14:20")
    s = Shop("startup-race", now, mesh())
    s.namespace()
    s.service("web")
    s.service("orders-api")
    s.service("postgres", port=5432, target=5432, port_name="tcp-postgres")
    web = web_pod(s, now - timedelta(days=4, hours=2))
    pg = s.pod("shop", "postgres-0", "postgres", "worker-c", 30, now - timedelta(days=12), rs="postgres", image="docker.io/library/postgres:16.4",
               ports=[("tcp-postgres", 5432)], readiness=None, version=None,
               probe={"exec": {"command": ["pg_isready", "-U", "orders"]}, "failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
               owner={"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "StatefulSet", "name": "postgres", "uid": uid(s.w.name, "StatefulSet", "shop", "postgres")},
               extra_labels={"apps.kubernetes.io/pod-index": "0", "controller-revision-hash": "postgres-6b8d9f7c5", "statefulset.kubernetes.io/pod-name": "postgres-0"})
    del pg.obj["metadata"]["labels"]["pod-template-hash"]
    rs = "orders-api-7f9c8d6b5"
    pods = []
    plan = [("x7k2p", "worker-b", 23, 0, True), ("q4w9m", "worker-c", 24, 19, True), ("t8n3v", "worker-a", 25, 37, False)]
    for suffix, node, host, offset, crashed in plan:
        created = parse("2026-12-02T03:00:00") + timedelta(seconds=offset)
        first = created + timedelta(seconds=2)
        # The third pod's image pull took 2 s longer: its app started after
        # Envoy was ready and connected at once.
        kw = {"app_started": first + timedelta(seconds=2)}
        if crashed:
            kw = dict(restarts=1, app_started=created + timedelta(seconds=14),
                      last_terminated={"containerID": "containerd://" + digest(s.w.name, suffix, "crash"), "exitCode": 1, "finishedAt": ts(first + timedelta(seconds=1)),
                                       "reason": "Error", "startedAt": ts(first)})
        p = s.pod("shop", "%s-%s" % (rs, suffix), "orders-api", node, host, created, rs=rs, proxy_started=first,
                  readiness=("/readyz", 8080), app_env=[{"name": "DATABASE_URL", "value": "postgres://orders@postgres.shop.svc.cluster.local:5432/orders?sslmode=disable"}], **kw)
        pods.append((p, crashed, first))
    s.slice("web", [web.name])
    s.slice("orders-api", [p.name for p, _, _ in pods])
    s.slice("postgres", [pg.name], port=5432, port_name="tcp-postgres")
    s.proxy_log(web)
    s.proxy_log(pg)
    s.app_log(web, app_lines(web.app_started, [(0.2, "INFO", "web starting version=1.8.3"), (0.3, "INFO", "listening on :8080")]))
    s.app_log(pg, app_lines(pg.app_started, [(1.2, "LOG", "database system is ready to accept connections")]))
    for p, crashed, first in pods:
        # Envoy takes about 1.4 s to get its first config from istiod; the
        # app, started in the same second, dials postgres after 0.3 s.
        s.proxy_log(p, ready_after=1.4)
        if crashed:
            s.app_log(p, app_lines(first, [
                (0.215, "INFO", "orders-api starting version=3.2.1"),
                (0.301, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"),
                (0.304, "ERROR", "failed to connect to database: dial tcp 10.96.0.20:5432: connect: connection refused"),
                (0.305, "FATAL", "orders-api exiting: database unavailable at startup"),
            ]), previous=True)
        start = p.app_started
        s.app_log(p, app_lines(start, [
            (0.212, "INFO", "orders-api starting version=3.2.1"),
            (0.298, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"),
            (0.341, "INFO", "database connected pool=10"),
            (0.352, "INFO", "listening on :8080"),
        ]))
    ups = [p for p, _, _ in pods]
    ok(s, web, ups, parse("2026-12-02T03:01:05"), now - timedelta(seconds=2), every_ms=5000, svc="orders-api")
    s.record_sidecar(web, [
        s.outbound("orders-api", ups),
        s.outbound("postgres", [pg], port=5432),
        s.outbound("web", [web]),
    ], listeners=s.listeners(extra=[E.Listener("10.96.0.20_5432", "10.96.0.20", 5432)]))
    s.write(ROOT, header(s, "orders-api restarts at startup: app before Envoy",
                         """
The orders-api rollout at 03:00 left two of its three new pods with one restart each. orders-api
connects to postgres in its first 300 ms; with a classic sidecar and no holdApplicationUntilProxyStarts
the app container starts in the same second as istio-proxy, iptables already redirects its outbound
traffic to port 15001, and Envoy is not listening yet: "dial tcp 10.96.0.20:5432: connect: connection
refused", exit 1, restart 10 s later, fine since. The third pod won the race. Requests from web are
200s now; the cause is in the pods' start order, not in the traffic.
""", "orders-api", ["startup.app-before-proxy"], source=web))


@scenario
def rollout_shutdown_503():
    now = parse("2026-12-02T03:20:30")
    s = Shop("rollout-shutdown-503", now, mesh())
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=2, hours=1))
    old_rs, new_rs = "orders-6d8f7c9b5", "orders-85b9f6d7c"
    old_created = now - timedelta(days=6, hours=3)
    # 2kq8v: deleted 03:20:05; its sidecar drained 5 s and exited while the
    # app still finishes requests. 7xw4n: deleted 03:20:27, draining now.
    d1, d2 = parse("2026-12-02T03:20:05"), parse("2026-12-02T03:20:27")
    old1 = s.pod("shop", old_rs + "-2kq8v", "orders", "worker-b", 17, old_created, rs=old_rs, deletion=d1 + timedelta(seconds=30),
                 proxy_ready=False, ready=False, ready_at=d1 + timedelta(seconds=6), ready_message="containers with unready status: [istio-proxy]",
                 proxy_state={"terminated": {"containerID": "containerd://" + digest(s.w.name, "2kq8v", "proxy"), "exitCode": 0, "finishedAt": ts(d1 + timedelta(seconds=5)),
                                             "reason": "Completed", "startedAt": ts(old_created + timedelta(seconds=3))}})
    old2 = s.pod("shop", old_rs + "-7xw4n", "orders", "worker-c", 18, old_created + timedelta(seconds=14), rs=old_rs, deletion=d2 + timedelta(seconds=30))
    news = []
    for suffix, node, host, created in [("h4k2m", "worker-a", 34, "03:19:40"), ("p7r9t", "worker-b", 35, "03:19:52"), ("x2v8c", "worker-c", 36, "03:20:14")]:
        c = parse("2026-12-02T" + created)
        news.append(s.pod("shop", "%s-%s" % (new_rs, suffix), "orders", node, host, c, rs=new_rs,
                          image="registry.shop.example.com/orders:2.15.0", ready_at=c + timedelta(seconds=12)))
    s.slice("web", [web.name])
    s.slice("orders", [(old1.name, False, False, True), (old2.name, False, True, True)] + [n.name for n in news], created=d2)
    web_upstream_logs(s, web, [old1, old2] + news)
    Gone = Ghost("10.244.0.21", "orders-6d8f7c9b5-m9p2d")  # deleted at 03:19:52, already gone
    # Before the rollout: 200s from the three old pods.
    olds = [old1, old2, Gone]
    s.traffic(now - timedelta(minutes=11), parse("2026-12-02T03:19:52"), 3000, lambda t, i: s.call(web, "orders", t, olds[i % 3]))

    def burst(pod, exit_at):
        # In-flight requests reset when Envoy is killed (UC, not retried),
        # then connects refused until web's EDS drops the address (UF,URX).
        for k in range(3):
            s.call(web, "orders", exit_at + timedelta(milliseconds=40 + 90 * k), pod, code=503, flags="UC",
                   details="upstream_reset_before_response_started{connection_termination}", dur=1200 + 300 * k, inbound=False, method="POST", path="/api/orders")
        for k in range(4):
            s.call(web, "orders", exit_at + timedelta(milliseconds=400 + 350 * k), pod, code=503, flags="UF,URX",
                   details="upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}", tfr="delayed_connect_error:_111",
                   dur=2, inbound=False)

    burst(Gone, parse("2026-12-02T03:19:57"))
    burst(old1, d1 + timedelta(seconds=5))
    live = [old2] + news[:2]
    s.traffic(parse("2026-12-02T03:19:53"), d2, 1500, lambda t, i: s.call(web, "orders", t, live[i % 3]))
    s.traffic(d2 + timedelta(milliseconds=500), now - timedelta(seconds=1), 1500, lambda t, i: s.call(web, "orders", t, news[i % 3]))
    # Old pods' sidecars: pilot-agent drains for the default 5 s, then
    # kills Envoy; the app has a 30 s grace period and no preStop.
    from world import agent_drain
    s.w.log("shop", old1.name, "istio-proxy", agent_drain(d1 + timedelta(milliseconds=3)))
    s.w.log("shop", old2.name, "istio-proxy", agent_drain(d2 + timedelta(milliseconds=3))[:3])
    s.app_log(old1, app_lines(d1, [(0.004, "INFO", "SIGTERM received: finishing in-flight requests (grace 25s)"),
                                   (5.62, "ERROR", "publish order-shipped event failed: dial tcp 10.96.0.20:5432: connect: connection refused"),
                                   (7.1, "ERROR", "publish order-shipped event failed: dial tcp 10.96.0.20:5432: connect: connection refused")]))
    s.app_log(old2, app_lines(d2, [(0.004, "INFO", "SIGTERM received: finishing in-flight requests (grace 25s)")]))
    n_uc, n_uf = 6, 8
    s.record_sidecar(web, [
        s.outbound("orders", news, stats={"cx_destroy_remote_with_active_rq": n_uc, "cx_connect_fail": n_uf * 3, "rq_503": 0,
                                          "rq_retry": n_uf * 2, "rq_retry_limit_exceeded": n_uf, "membership_change": 9}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "503s during a rollout: the sidecar exits before the app",
                         """
orders is mid-rollout (2.14.0 -> 2.15.0). Its pods run classic sidecars with the mesh defaults: no
terminationDrainDuration beyond 5 s, no EXIT_ON_ZERO_ACTIVE_CONNECTIONS, and the app has no preStop
hook. On SIGTERM pilot-agent drains for 5 s and kills Envoy while the app keeps serving for its 30 s
grace period: requests in flight are reset (503 UC) and new ones are refused until web's EDS drops the
address (503 UF,URX, connection refused). The old pod's own outbound calls fail too. Two old pods are
terminating right now, one with its istio-proxy already exited.
""", "orders", ["shutdown.proxy-exits-first"], source=web))


@scenario
def port_mismatch():
    now = parse("2026-12-02T14:12:05")
    s = Shop("port-mismatch", now, mesh(hold=True))
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=3), hold=True)
    created = parse("2026-12-02T13:58:20")
    orders = orders_pods(s, created, names=("orders-7c6d5b8f9-4nq8s", "orders-7c6d5b8f9-kw2ld", "orders-7c6d5b8f9-zt6hp"), hold=True,
                         image="registry.shop.example.com/orders:3.0.0", ports=[("http", 8000)], readiness=("/healthz/ready", 8000))
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    web_upstream_logs(s, web, orders, app_start=lambda t: app_lines(t, [
        (0.2, "INFO", "orders starting version=3.0.0 commit=1be04c7"),
        (0.31, "INFO", "config: PORT not set, using default :8000 (was :8080 before 3.0)"),
        (0.36, "INFO", "database connected pool=10"),
        (0.4, "INFO", "listening on :8000"),
    ]))

    def call(t, i):
        # Each attempt reaches an orders sidecar, whose inbound cluster dials
        # the pod on the Service's targetPort 8080, where nothing listens.
        for k in range(3):
            s.call(None, "orders", t + timedelta(milliseconds=2 * k), orders[(i + k) % 3], code=503, remote=web.ip,
                   inbound_flags="UF", inbound_details="upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}",
                   inbound_tfr="delayed_connect_error:_111")
        s.call(web, "orders", t, orders[(i + 2) % 3], code=503, flags="URX", details="via_upstream", dur=7, inbound=False, tx=145)

    old = [Ghost("10.244.1.27", "orders-5d9c7b6f8-r4c7m"), Ghost("10.244.2.28", "orders-5d9c7b6f8-wq9zd"), Ghost("10.244.0.29", "orders-5d9c7b6f8-b8m3x")]
    ok(s, web, old, now - timedelta(minutes=20), created + timedelta(seconds=2), every_ms=4000)
    s.traffic(created + timedelta(seconds=30), now - timedelta(seconds=1), 2500, call)
    n = len([r for r in s.requests if r[2] == 503])
    s.record_sidecar(web, [
        s.outbound("orders", orders, stats={"rq_503": n * 3, "rq_retry": n * 2, "rq_retry_limit_exceeded": n, "retry_503": n * 2}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "Service targetPort 8080, container listens on 8000",
                         """
orders 3.0.0 changed its default listen port from 8080 to 8000 and the Deployment declares
containerPort 8000, but the Service still says targetPort 8080. The readiness probe checks 8000, so
all three endpoints are ready and web's Envoy calls them healthy, yet every request dies at the
orders sidecar, which forwards to the pod on 8080: 503 UF with delayed_connect_error:_111 (connection
refused) in the orders sidecars' inbound log, and 503 URX via_upstream at web after two retries. It
looks like an mTLS or mesh problem; it is a Service port.
""", "orders", ["service.port-mismatch"], source=web))


UH = dict(code=503, flags="UH", details="no_healthy_upstream", inbound=False, tx=19)


@scenario
def no_ready_endpoints():
    now = parse("2026-12-02T07:31:50")
    s = Shop("no-ready-endpoints", now, mesh(hold=True))
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=2, hours=6), hold=True)
    created = parse("2026-12-02T07:18:04")
    msg = "containers with unready status: [orders]"
    orders = orders_pods(s, created, names=("orders-69f4d7c8b-fx2mw", "orders-69f4d7c8b-s9hkt"), hold=True,
                         image="registry.shop.example.com/orders:2.15.0", app_ready=False, ready=False, ready_message=msg)
    s.slice("web", [web.name])
    s.slice("orders", [(p.name, False, False, False) for p in orders])
    web_upstream_logs(s, web, orders, app_start=lambda t: app_lines(t, [
        (0.21, "INFO", "orders starting version=2.15.0 commit=77ad0e2"),
        (0.36, "INFO", "database connected pool=10"),
        (0.41, "INFO", "listening on :8080"),
        (0.44, "WARN", "schema version 41, this build needs 42: readiness stays false until migration job orders-migrate-29459018 completes"),
    ] + [(60.0 * k + 2.0, "WARN", "readiness check failed: schema version 41 < 42 (migration pending)") for k in range(1, 14)]))
    ok(s, web, [Ghost("10.244.1.12", "orders-5b8c7d9f4-kx8pq"), Ghost("10.244.2.14", "orders-5b8c7d9f4-w7tbn")],
       now - timedelta(minutes=22), created - timedelta(seconds=3), every_ms=4000)
    s.traffic(created + timedelta(seconds=1), now - timedelta(seconds=1), 3500, lambda t, i: s.call(web, "orders", t, None, **UH))
    n = len([r for r in s.requests if r[2] == 503])
    s.record_sidecar(web, [
        s.outbound("orders", [], stats={"cx_none_healthy": n, "cx_total": 41, "membership_change": 6, "update_empty": 2}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "No ready endpoints: readiness failing after a deploy",
                         """
orders 2.15.0 was deployed with strategy Recreate at 07:18. The new build refuses readiness until a
schema migration has run, and the migration Job is stuck, so both pods are Running but not Ready: the
EndpointSlice lists them with ready false, istiod sends web's Envoy an empty endpoint set and every
call is 503 UH no_healthy_upstream. Nothing is wrong with the mesh; the fix is in the rollout.
""", "orders", ["endpoints.none-ready"], source=web))


def subset_world(s, now, names, versions):
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=5))
    pods = []
    created = now - timedelta(days=3, hours=2)
    for i, (name, version) in enumerate(zip(names, versions)):
        node, host = [("worker-b", 17), ("worker-c", 18), ("worker-a", 21), ("worker-b", 42)][i]
        image = "registry.shop.example.com/orders:2.14.0" if version == "v1" else "registry.shop.example.com/orders:2.16.0-rc.2"
        pods.append(s.pod("shop", name, "orders", node, host, created + timedelta(seconds=9 * i), version=version, rs=name.rsplit("-", 1)[0], image=image))
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in pods])
    return web, pods


def weighted_route(s, clusters, route_name):
    return E.route_config("8080", [
        E.vhost("shop", "orders", SVC_IPS["orders"], 8080, {
            "match": {"prefix": "/"},
            "route": {"weighted_clusters": {"clusters": [{"name": c, "weight": w} for c, w in clusters]}, "timeout": "0s",
                      "retry_policy": E.DEFAULT_RETRY, "max_grpc_timeout": "0s"},
            "metadata": {"filter_metadata": {"istio": {"config": "/apis/networking.istio.io/v1/namespaces/shop/virtual-service/orders"}}},
            "decorator": {"operation": "orders:8080/*"}, "name": route_name}),
        E.vhost("shop", "web", SVC_IPS["web"], 8080, {
            "match": {"prefix": "/"}, "route": {"cluster": "outbound|8080||web.shop.svc.cluster.local", "timeout": "0s", "retry_policy": E.DEFAULT_RETRY,
                                                "max_grpc_timeout": "0s"},
            "decorator": {"operation": "web.shop.svc.cluster.local:8080/*"}, "name": "default"}),
        {"name": "allow_any", "domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "PassthroughCluster", "timeout": "0s", "max_grpc_timeout": "0s"}, "name": "allow_any"}],
         "include_request_attempt_count": True},
    ])


@scenario
def subset_no_pods():
    now = parse("2026-12-02T16:45:12")
    s = Shop("subset-no-pods", now, mesh())
    names = ("orders-6d8f7c9b5-2kq8v", "orders-6d8f7c9b5-7xw4n", "orders-6d8f7c9b5-m9p2d")
    web, pods = subset_world(s, now, names, ["v1", "v1", "v1"])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "subsets": [{"name": "v1", "labels": {"version": "v1"}}, {"name": "v2", "labels": {"version": "v2"}}]},
       now - timedelta(days=6))
    vs(s, "orders", {"hosts": ["orders.shop.svc.cluster.local"], "http": [{"name": "orders-canary", "route": [
        {"destination": {"host": "orders.shop.svc.cluster.local", "subset": "v1"}, "weight": 90},
        {"destination": {"host": "orders.shop.svc.cluster.local", "subset": "v2"}, "weight": 10}]}]},
       now - timedelta(hours=2, minutes=38))
    web_upstream_logs(s, web, pods)
    v2 = "outbound|8080|v2|orders.shop.svc.cluster.local"

    def call(t, i):
        if s.rng.random() < 0.1:
            s.call(web, "orders", t, None, subset="v2", route="orders-canary", **UH)
        else:
            s.call(web, "orders", t, pods[i % 3], subset="v1", route="orders-canary")

    s.traffic(now - timedelta(minutes=15), now - timedelta(seconds=1), 1800, call)
    n = len([r for r in s.requests if r[2] == 503])
    s.record_sidecar(web, [
        s.outbound("orders", pods),
        s.outbound("orders", pods, subset="v1"),
        s.outbound("orders", [], subset="v2", stats={"cx_none_healthy": n, "cx_total": 0, "update_empty": 1}),
        s.outbound("web", [web]),
    ], routes=[weighted_route(s, [("outbound|8080|v1|orders.shop.svc.cluster.local", 90), (v2, 10)], "orders-canary")])
    s.write(ROOT, header(s, "DestinationRule subset v2 selects no pods",
                         """
The orders canary was rolled back two hours ago: the v2 Deployment is scaled to zero. The
VirtualService still sends 10% of traffic to subset v2, whose labels (version: v2) now match no pod.
web's Envoy has the cluster outbound|8080|v2|orders.shop.svc.cluster.local with no hosts, so one call
in ten is 503 UH no_healthy_upstream while the Service's endpoints and the v1 subset are healthy.
""", "orders", ["dr.subset-no-pods"], source=web))


@scenario
def vs_undefined_subset():
    now = parse("2026-12-02T10:20:44")
    s = Shop("vs-undefined-subset", now, mesh(hold=True))
    names = ("orders-6d8f7c9b5-2kq8v", "orders-6d8f7c9b5-7xw4n", "orders-6d8f7c9b5-m9p2d", "orders-canary-5c9d8f7b6-r2d4k")
    web, pods = subset_world(s, now, names, ["v1", "v1", "v1", "canary"])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "subsets": [{"name": "stable", "labels": {"version": "v1"}}]}, now - timedelta(minutes=47))
    vs(s, "orders", {"hosts": ["orders.shop.svc.cluster.local"], "http": [{"name": "orders-split", "route": [
        {"destination": {"host": "orders.shop.svc.cluster.local", "subset": "stable"}, "weight": 80},
        {"destination": {"host": "orders.shop.svc.cluster.local", "subset": "canary"}, "weight": 20}]}]},
       now - timedelta(days=1, hours=3))
    web_upstream_logs(s, web, pods)

    def call(t, i):
        if s.rng.random() < 0.2:
            s.call(web, "orders", t, None, code=503, flags="NC", details="cluster_not_found", inbound=False, tx=0, cluster="-", route="orders-split")
        else:
            s.call(web, "orders", t, pods[i % 3], subset="stable", route="orders-split")

    s.traffic(now - timedelta(minutes=14), now - timedelta(seconds=1), 1800, call)
    s.record_sidecar(web, [
        s.outbound("orders", pods),
        s.outbound("orders", pods[:3], subset="stable"),
        s.outbound("web", [web]),
    ], routes=[weighted_route(s, [("outbound|8080|stable|orders.shop.svc.cluster.local", 80), ("outbound|8080|canary|orders.shop.svc.cluster.local", 20)], "orders-split")])
    s.write(ROOT, header(s, "VirtualService routes to a subset no DestinationRule defines",
                         """
Since yesterday the orders VirtualService splits 80/20 between subsets stable and canary. 47 minutes
ago a GitOps sync replaced the DestinationRule with an older revision that defines only stable. The
canary pod is running and ready, but no subset names it: istiod builds no cluster
outbound|8080|canary|..., web's route still points 20% of calls at it, and Envoy answers 503 NC
cluster_not_found without ever leaving the pod.
""", "orders", ["vs.subset-undefined"], source=web))


@scenario
def outlier_all_ejected():
    now = parse("2026-12-02T05:12:33")
    s = Shop("outlier-all-ejected", now, mesh())
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=1, hours=8))
    orders = orders_pods(s, now - timedelta(days=2, hours=4))
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "trafficPolicy": {"outlierDetection": {
        "consecutive5xxErrors": 1, "interval": "5s", "baseEjectionTime": "3m", "maxEjectionPercent": 100}}}, now - timedelta(days=9))
    blip = parse("2026-12-02T05:09:58")
    web_upstream_logs(s, web, orders, app_start=lambda t: orders_app_start(t))
    for i, p in enumerate(orders):
        s.app_log(p, app_lines(blip, [(0.2 + 0.4 * i, "ERROR", "list orders: pq: the database system is starting up (postgres failover)"),
                                       (3.5, "INFO", "database reconnected pool=10")]))
    ok(s, web, orders, now - timedelta(minutes=13), blip, every_ms=1500)
    for i, p in enumerate(orders):
        s.call(web, "orders", blip + timedelta(milliseconds=200 + 400 * i), p, code=500, details="via_upstream", tx=61)
    s.traffic(blip + timedelta(seconds=1.4), now - timedelta(seconds=1), 2500, lambda t, i: s.call(web, "orders", t, None, **UH))
    n = len([r for r in s.requests if r[2] == 503])
    ej = {"ejections_active": 3, "ejections_consecutive_5xx": 3, "ejections_detected_consecutive_5xx": 3, "ejections_enforced_consecutive_5xx": 3,
          "ejections_enforced_total": 3, "ejections_total": 3}
    hosts = [E.Host(p.ip, 8080, node=p.node, outlier=True, cx_total=4 + i, rq_success=900 + 37 * i, rq_error=1, cx_active=1) for i, p in enumerate(orders)]
    s.record_sidecar(web, [
        s.outbound("orders", hosts, outlier={"consecutive_5xx": 1, "interval": "5s", "base_ejection_time": "180s", "max_ejection_percent": 100},
                   stats={"outlier": ej, "cx_none_healthy": n, "rq_500": 3}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "Outlier detection ejected every host",
                         """
The orders DestinationRule sets outlierDetection consecutive5xxErrors: 1 and maxEjectionPercent: 100.
At 05:09:58 a postgres failover made each orders pod answer one 500. One error per host was enough:
web's Envoy ejected all three (failed_outlier_check) for baseEjectionTime 3m, and with Istio's panic
threshold at 0 it has nowhere to send traffic, so every call since is 503 UH no_healthy_upstream while
Kubernetes shows three ready, healthy pods.
""", "orders", ["outlier.all-ejected"], source=web))


@scenario
def circuit_breaker_overflow():
    now = parse("2026-12-02T19:03:10")
    s = Shop("circuit-breaker-overflow", now, mesh(hold=True))
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=2, hours=2), hold=True)
    orders = orders_pods(s, now - timedelta(days=2, hours=5), hold=True)
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    dr(s, "orders", {"host": "orders.shop.svc.cluster.local", "trafficPolicy": {"connectionPool": {
        "tcp": {"maxConnections": 1}, "http": {"http1MaxPendingRequests": 1}}}}, now - timedelta(days=2))
    web_upstream_logs(s, web, orders)

    def call(t, i):
        peak = t > now - timedelta(minutes=9)
        if peak and s.rng.random() < 0.35:
            s.call(web, "orders", t, None, code=503, flags="UO", details="upstream_reset_before_response_started{overflow}", inbound=False, tx=81, dur=0)
        else:
            s.call(web, "orders", t, orders[i % 3], dur=40 + s.rng.randrange(200) if peak else None)

    s.traffic(now - timedelta(minutes=14), now - timedelta(seconds=1), 1500, call)
    n = len([r for r in s.requests if r[2] == 503])
    s.record_sidecar(web, [
        s.outbound("orders", orders, cb={"max_connections": 1, "max_pending_requests": 1},
                   stats={"rq_pending_overflow": n * 37, "cx_overflow": n * 52, "cb_cx_open": 1, "cb_rq_pending_open": 1, "rq_pending_total": n * 80}),
        s.outbound("web", [web]),
    ])
    for p, sc in s.sidecars:
        for c in sc.clusters:
            if c.name.startswith("outbound|8080||orders"):
                for h in c.hosts:
                    h.cx_active = 0
                c.hosts[0].cx_active = 1
    s.write(ROOT, header(s, "Circuit breaker: one connection, one pending request",
                         """
Two days ago a DestinationRule for orders was merged with connectionPool tcp.maxConnections: 1 and
http.http1MaxPendingRequests: 1, copied from Istio's circuit-breaking task during a load test. At the
evening peak web's sidecar may hold one connection to all of orders and queue one request behind it;
everything beyond that is refused on the spot: 503 UO upstream_reset_before_response_started{overflow}
and upstream_rq_pending_overflow climbing, while every orders pod is healthy and idle.
""", "orders", ["circuit-breaker.overflow"], source=web))


@scenario
def missing_serviceentry():
    now = parse("2026-12-02T12:40:18")
    s = Shop("missing-serviceentry", now, mesh(registry_only=True))
    s.namespace()
    s.service("web")
    s.service("checkout")
    web = web_pod(s, now - timedelta(days=3))
    created = now - timedelta(minutes=26)
    co = [s.pod("shop", "checkout-7d5b9c8f6-k2j4h", "checkout", "worker-b", 33, created, rs="checkout-7d5b9c8f6",
                app_env=[{"name": "PAYMENTS_API", "value": "https://api.payments.example.com/v1"}]),
          s.pod("shop", "checkout-7d5b9c8f6-w9c3n", "checkout", "worker-c", 34, created + timedelta(seconds=11), rs="checkout-7d5b9c8f6",
                app_env=[{"name": "PAYMENTS_API", "value": "https://api.payments.example.com/v1"}])]
    s.slice("web", [web.name])
    s.slice("checkout", [p.name for p in co])
    istio_obj(s, "networking.istio.io/v1", "ServiceEntry", "shop", "payments-provider", now - timedelta(days=200), {
        "hosts": ["payments.example.com"], "location": "MESH_EXTERNAL", "ports": [{"name": "tls", "number": 443, "protocol": "TLS"}], "resolution": "DNS"})
    istio_obj(s, "networking.istio.io/v1", "ServiceEntry", "shop", "shipping-api", now - timedelta(days=200), {
        "hosts": ["api.shipping.example.net"], "location": "MESH_EXTERNAL", "ports": [{"name": "https", "number": 443, "protocol": "TLS"}], "resolution": "DNS"})
    for p in [web] + co:
        s.proxy_log(p)
    s.app_log(web, app_lines(web.app_started, [(0.2, "INFO", "web starting version=1.8.3"), (0.3, "INFO", "listening on :8080")]))
    applog = {p.name: app_lines(p.app_started, [(0.2, "INFO", "checkout starting version=4.0.7"), (0.3, "INFO", "payments API https://api.payments.example.com/v1"),
                                                 (0.35, "INFO", "listening on :8080")]) for p in co}
    src = co[0]

    def call(t, i):
        p = co[i % 2]
        eph = 40000 + s.rng.randrange(20000)
        # checkout's TLS connection to the provider matches no filter chain
        # of the 0.0.0.0_443 listener (its ServiceEntry names only the old
        # host) and falls through to BlackHoleCluster.
        s.w.log(p.ns, p.name, "istio-proxy", [
            access(t + timedelta(milliseconds=3), "-", "-", 0, "UH", "-", "-", "BlackHoleCluster", "203.0.113.10:443", "%s:%d" % (p.ip, eph), "-",
                   dur=0, ust="-", sni="api.payments.example.com", route="-")])
        s.call(web, "checkout", t, p, code=502, details="via_upstream", method="POST", path="/api/checkout", dur=8, tx=87)
        applog[p.name].append("%s ERROR payment authorization failed: Post \"https://api.payments.example.com/v1/charges\": read tcp %s:%d->203.0.113.10:443: read: connection reset by peer"
                              % (ms(t + timedelta(milliseconds=4)), p.ip, eph))

    s.traffic(now - timedelta(minutes=24), now - timedelta(seconds=1), 6000, call)
    for p in co:
        s.app_log(p, applog[p.name])
    s.record_sidecar(src, [
        s.outbound("checkout", co),
        s.outbound("web", [web]),
        E.Cluster("outbound|443||payments.example.com", [E.Host("198.51.100.7", 443, tls_istio=False)], kind="STRICT_DNS_BOOT", tls="none", config=False),
        E.Cluster("outbound|443||api.shipping.example.net", [E.Host("198.51.100.23", 443, tls_istio=False)], kind="STRICT_DNS_BOOT", tls="none", config=False),
    ], listeners=s.listeners(extra=[E.Listener("0.0.0.0_443", "0.0.0.0", 443)]))
    s.write(ROOT, header(s, "External host blocked: REGISTRY_ONLY without a ServiceEntry",
                         """
The mesh runs outboundTrafficPolicy REGISTRY_ONLY. checkout 4.0.7, deployed 26 minutes ago, calls the
payment provider's new API host api.payments.example.com; the ServiceEntry payments-provider still
lists only the old payments.example.com. checkout's sidecar sends the TLS connection to
BlackHoleCluster (a TCP entry flagged UH with SNI api.payments.example.com), the app gets "connection
reset by peer" and answers web 502. Run from a checkout pod: its sidecar is the one that blocks.
""", "checkout", ["serviceentry.missing"], source=src))


@scenario
def stale_xds():
    now = parse("2026-12-02T03:52:27")
    s = Shop("stale-xds", now, mesh(hold=True))
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=2, hours=9), hold=True, proxy_resources={"limits": {"cpu": "100m", "memory": "256Mi"}, "requests": {"cpu": "50m", "memory": "128Mi"}},
                  extra_annotations={"sidecar.istio.io/proxyCPULimit": "100m", "sidecar.istio.io/proxyCPU": "50m", "sidecar.istio.io/proxyMemoryLimit": "256Mi"})
    rolled = parse("2026-12-02T03:31:06")
    orders = orders_pods(s, rolled, names=("orders-75c8d9f4b-j6v2n", "orders-75c8d9f4b-r5t8x", "orders-75c8d9f4b-w3q9z"), hold=True,
                         image="registry.shop.example.com/orders:2.15.1")
    for p, host in zip(orders, [31, 44, 27]):
        p.ip = "%s.%d" % (p.ip.rsplit(".", 1)[0], host)
        p.obj["status"]["podIP"] = p.ip
        p.obj["status"]["podIPs"] = [{"ip": p.ip}]
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders], created=rolled + timedelta(seconds=40))
    old = [Ghost("10.244.1.17", "orders-6d8f7c9b5-2kq8v"), Ghost("10.244.2.18", "orders-6d8f7c9b5-7xw4n"), Ghost("10.244.0.21", "orders-6d8f7c9b5-m9p2d")]
    web_upstream_logs(s, web, orders)
    ok(s, web, old, now - timedelta(minutes=24), rolled + timedelta(seconds=30), every_ms=3000)

    def call(t, i):
        s.call(web, "orders", t, old[i % 3], code=503, flags="UF,URX",
               details="upstream_reset_before_response_started{connection_failure,delayed_connect_error:_113}", tfr="delayed_connect_error:_113", dur=3061, inbound=False)

    s.traffic(rolled + timedelta(seconds=52), now - timedelta(seconds=1), 4500, call)
    n = len([r for r in s.requests if r[2] == 503])
    hosts = [E.Host(g.ip, 8080, node=n_, cx_total=40 + 3 * n, cx_connect_fail=n, rq_success=2100 + 40 * k, rq_error=n // 3)
             for k, (g, n_) in enumerate(zip(old, ["worker-b", "worker-c", "worker-a"]))]
    s.record_sidecar(web, [
        s.outbound("orders", hosts, stats={"cx_connect_fail": 3 * n, "rq_retry": 2 * n, "rq_retry_limit_exceeded": n}),
        s.outbound("web", [web]),
    ])
    s.syncz[web.proxy_id] = {
        "cluster_sent": s.nonce(parse("2026-12-02T03:51:58")), "cluster_acked": s.nonce(parse("2026-12-02T03:29:40")),
        "endpoint_sent": s.nonce(parse("2026-12-02T03:51:58")), "endpoint_acked": s.nonce(parse("2026-12-02T03:29:40"))}
    s.write(ROOT, header(s, "Stale proxy: web's Envoy still has the old orders endpoints",
                         """
orders was redeployed at 03:31 and has three new, ready pods. web's sidecar runs with a 100m CPU limit
(sidecar.istio.io/proxyCPULimit) and has not acknowledged a CDS or EDS push from istiod since 03:29:
istiod lists it as STALE for clusters and endpoints. Its Envoy still load-balances over the three old
pod addresses, which no longer exist: 503 UF,URX with delayed_connect_error:_113 (no route to host).
The EndpointSlice and Envoy's host list disagree; restarting the pod before saving its state would
destroy the evidence.
""", "orders", ["xds.stale"], source=web))


@scenario
def idle_timeout_uc():
    now = parse("2026-12-02T15:27:48")
    s = Shop("idle-timeout-uc", now, mesh())
    s.namespace()
    s.service("web")
    s.service("orders")
    web = web_pod(s, now - timedelta(days=4))
    orders = orders_pods(s, now - timedelta(days=1, hours=6), image="registry.shop.example.com/orders:3.1.0-node")
    s.slice("web", [web.name])
    s.slice("orders", [p.name for p in orders])
    web_upstream_logs(s, web, orders, app_start=lambda t: app_lines(t, [
        (0.3, "info", "orders 3.1.0 (node v20.18.0) starting"),
        (0.5, "info", "postgres pool ready size=10"),
        (0.52, "info", "http server listening on :8080 keepAliveTimeout=5000ms headersTimeout=60000ms"),
    ]))

    def call(t, i):
        up = orders[i % 3]
        r = s.rng.random()
        if r < 0.025:
            # The orders sidecar reused a pooled connection the Node.js
            # server had just closed after 5 s idle: UC at the inbound side;
            # web's retries hit the same race twice.
            for k in range(3):
                s.call(None, "orders", t + timedelta(milliseconds=3 * k), orders[(i + k) % 3], code=503, remote=web.ip, inbound_flags="UC",
                       inbound_details="upstream_reset_before_response_started{connection_termination}", dur=2)
            s.call(web, "orders", t, orders[(i + 2) % 3], code=503, flags="URX", details="via_upstream", inbound=False, dur=9, tx=95)
        elif r < 0.09:
            s.call(None, "orders", t, up, code=503, remote=web.ip, inbound_flags="UC",
                   inbound_details="upstream_reset_before_response_started{connection_termination}", dur=1)
            s.call(web, "orders", t + timedelta(milliseconds=30), orders[(i + 1) % 3], dur=8)
        else:
            s.call(web, "orders", t, up)

    s.traffic(now - timedelta(minutes=15), now - timedelta(seconds=1), 6500, call)
    n = len([r for r in s.requests if r[2] == 503])
    s.record_sidecar(web, [
        s.outbound("orders", orders, stats={"rq_503": 3 * n + 12, "rq_retry": 2 * n + 12, "rq_retry_success": 12, "retry_503": 2 * n + 12, "rq_retry_limit_exceeded": n}),
        s.outbound("web", [web]),
    ])
    s.write(ROOT, header(s, "503 UC at steady state: app keep-alive shorter than Envoy's idle timeout",
                         """
orders was rewritten in Node.js 20, whose HTTP server closes idle keep-alive connections after 5 s
(server.keepAliveTimeout). The orders sidecar keeps upstream connections to the app for up to an hour
(Envoy's default idle_timeout) and now and then sends a request on a connection Node.js is closing at
that instant: 503 UC upstream_reset_before_response_started{connection_termination} in the orders
sidecars' inbound log, a few a minute, usually hidden by web's retries and sometimes not. There is no
rollout, no pod is terminating, and nothing is overloaded.
""", "orders", ["upstream.idle-reset"], source=web))

def main():
    names = sys.argv[1:]
    for fn in SCENARIOS:
        if names and fn.__name__.replace("_", "-") not in names:
            continue
        fn()
        print("wrote", fn.__name__.replace("_", "-"))


if __name__ == "__main__":
    main()
