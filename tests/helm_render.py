"""Render or lint a chart with the real Helm engine (helm-sdkpy, a compiled Helm v4), no cluster needed.

Run as a script: JSON request on stdin, JSON answer on stdout. It must start with HELM_DRIVER=memory in
its environment (Go reads the environment once, when the library loads), so releases are kept in
memory instead of as Secrets. `install` serves a minimal Kubernetes API on 127.0.0.1 (discovery:
/version, /api, /apis and the resource lists of the groups in API_RESOURCES; GET of an object 404s;
POST echoes the object back with 201) and runs Install without waiting.

Input:  a JSON list of requests {"action": "install" | "lint", "chart": path, "values": {...},
        "release": name, "namespace": ns, "kube_version": "1.30", "api_versions": [group/version, ...]}
        (one process for many renders; api_versions: groups of OPTIONAL_RESOURCES to serve too, e.g. a
        CRD's or OpenShift's).
Output: a JSON list of answers, in order: {"manifest": str, "hooks": [str, ...], "notes": str,
        "posted": [object, ...]} (install; hooks: the manifests of hooks such as `helm test` pods,
        which Install renders but does not run), {"lint": {...}} (lint) or {"error": str} (Helm
        refused: schema, `fail`, template).
"""

import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

# group/version -> [(plural, kind, namespaced)] the chart may create
API_RESOURCES = {
    "v1": [
        ("configmaps", "ConfigMap", True),
        ("serviceaccounts", "ServiceAccount", True),
        ("persistentvolumeclaims", "PersistentVolumeClaim", True),
        ("services", "Service", True),
        ("secrets", "Secret", True),
        ("pods", "Pod", True),
        ("namespaces", "Namespace", False),
    ],
    "apps/v1": [("deployments", "Deployment", True)],
    "batch/v1": [("jobs", "Job", True)],
    "networking.k8s.io/v1": [("networkpolicies", "NetworkPolicy", True)],
    "rbac.authorization.k8s.io/v1": [("roles", "Role", True), ("rolebindings", "RoleBinding", True)],
}
# served only when a request names them: a CRD's (prometheus-operator) or a distribution's (OpenShift)
OPTIONAL_RESOURCES = {
    "monitoring.coreos.com/v1": [("servicemonitors", "ServiceMonitor", True)],
    "security.openshift.io/v1": [("securitycontextconstraints", "SecurityContextConstraints", False)],
}


def _resource_list(group_version: str, served: dict) -> dict:
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    resources = [
        {"name": p, "singularName": k.lower(), "namespaced": ns, "kind": k, "verbs": verbs} for p, k, ns in served[group_version]
    ]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _discovery(kube_version: str, api_versions: list[str]) -> dict[str, dict]:
    major, minor = kube_version.split(".")[:2]
    served = API_RESOURCES | {gv: OPTIONAL_RESOURCES[gv] for gv in api_versions}
    groups = sorted({gv.split("/")[0] for gv in served if "/" in gv})
    docs = {
        "/version": {"major": major, "minor": minor, "gitVersion": f"v{major}.{minor}.0", "platform": "linux/amd64"},
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
        "/apis": {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": g,
                    "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"},
                }
                for g in groups
            ],
        },
    }
    for gv in served:
        docs["/api/v1" if gv == "v1" else f"/apis/{gv}"] = _resource_list(gv, served)
    return docs


class _API(BaseHTTPRequestHandler):
    server: "FakeAPIServer"

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        doc = self.server.docs.get(self.path.split("?", 1)[0])
        if doc is None:
            self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        else:
            self._send(200, doc)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.posted.append(body)
        self._send(201, body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class FakeAPIServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, kube_version: str, api_versions: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), _API)
        self.docs, self.posted = _discovery(kube_version, api_versions), []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def kubeconfig(self, namespace: str) -> str:
        server = f"http://127.0.0.1:{self.server_address[1]}"
        return yaml.safe_dump(  # helm-sdkpy tells a file path from YAML content, not from JSON
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server}}],
                "users": [{"name": "fake", "user": {"token": "unused"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": namespace}}],
                "current-context": "fake",
            }
        )


def handle(req: dict) -> dict:
    import helm_sdkpy

    namespace = req.get("namespace", "default")
    api = FakeAPIServer(req.get("kube_version", "1.30"), req.get("api_versions", []))
    try:
        cfg = helm_sdkpy.Configuration(namespace=namespace, kubeconfig=api.kubeconfig(namespace))
        if req["action"] == "lint":
            return {"lint": asyncio.run(helm_sdkpy.Lint(cfg).run(req["chart"]))}
        install = helm_sdkpy.Install(cfg)
        rel = asyncio.run(
            install.run(req.get("release", "senpai"), req["chart"], values=req.get("values") or {}, wait=False, timeout=60)
        )
        hooks = [h.get("manifest", "") for h in rel.get("hooks") or []]
        notes = rel.get("info", {}).get("notes", "")
        return {"manifest": rel.get("manifest", ""), "hooks": hooks, "notes": notes, "posted": api.posted}
    except helm_sdkpy.HelmError as e:
        return {"error": str(e)}
    finally:
        api.shutdown()
        api.server_close()


def main() -> None:
    if os.environ.get("HELM_DRIVER") != "memory":
        sys.exit("run with HELM_DRIVER=memory in the environment")
    json.dump([handle(req) for req in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
