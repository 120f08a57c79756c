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
from common import SVC_IPS, Shop, mesh  # noqa: E402
from world import DOMAIN, Str, digest, parse, ts, uid, us  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "assets", "scenarios")
SCENARIOS = []


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


def header(s, title, description, target, expect, source=None, port=8080, ns="shop"):
    t = {"namespace": ns, "service": target, "port": port}
    if source is not None:
        t["source"] = {"namespace": source.ns, "name": source.name}
    return {
        "name": s.w.name,
        "title": title,
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


def main():
    names = sys.argv[1:]
    for fn in SCENARIOS:
        if names and fn.__name__.replace("_", "-") not in names:
            continue
        fn()
        print("wrote", fn.__name__.replace("_", "-"))


if __name__ == "__main__":
    main()
